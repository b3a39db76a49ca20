"""A hostile table owner makes the current snapshot of its table reference another tenant's
file, then asks for a rewrite: clustering, ``rewrite_position_deletes`` or ``rewrite_manifests``
would read that file (or the manifest entries listing it) and copy it into the owner's table.

The owner plants the file with pyiceberg's ``add_files``: at its real path outside the
catalog's allowed locations, through a symlinked directory inside the table location that
leads there, or (``neighbour``) a live data file of another tenant's table in the same
catalog's warehouse, inside the allowed locations but not inside the owner's table. Each
rewrite (compaction included) must be refused before it reads anything (the operation
FAILED at once, not retried, naming the file), leave the table's snapshot and every file of
both tenants as they were, and still rewrite a clean table. A compaction whose Spark path
would apply a delete file symlinked outside, and a manifest rewrite of a manifest symlinked
outside, are refused the same way.

Real processes: the tables live in a pyiceberg SQL catalog on the test PostgreSQL, the jobs run
in one warm Spark driver behind a real executor on the TMS schema; position deletes are written
by Spark SQL (pyiceberg writes none).
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.helpers import SPARK_SQL_SCRIPT
from tests.integration.iceberg_files import local_path
from tests.security.job_harness import CATALOG_NAME, Lake, Runner, spark_settings
from tms.domain import OperationState
from tms.engines.warm import WarmSparkEngine
from tms.jobs.iceberg_maintenance import ICEBERG_EXTENSIONS, catalog_conf
from tms.local import iceberg_data
from tms.local.postgres import LocalPostgres
from tms.storage.postgres import PostgresStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

SPARK_SQL_TIMEOUT_S = 300
COMMITS = 3
SECRET_FIRST_ID, SECRET_ROWS = 900_000, 5  # the other tenant's rows: ids no table has
# each action with options that make it rewrite a clean table of three small commits
ACTIONS = {
    "clustering": {"sort-order": "id DESC", "rewrite-all": "true"},
    "rewrite_position_deletes": {"rewrite-all": "true"},
    "rewrite_manifests": {"use-caching": "false"},
    "compaction": {"rewrite-all": "true"},
}
WITH_DELETES = ("rewrite_position_deletes",)
CASES = ("clean", "foreign", "symlink", "neighbour")


@dataclass
class World:
    lake: Lake
    runner: Runner

    def location(self, name: str) -> Path:
        return local_path(self.table(name).location())

    def table(self, name: str) -> Any:
        return self.lake.catalog.load_table(f"{self.lake.namespace}.{name}")


def _spark_sql(lake: Lake, tmp: Path, statements: list[str]) -> None:
    script = tmp / "run_sql.py"
    script.write_text(SPARK_SQL_SCRIPT)
    settings = spark_settings()
    settings = replace(settings, conf={"spark.sql.extensions": ICEBERG_EXTENSIONS,
                                       **catalog_conf(CATALOG_NAME, lake.props),
                                       **settings.conf})
    proc = subprocess.run(settings.submit_argv(str(script), statements),
                          env=settings.submit_env(os.environ), capture_output=True, text=True,
                          timeout=SPARK_SQL_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-4000:]


def _with_deletes(lake: Lake, names: list[str]) -> list[str]:
    """Spark SQL giving each table position delete files (merge-on-read deletes)."""
    out = []
    for name in names:
        ref = f"{CATALOG_NAME}.{lake.namespace}.{name}"
        out += [f"ALTER TABLE {ref} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read')",
                f"DELETE FROM {ref} WHERE id % 7 = 0"]
    return out


@pytest.fixture(scope="module")
def world(pg_server: LocalPostgres, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[World]:
    """Every test's table made first (one Spark SQL submit writes all the deletes), then one
    warm driver and one executor serve the module's operations."""
    from tms.storage.migrate import migrate

    name = f"rwguard_{uuid.uuid4().hex[:8]}"
    pg_server.create_database(name)
    dsn = pg_server.dsn(name)
    migrate(dsn)
    root = tmp_path_factory.mktemp("rewrite_reads")
    lake = Lake(dsn, root / "lake")
    deleted = []
    for action in ACTIONS:
        for case in CASES:
            lake.table(f"{action}_{case}", commits=COMMITS)
            if action in WITH_DELETES:
                deleted.append(f"{action}_{case}")
    lake.table("compaction_deletes", commits=COMMITS)
    lake.table("manifest_link", commits=COMMITS)
    _spark_sql(lake, root, _with_deletes(lake, [*deleted, "compaction_deletes"]))
    store = PostgresStore(dsn)
    try:
        with WarmSparkEngine(spark_settings(), None, root / "warm") as warm:
            yield World(lake, Runner(store, root / "work", warm))
    finally:
        store.close()


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (symlinks not followed) and its bytes, links as their target."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p)] = os.readlink(p).encode()
        elif p.is_file():
            out[str(p)] = p.read_bytes()
    return out


def _other_tenant(world: World, name: str) -> Path:
    """Another tenant's live data file, outside the catalog's allowed locations."""
    secret = world.lake.outside / f"tenant-b-{name}" / "secret.parquet"
    secret.parent.mkdir()
    pq.write_table(iceberg_data.batch(SECRET_FIRST_ID, SECRET_ROWS), secret)
    return secret


def _neighbour(world: World, name: str) -> Path:
    """A live data file of another tenant's table in the same warehouse (inside the
    catalog's allowed locations): the table is registered apart, its location disjoint."""
    other = iceberg_data.create_table(world.lake.catalog, world.lake.namespace,
                                      f"tenant_b_{name}")
    other.append(iceberg_data.batch(SECRET_FIRST_ID, SECRET_ROWS))
    (path,) = other.inspect.files()["file_path"].to_pylist()
    secret = local_path(path)
    assert secret.is_relative_to(world.lake.allowed), secret
    return secret


def _plant(world: World, name: str, case: str) -> Path:
    """The owner's table made to reference the other tenant's file; returns the path added."""
    if case == "neighbour":
        added = _neighbour(world, name)
        world.table(name).add_files([str(added)])
        return added
    secret = _other_tenant(world, name)
    if case == "foreign":
        added = secret
    else:  # a directory inside the table location that leads to the other tenant's
        spill = world.location(name) / "data" / "spill"
        spill.symlink_to(secret.parent)
        added = spill / secret.name
    world.table(name).add_files([str(added)])
    return added


def _rows(world: World, name: str) -> list[int]:
    return sorted(world.table(name).scan().to_arrow().column("id").to_pylist())


def _run(world: World, name: str, action: str, options: dict[str, str]) -> Any:
    job = world.lake.job(name, action, options, allowed=[str(world.lake.allowed)])
    return world.runner.run(f"{name}_{uuid.uuid4().hex[:6]}", job, action)


def _assert_refused(op: Any, *words: str) -> None:
    """FAILED at once: one attempt of three, the error says why and that no retry helps."""
    error = op.outcome.error or ""
    assert op.state is OperationState.FAILED, (op.state, error)
    assert op.lease.attempts_used == 1, error
    assert error.startswith("not retryable: location refused"), error
    for word in words:
        assert word in error, error


@pytest.mark.parametrize("case", ["foreign", "symlink", "neighbour"])
@pytest.mark.parametrize("action", list(ACTIONS))
def test_a_rewrite_never_reads_another_tenants_file(world: World, action: str, case: str
                                                    ) -> None:
    name = f"{action}_{case}"
    added = _plant(world, name, case)
    snapshot = world.table(name).current_snapshot()
    rows = _rows(world, name)
    assert set(range(SECRET_FIRST_ID, SECRET_FIRST_ID + SECRET_ROWS)) <= set(rows)
    if action in WITH_DELETES:  # there is something for the rewrite to do
        assert any(c == 1 for c in world.table(name).inspect.files()["content"].to_pylist())
    before = {"table": _files(world.location(name)), "outside": _files(world.lake.outside),
              "other": _files(added.parent)}

    op = _run(world, name, action, ACTIONS[action])

    _assert_refused(op, f"{action} refused, nothing written", str(added))
    assert world.table(name).current_snapshot() == snapshot
    assert _rows(world, name) == rows
    # nothing copied, written or removed on either side
    assert {"table": _files(world.location(name)), "outside": _files(world.lake.outside),
            "other": _files(added.parent)} == before


@pytest.mark.parametrize("action", list(ACTIONS))
def test_a_clean_table_still_rewrites(world: World, action: str) -> None:
    name = f"{action}_clean"
    snapshot = world.table(name).current_snapshot()
    rows = _rows(world, name)
    assert snapshot is not None and rows

    op = _run(world, name, action, ACTIONS[action])

    assert op.state is OperationState.SUCCEEDED, op.outcome.error
    after = world.table(name).current_snapshot()
    assert after is not None and after.snapshot_id != snapshot.snapshot_id  # it rewrote
    assert after.summary is not None and after.summary.operation.value == "replace"
    assert _rows(world, name) == rows
    # the warm driver armed the deletion fence on this table alone, and it refused nothing
    fence = (op.outcome.result or {}).get("fence")
    assert fence is not None and fence["state"] == "armed" and fence["refused"] == 0, fence
    assert fence["roots"] == [world.location(name).resolve().as_uri()], fence


def test_compaction_on_sparks_path_never_applies_a_delete_file_from_outside(world: World
                                                                            ) -> None:
    """The arrow path refuses a table with deletes; Spark's would apply them. A delete file
    moved to another tenant's directory and symlinked back is outside."""
    name = "compaction_deletes"
    files = world.table(name).inspect.files().to_pydict()
    deletes = [local_path(p) for p, c in zip(files["file_path"], files["content"], strict=True)
               if c == 1]
    assert deletes
    elsewhere = world.lake.outside / "tenant-b-deletes"
    elsewhere.mkdir()
    for path in deletes:
        path.rename(elsewhere / path.name)
        path.symlink_to(elsewhere / path.name)
    snapshot = world.table(name).current_snapshot()
    rows = _rows(world, name)
    before = {"table": _files(world.location(name)), "outside": _files(world.lake.outside)}

    op = _run(world, name, "compaction", {"min-input-files": "2"})

    _assert_refused(op, "compaction refused, nothing written")
    assert any(str(path) in (op.outcome.error or "") for path in deletes), op.outcome.error
    assert world.table(name).current_snapshot() == snapshot
    assert _rows(world, name) == rows
    assert {"table": _files(world.location(name)),
            "outside": _files(world.lake.outside)} == before


def test_a_manifest_symlinked_outside_is_not_rewritten(world: World) -> None:
    """``rewrite_manifests`` copies every entry of the manifests it reads (paths and column
    bounds): one of them replaced by a link to another tenant's manifest is outside."""
    name = "manifest_link"
    manifests = world.table(name).inspect.manifests().to_pydict()["path"]
    victim = local_path(manifests[0])
    elsewhere = world.lake.outside / "tenant-b-metadata"
    elsewhere.mkdir()
    victim.rename(elsewhere / victim.name)
    victim.symlink_to(elsewhere / victim.name)
    snapshot = world.table(name).current_snapshot()
    before = {"table": _files(world.location(name)), "outside": _files(world.lake.outside)}

    op = _run(world, name, "rewrite_manifests", ACTIONS["rewrite_manifests"])

    _assert_refused(op, "rewrite_manifests refused, nothing written", victim.name)
    assert world.table(name).current_snapshot() == snapshot
    assert {"table": _files(world.location(name)),
            "outside": _files(world.lake.outside)} == before
