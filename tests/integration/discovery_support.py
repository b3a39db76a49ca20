"""A catalog to discover: a real pyiceberg SQL catalog in the test's PostgreSQL (or a directory
of real Hudi tables), registered as a TMS catalog, and a Discovery whose clock the test moves
one listing interval at a time (no sleeps)."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from tms.domain import Catalog, CatalogDiscovery, CatalogSpec, CatalogType
from tms.formats.registry import load_formats
from tms.local.iceberg_data import SCHEMA, sql_catalog_properties
from tms.scheduler.discovery import Discovery, DiscoveryReport
from tms.storage.postgres import PostgresStore

INTERVAL_S = 10  # the shortest listing interval a catalog may have
REPO_ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
HUDI_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "hudi"
HUDI_TABLE = "sample_table__cow__v8_nonpartitioned.zip"


class Clock:
    """The discovery clock: starts just after now, moved by the test."""

    def __init__(self) -> None:
        self.at = datetime.now(UTC) + timedelta(seconds=1)

    def __call__(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


class Lake:
    """One TMS catalog with discovery on, and what lies behind it."""

    def __init__(self, store: PostgresStore, spec: CatalogSpec,
                 environ: dict[str, str] | None = None) -> None:
        self.store = store
        self.catalog_id = spec.catalog_id
        assert store.catalog_create(spec) is not None
        self.clock = Clock()
        self.discovery = Discovery(store, load_formats(), now=self.clock,
                                   environ=environ or {})

    def use_environ(self, environ: dict[str, str]) -> None:
        """Discovery as it would run in a process with this environment (secrets)."""
        self.discovery = Discovery(self.store, load_formats(), now=self.clock, environ=environ)

    def listing(self) -> DiscoveryReport:
        """One listing of this catalog, one interval after the last."""
        self.clock.advance(INTERVAL_S + 1)
        reports = [r for r in self.discovery.run_once() if r.catalog_id == self.catalog_id]
        assert len(reports) == 1, reports
        assert self.discovery.passed.is_set()
        return reports[0]

    def catalog(self) -> Catalog:
        found = self.store.catalog_get(self.catalog_id)
        assert found is not None
        return found

    def rows(self) -> dict[str, dict[str, Any]]:
        """The catalog's registered tables by table id (owner, queue, location, state ...)."""
        out = {}
        for t in self.store.table_list_by_catalog(self.catalog_id):
            out[t.table.table_id] = {"namespace": t.table.namespace, "name": t.table.table_name,
                                     "state": t.table.state.value, "owner": t.table.owner,
                                     "queue": t.table.queue, "priority": t.table.priority,
                                     "policy": t.table.policy, "location": t.location,
                                     "format": t.table.format, "base_path": t.table.base_path}
        return out


def discovery_settings(**kw: Any) -> CatalogDiscovery:
    return replace(CatalogDiscovery(enabled=True, interval_s=INTERVAL_S), **kw)


class IcebergLake(Lake):
    """A pyiceberg SQL catalog in the test database, its warehouse the allowed location."""

    def __init__(self, store: PostgresStore, pg_dsn: str, tmp_path: Path,
                 catalog_id: str = "lake", **discovery: Any) -> None:
        self.warehouse = Path(os.path.realpath(tmp_path)) / "warehouse"
        self.warehouse.mkdir()
        props = sql_catalog_properties(pg_dsn, self.warehouse.as_uri())
        self.iceberg = SqlCatalog(catalog_id, **props)
        super().__init__(store, CatalogSpec(
            catalog_id, CatalogType.SQL, {"uri": props["uri"], "warehouse": props["warehouse"]},
            allowed_locations=(str(self.warehouse),), discovery=discovery_settings(**discovery)))

    def create(self, identifier: tuple[str, ...], location: str | None = None) -> str:
        """Create a table (and its namespace); returns its metadata location."""
        self.iceberg.create_namespace_if_not_exists(identifier[:-1])
        kw: dict[str, Any] = {"location": location} if location else {}
        return str(self.iceberg.create_table(identifier, schema=SCHEMA, **kw).metadata.location)


def unzip_hudi(dest: Path, name: str = HUDI_TABLE) -> Path:
    """One real Hudi table (fixture) unzipped to ``dest``, which becomes its base path."""
    if not HUDI_FIXTURES.is_dir():
        pytest.skip(f"Hudi fixtures not found at {HUDI_FIXTURES}")
    tmp = dest.parent / f".unzip-{dest.name}"
    with zipfile.ZipFile(HUDI_FIXTURES / name) as zf:
        members = [m for m in zf.namelist() if not m.startswith("__MACOSX/")]
        zf.extractall(tmp, members)
    (top,) = {m.split("/")[0] for m in members}
    dest.parent.mkdir(parents=True, exist_ok=True)
    (tmp / top).rename(dest)
    tmp.rmdir()
    return dest


class HudiLake(Lake):
    """A hadoop catalog over a directory of Hudi tables."""

    def __init__(self, store: PostgresStore, tmp_path: Path, catalog_id: str = "files",
                 **discovery: Any) -> None:
        self.root = Path(os.path.realpath(tmp_path)) / "lake"
        self.root.mkdir()
        super().__init__(store, CatalogSpec(
            catalog_id, CatalogType.HADOOP, allowed_locations=(str(self.root),),
            discovery=discovery_settings(**discovery)))


LakeFactory = Callable[..., Lake]
