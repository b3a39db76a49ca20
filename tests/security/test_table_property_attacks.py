"""A hostile table owner sets a property Iceberg reads while maintenance runs, with pyiceberg:
a commit retry count past Java's int (or one Java takes and would retry for hours), a negative
number of snapshots to keep, a garbage boolean Java would read as ``false`` without a word, a
manifest target in Arabic-Indic digits, a class name for Iceberg to instantiate as the location
provider, a metrics mode Java would ignore; ``gc.enabled=false``, which Iceberg itself refuses to
expire under (TMS used to retry that). Each operation must end FAILED at once (one attempt of
three, not retried), the error naming the property and what it may be, and leave the table's
snapshots, data and metadata files, and any orphan file, exactly as they were; the same action
on a clean table still does its work.

Real processes: the tables live in a pyiceberg SQL catalog on the test PostgreSQL, the jobs run
in one warm Spark driver behind a real executor on the TMS schema (``job_harness``).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.integration.iceberg_files import local_path
from tests.security.job_harness import Lake, Runner, spark_settings
from tms.domain import OperationState
from tms.engines.warm import WarmSparkEngine
from tms.jobs import maintenance_props
from tms.local.postgres import LocalPostgres
from tms.storage.postgres import PostgresStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

COMMITS = 4
ORPHAN_AGE_S = 3 * 24 * 3600  # older than remove_orphan_files' own 24 h floor
NOW = datetime.now(UTC)
EXPIRE_ALL = {"older-than": (NOW + timedelta(minutes=5)).isoformat(), "retain-last": "1"}
ORPHANS = {"older-than": (NOW - timedelta(days=2)).isoformat()}
# name: (action, the owner's properties, options, what the error must say)
ATTACKS: dict[str, tuple[str, dict[str, str], dict[str, str] | None, str]] = {
    "retries_past_int": ("compaction", {"commit.retry.num-retries": "99999999999"}, None,
                         f"from 0 to {maintenance_props.MAX_COMMIT_RETRIES}"),
    "retries_for_hours": ("rewrite_manifests", {"commit.retry.num-retries": "2147483647",
                                                "commit.retry.min-wait-ms": "2147483647"},
                          {"use-caching": "false"}, "commit.retry."),
    "keep_minus_one": ("expire_snapshots", {"history.expire.min-snapshots-to-keep": "-1"},
                       EXPIRE_ALL, "from 1 to 2147483647"),
    "gc_yes": ("remove_orphan_files", {"gc.enabled": "yes"}, ORPHANS, "true, false"),
    "gc_off": ("expire_snapshots", {"gc.enabled": "false"}, EXPIRE_ALL, "gc.enabled=false"),
    # a class Iceberg would instantiate (any (String, Map) constructor) to place new files
    "location_class": ("compaction", {"write.location-provider.impl":
                                      "org.apache.iceberg.hadoop.HadoopTableOperations"},
                       None, "it unset"),
    "metrics_unicode": ("rewrite_position_deletes",
                        {"write.metadata.metrics.default": "truncate(١٦)"},
                        {"rewrite-all": "true"}, "truncate(N)"),
    "manifest_target_arabic": ("clustering", {"commit.manifest.target-size-bytes": "٣٠٠٠"},
                               {"sort-order": "id DESC", "rewrite-all": "true"},
                               "(ASCII digits"),
    # a table that writes ORC: its writer's batch is an executor's memory, its bloom filter
    # columns a list ORC parses itself
    "orc_batch_max_int": ("compaction", {"write.orc.vectorized.batch-size": "2147483647",
                                         "write.format.default": "orc"}, None,
                          f"from 1 to {maintenance_props.MAX_BATCH_ROWS}"),
    "orc_bloom_columns": ("compaction", {"write.orc.bloom.filter.columns": "id);x(",
                                         "write.format.default": "ORC"}, None, "column names"),
}
# the same actions on tables whose owner spelled Iceberg's values its own ways (any case)
CLEAN: dict[str, tuple[str, dict[str, str], dict[str, str] | None]] = {
    "clean_expire": ("expire_snapshots", {"gc.enabled": "TRUE",
                                          "history.expire.min-snapshots-to-keep": "1"},
                     EXPIRE_ALL),
    "clean_compaction": ("compaction", {"commit.retry.num-retries": "4",
                                        "commit.manifest-merge.enabled": "False"}, None),
    "clean_orc": ("compaction", {"write.format.default": "orc",
                                 "write.orc.compression-codec": "ZSTD",
                                 "write.orc.vectorized.batch-size": "1024",
                                 "write.orc.bloom.filter.columns": "id"}, None),
}


@dataclass
class World:
    lake: Lake
    runner: Runner
    orphans: dict[str, Path]

    def table(self, name: str) -> Any:
        return self.lake.catalog.load_table(f"{self.lake.namespace}.{name}")


def _plant_orphan(location: Path) -> Path:
    """A file no snapshot references, old enough for remove_orphan_files to delete."""
    orphan = location / "data" / "orphan-0.parquet"
    orphan.write_bytes(b"not referenced")
    old = time.time() - ORPHAN_AGE_S
    os.utime(orphan, (old, old))
    return orphan


@pytest.fixture(scope="module")
def world(pg_server: LocalPostgres, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[World]:
    """Every table written first, its owner's properties set after the appends (pyiceberg's
    own writer reads some of them), then one warm driver serves the module's operations."""
    from tms.storage.migrate import migrate

    name = f"propatk_{uuid.uuid4().hex[:8]}"
    pg_server.create_database(name)
    dsn = pg_server.dsn(name)
    migrate(dsn)
    root = tmp_path_factory.mktemp("table_props")
    lake = Lake(dsn, root / "lake")
    orphans = {}
    for table_name, (action, props, *_) in {**ATTACKS, **CLEAN}.items():
        table = lake.table(table_name, commits=COMMITS)
        with table.transaction() as tx:
            tx.set_properties(props)
        if action == "remove_orphan_files":
            orphans[table_name] = _plant_orphan(local_path(table.location()))
    store = PostgresStore(dsn)
    try:
        with WarmSparkEngine(spark_settings(), None, root / "warm") as warm:
            yield World(lake, Runner(store, root / "work", warm), orphans)
    finally:
        store.close()


def _state(world: World, name: str) -> tuple[Any, list[int], dict[str, bytes]]:
    """The table's current snapshot, every snapshot id, and every file under its location."""
    table = world.table(name)
    files = {str(p): p.read_bytes() for p in sorted(local_path(table.location()).rglob("*"))
             if p.is_file()}
    return table.current_snapshot(), [s.snapshot_id for s in table.snapshots()], files


def _run(world: World, name: str, action: str, options: dict[str, str] | None) -> Any:
    if options is EXPIRE_ALL:  # taken now: in a whole suite the module is collected long
        # before it runs, and a cutoff of collection time + 5 min would expire nothing
        options = {**options,
                   "older-than": (datetime.now(UTC) + timedelta(minutes=5)).isoformat()}
    job = world.lake.job(name, action, options, allowed=[str(world.lake.allowed)])
    return world.runner.run(f"{name}_{uuid.uuid4().hex[:6]}", job, action)


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_hostile_property_fails_the_operation_before_it_acts(world: World, name: str
                                                               ) -> None:
    action, props, options, says = ATTACKS[name]
    before = _state(world, name)

    op = _run(world, name, action, options)

    error = op.outcome.error or ""
    assert op.state is OperationState.FAILED, (op.state, error)
    assert op.lease.attempts_used == 1, error  # not retried: another attempt reads the same
    assert error.startswith("not retryable: invalid table property"), error
    assert next(iter(props)) in error and says in error, error
    assert _state(world, name) == before  # nothing written, expired or deleted
    if name in world.orphans:
        assert world.orphans[name].exists()


@pytest.mark.parametrize("name", list(CLEAN))
def test_the_same_action_still_works_on_a_table_spelling_icebergs_values(world: World,
                                                                         name: str) -> None:
    action, _, options = CLEAN[name]
    snapshot, snapshots, _ = _state(world, name)

    op = _run(world, name, action, options)

    assert op.state is OperationState.SUCCEEDED, op.outcome.error
    after, after_snapshots, _ = _state(world, name)
    if action == "expire_snapshots":
        assert after == snapshot and after_snapshots == [snapshot.snapshot_id]
        assert len(snapshots) > 1
    else:
        assert after != snapshot  # compacted: a new snapshot
    if CLEAN[name][1].get("write.format.default") == "orc":  # the table's own format kept
        formats = {str(t.file.file_format.value) for t in world.table(name).scan().plan_files()}
        assert formats == {"ORC"}, formats
