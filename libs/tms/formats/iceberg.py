"""The Iceberg table-format plugin: pyiceberg for cheap inspection, Spark procedures to act.

Inspection reads the current snapshot's summary first (file counts and sizes with no manifest
I/O); manifests are read for file sizes only when the summary cannot rule compaction out.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from datetime import datetime
from importlib import resources
from typing import Any

from tms.catalogs import CatalogAccess, PyicebergCatalogs
from tms.domain import Decision, JobSpec, Operation, Table, TableSpec
from tms.formats.base import DiscoveredTable, TableFormatPlugin, TableNotInCatalog
from tms.formats.iceberg_discovery import list_tables
from tms.formats.iceberg_policy import RULES, K
from tms.policy import validate_policy

POLICY_KEYS = K
DEFAULT_MIN_SMALL_FILES = K["compaction.min-small-files"].as_int({})
_CATALOG_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_IDENT_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$")


def _job_app() -> str:
    return str(resources.files("tms.jobs").joinpath("iceberg_maintenance.py"))


class IcebergFormat(TableFormatPlugin):
    name = "iceberg"
    actions = tuple(RULES)

    def __init__(self) -> None:
        self._catalogs: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}
        self._lock = threading.Lock()
        self._pyiceberg = PyicebergCatalogs()

    # registration ---------------------------------------------------------------------------
    def validate(self, spec: TableSpec) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        if not _CATALOG_RE.fullmatch(spec.catalog):
            problems.append(("table.catalog", "required for iceberg: letters, digits, _ (max 64)"))
        parts = spec.namespace.split(".") if spec.namespace else []
        if not parts or not all(_IDENT_RE.fullmatch(p) for p in parts):
            problems.append(("table.namespace",
                             "required for iceberg: dot-separated names of letters, digits, _ -"))
        if not _IDENT_RE.fullmatch(spec.table_name):
            problems.append(("table.table_name",
                             "required for iceberg: letters, digits, _ - (max 128)"))
        if "type" not in spec.catalog_properties and "uri" not in spec.catalog_properties:
            problems.append(("table.catalog_properties",
                             "iceberg needs the catalog's 'type' or 'uri'"))
        problems += validate_policy(POLICY_KEYS, spec.policy)
        return problems

    def locate(self, table: Table, catalog: CatalogAccess) -> str:
        """The ``location`` of the table's current metadata, as its catalog holds it."""
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        ident = (*table.namespace.split("."), table.table_name) if table.namespace \
            else (table.table_name,)
        try:
            tbl = self._pyiceberg.get(catalog).load_table(ident)
        except (NoSuchTableError, NoSuchNamespaceError):
            raise TableNotInCatalog(f"catalog {catalog.catalog_id!r} holds no table "
                                    f"{'.'.join(ident)[:300]!r}") from None
        return str(tbl.metadata.location)

    def discover(self, catalog: CatalogAccess) -> list[DiscoveredTable]:
        return list_tables(self._pyiceberg.get(catalog))

    # inspection -----------------------------------------------------------------------------
    def _catalog(self, table: Table) -> Any:
        from pyiceberg.catalog import load_catalog

        key = (table.catalog, tuple(sorted(table.catalog_properties.items())))
        with self._lock:
            cat = self._catalogs.get(key)
            if cat is None:
                cat = load_catalog(table.catalog, **table.catalog_properties)
                self._catalogs[key] = cat
            return cat

    def inspect(self, table: Table) -> dict[str, Any]:
        tbl = self._catalog(table).load_table((*table.namespace.split("."), table.table_name))
        snap = tbl.current_snapshot()
        small_limit = K["compaction.small-file-bytes"].as_int(table.policy)
        min_small = K["compaction.min-small-files"].as_int(table.policy)
        times = [s.timestamp_ms for s in tbl.metadata.snapshots]
        metrics: dict[str, Any] = {"snapshot_id": None, "data_files": 0, "delete_files": 0,
                                   "total_bytes": 0, "records": 0, "small_files": 0,
                                   "small_file_bytes": small_limit, "manifests": 0,
                                   "snapshots": len(times), "_snapshot_times_ms": times,
                                   "oldest_snapshot_ms": min(times, default=None)}
        if snap is None:
            return metrics
        manifests = snap.manifests(tbl.io)  # the manifest list: one small file
        metrics["manifests"] = len(manifests)
        summary = snap.summary.additional_properties if snap.summary else {}
        metrics.update(
            snapshot_id=str(snap.snapshot_id),
            data_files=int(summary.get("total-data-files", 0)),
            delete_files=int(summary.get("total-delete-files", 0)),
            total_bytes=int(summary.get("total-files-size", 0)),
            records=int(summary.get("total-records", 0)),
        )
        metrics["last_commit_ms"] = snap.timestamp_ms
        quiet_s = K["compaction.quiet-s"].as_int(table.policy)
        quiet = bool(quiet_s) and time.time() - snap.timestamp_ms / 1000 >= quiet_s
        if metrics["data_files"] < min_small and not (quiet and metrics["data_files"] >= 2):
            # fewer files than any threshold: no need to know which are small
            metrics["small_files"] = None
            return metrics
        small = 0
        for manifest in manifests:
            for entry in manifest.fetch_manifest_entry(tbl.io, discard_deleted=True):
                df = entry.data_file
                if df.content == 0 and df.file_size_in_bytes < small_limit:
                    small += 1
        metrics["small_files"] = small
        return metrics

    # policy ---------------------------------------------------------------------------------
    def evaluate(self, table: Table, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, Operation | None], now: datetime
                 ) -> list[Decision]:
        return [rule(table.policy, metrics, last_runs.get(action), now)
                for action, rule in RULES.items()]

    # execution ------------------------------------------------------------------------------
    def build_job(self, table: Table, operation: Operation) -> JobSpec:
        return JobSpec(kind="pyspark", app=_job_app(), spec={
            "catalog_name": table.catalog,
            "catalog_properties": dict(table.catalog_properties),
            "table": f"{table.namespace}.{table.table_name}",
            "action": operation.action,
            "options": {k: str(v) for k, v in operation.work.params.items()},
        })
