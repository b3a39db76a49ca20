"""Compaction's arrow data path on real Spark: Iceberg's planner and commit manager in the
warm driver, pyarrow in the Spark tasks (``tms.jobs.arrow_rewrite``).

Tables are written by pyiceberg into a PostgreSQL JDBC catalog. Every test checks the rows
and a checksum of them through pyiceberg; what Iceberg's Spark reader makes of the arrow
path's files is checked by a Spark-path rewrite of them (``data_path: spark`` with
``rewrite-all``): Spark reads every value the arrow path wrote, and the checksum must hold.
"""

from __future__ import annotations

import decimal
import itertools
import json
import os
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tests.helpers import SPARK_SQL_SCRIPT, wait_for
from tests.integration.iceberg_files import checksum, codecs, data_files, local_path
from tms.domain import JobSpec
from tms.engines.warm import WarmSparkEngine
from tms.jobs import ICEBERG_MAINTENANCE_APP
from tms.jobs.arrow_eligibility import ENV_SWITCH
from tms.jobs.arrow_rewrite import TEST_HOLD_ENV
from tms.jobs.iceberg_maintenance import ICEBERG_EXTENSIONS, catalog_conf
from tms.local.iceberg_data import sql_catalog_properties
from tms.local.postgres import LocalPostgres
from tms.spark.settings import SparkSettings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

CATALOG_NAME = "tms_arrow"
_ops = itertools.count(1)
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string()),
    pa.field("n", pa.int32()), pa.field("x", pa.float64()), pa.field("y", pa.float32()),
    pa.field("flag", pa.bool_()), pa.field("day", pa.date32()),
    pa.field("ts", pa.timestamp("us")), pa.field("tstz", pa.timestamp("us", tz="UTC")),
    pa.field("amount", pa.decimal128(12, 3)), pa.field("big", pa.decimal128(30, 5)),
    pa.field("blob", pa.binary())])
CATS = ("a", "b", "c")


def rows(start: int, n: int) -> pa.Table:
    ids = range(start, start + n)
    t0 = datetime(2024, 3, 1, 12, 0, 0)
    return pa.table({
        "id": list(ids), "cat": [CATS[i % 3] for i in ids],
        "n": [(i * 7919) % 100_000 - 50_000 for i in ids],
        "x": [i / 3 for i in ids], "y": [i / 7 for i in ids],
        "flag": [None if i % 11 == 0 else i % 2 == 0 for i in ids],
        "day": [date(2024, 1, 1) + timedelta(days=i % 400) for i in ids],
        "ts": [t0 + timedelta(microseconds=i * 1_000_003) for i in ids],
        "tstz": [(t0 + timedelta(seconds=i)).replace(tzinfo=UTC) for i in ids],
        "amount": [decimal.Decimal(i * 37 % 10**9) / 1000 * (-1) ** i for i in ids],
        "big": [decimal.Decimal(i) ** 3 / 100_000 + decimal.Decimal("12345678901234567890")
                for i in ids],
        "blob": [None if i % 5 == 0 else f"b{i}".encode() * (i % 4) for i in ids],
    }, schema=SCHEMA)


class Lake:
    def __init__(self, dsn: str, warehouse: Path, engine: WarmSparkEngine, work: Path,
                 holds: Path) -> None:
        from pyiceberg.catalog.sql import SqlCatalog

        warehouse.mkdir(parents=True)
        self.warehouse, self.holds = warehouse, holds
        self.props = sql_catalog_properties(dsn, warehouse.as_uri())
        self.catalog = SqlCatalog(CATALOG_NAME, **self.props)
        self.namespace = f"arrow_{uuid.uuid4().hex[:8]}"
        self.engine, self.work = engine, work

    def table(self, name: str, appends: int, per_append: int = 300, partitioned: bool = True,
              properties: dict[str, str] | None = None) -> Any:
        self.catalog.create_namespace_if_not_exists(self.namespace)
        table = self.catalog.create_table(f"{self.namespace}.{name}", schema=SCHEMA,
                                          properties=properties or {})
        if partitioned:
            with table.update_spec() as spec:
                spec.add_identity("cat")
        for a in range(appends):
            table.append(rows(a * per_append, per_append))
        return table.refresh()

    def run(self, name: str, options: dict[str, str] | None = None,
            data_path: str | None = None, expect_ok: bool = True) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "catalog_name": CATALOG_NAME, "catalog_properties": self.props,
            "table": f"{self.namespace}.{name}", "action": "compaction",
            "options": options if options is not None else {"min-input-files": "2"},
            "allowed_locations": [self.props["warehouse"]]}
        if data_path is not None:
            spec["data_path"] = data_path
        res = self.engine.run(JobSpec("pyspark", str(ICEBERG_MAINTENANCE_APP), spec),
                              self.work / f"op{next(_ops)}", threading.Event(),
                              lambda handle: None)
        if not expect_ok:
            assert not res.succeeded
            return {"error": res.error, "log": res.log_tail, "retryable": res.retryable}
        assert res.succeeded, f"{res.error}\n{res.log_tail[-3000:]}"
        assert res.result is not None
        return res.result

    def spark_sql(self, tmp: Path, *statements: str) -> None:
        """Spark SQL in a spark-submit of its own (for what pyiceberg cannot write)."""
        import subprocess
        from dataclasses import replace

        script = tmp / "run_sql.py"
        script.write_text(SPARK_SQL_SCRIPT)
        settings = SparkSettings.from_env(self.engine_home)
        settings = replace(settings, conf={"spark.sql.extensions": ICEBERG_EXTENSIONS,
                                           **catalog_conf(CATALOG_NAME, self.props),
                                           **settings.conf})
        proc = subprocess.run(settings.submit_argv(str(script), list(statements)),
                              env=settings.submit_env(os.environ), capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-4000:]

    engine_home: Path = Path()


@pytest.fixture(scope="module")
def holds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("holds")
    old = {k: os.environ.get(k) for k in (ENV_SWITCH, TEST_HOLD_ENV)}
    os.environ.pop(ENV_SWITCH, None)  # the default: on
    os.environ[TEST_HOLD_ENV] = str(path)
    yield path
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def lake(pg_server: LocalPostgres, tms_home: Path, holds: Path,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    name = f"arrow_{uuid.uuid4().hex[:8]}"
    pg_server.create_database(name)
    root = tmp_path_factory.mktemp("lake")
    settings = SparkSettings.from_env(tms_home)
    with WarmSparkEngine(settings, None, tmp_path_factory.mktemp("warm")) as warm:
        lk = Lake(pg_server.dsn(name), root / "warehouse", warm, root / "work", holds)
        lk.engine_home = tms_home
        yield lk


def test_partitioned_zstd_table_compacts_on_the_arrow_path(lake: Lake) -> None:
    table = lake.table("parts", appends=4)
    before, props = checksum(table), dict(table.properties)
    assert len(data_files(table)) == 12 and codecs(table) == {"zstd"}

    result = lake.run("parts")

    assert result["data_path"] == "arrow", result
    assert result["rewritten_data_files_count"] == 12
    assert result["added_data_files_count"] == 3 and result["failed_data_files_count"] == 0
    assert len(data_files(table)) == 3  # one per partition: the ideal count
    assert codecs(table) == {"zstd"} and result["outcome"]["codec_written"] == "zstd"
    assert checksum(table) == before and dict(table.refresh().properties) == props
    assert result["outcome"]["data_files_removed"] == 12
    assert result["outcome"]["partitions_touched"] == 3
    for path, _ in data_files(table):  # each output in its partition's directory
        assert "/data/cat=" in path and local_path(path).is_relative_to(lake.warehouse)
    # Spark reads every value back and writes them again: the checksum holds
    again = lake.run("parts", {"rewrite-all": "true"}, data_path="spark")
    assert again["data_path"] == "spark" and "switched off" in again["arrow_refused"]
    assert again["rewritten_data_files_count"] == 3
    assert checksum(table) == before


def test_snappy_kept_and_an_explicit_property_wins(lake: Lake) -> None:
    snappy = lake.table("snappy", appends=3, partitioned=False,
                        properties={"write.parquet.compression-codec": "snappy"})
    assert codecs(snappy) == {"snappy"}
    explicit = lake.table("explicit", appends=3, partitioned=False)
    with explicit.transaction() as tx:
        tx.set_properties({"write.parquet.compression-codec": "gzip"})
    sums = checksum(snappy), checksum(explicit)

    results = lake.run("snappy"), lake.run("explicit")

    assert [r["data_path"] for r in results] == ["arrow", "arrow"]
    assert codecs(snappy) == {"snappy"} and codecs(explicit) == {"gzip"}
    assert (checksum(snappy), checksum(explicit)) == sums


def test_evenly_split_outputs_and_result_shape(lake: Lake) -> None:
    table = lake.table("even", appends=6, per_append=4000, partitioned=False)
    total = sum(s for _, s in data_files(table))
    before = checksum(table)

    result = lake.run("even", {"min-input-files": "2",
                               "target-file-size-bytes": str(int(total / 2.08)),
                               "min-file-size-bytes": str(int(0.75 * total / 2.08))})

    sizes = sorted(s for _, s in data_files(table))
    assert result["data_path"] == "arrow" and len(sizes) == 2, (result, sizes)
    assert sizes[0] >= 0.8 * sizes[1]  # no remainder file: rows split evenly over both
    assert checksum(table) == before
    assert set(result) >= {"rewritten_data_files_count", "added_data_files_count",
                           "rewritten_bytes_count", "failed_data_files_count", "outcome",
                           "write_format", "manifests_first"}
    assert result["rewritten_bytes_count"] == total


def test_schema_evolution_falls_back_to_spark(lake: Lake) -> None:
    table = lake.table("evolved", appends=2, partitioned=False)
    with table.update_schema() as update:
        from pyiceberg.types import LongType

        update.add_column("extra", LongType())
    table = table.refresh()
    table.append(rows(10_000, 100).append_column("extra", pa.array([1] * 100, pa.int64())))
    before = checksum(table)

    result = lake.run("evolved")

    assert result["data_path"] == "spark" and "schema evolved" in result["arrow_refused"]
    assert result["rewritten_data_files_count"] == 3 and len(data_files(table)) == 1
    assert checksum(table) == before


def test_sort_order_falls_back_to_spark(lake: Lake) -> None:
    from pyiceberg.transforms import IdentityTransform

    table = lake.table("sorted", appends=0, partitioned=False)
    with table.update_sort_order() as update:
        update.asc("id", IdentityTransform())
    table = table.refresh()
    for a in range(3):
        table.append(rows(a * 100, 100))
    before = checksum(table)

    result = lake.run("sorted")

    assert result["data_path"] == "spark" and "sort order" in result["arrow_refused"]
    assert len(data_files(table)) == 1 and checksum(table) == before


def test_position_deletes_fall_back_to_spark(lake: Lake, tmp_path: Path) -> None:
    table = lake.table("deletes", appends=3, partitioned=False)
    name = f"{CATALOG_NAME}.{lake.namespace}.deletes"
    lake.spark_sql(tmp_path, f"ALTER TABLE {name} SET TBLPROPERTIES "
                             "('write.delete.mode'='merge-on-read')",
                   f"DELETE FROM {name} WHERE id % 7 = 0")
    before = checksum(table)
    assert before[0] == sum(1 for i in range(900) if i % 7)

    result = lake.run("deletes")

    assert result["data_path"] == "spark" and result["arrow_refused"] == "delete files apply"
    assert checksum(table) == before


@pytest.mark.parametrize("data_path", ["auto", "spark"])
def test_an_input_symlinked_outside_refuses_the_rewrite(lake: Lake, tmp_path: Path,
                                                        data_path: str) -> None:
    # on Spark's path too: its rewrite_data_files would copy the file's rows into the table
    table = lake.table(f"attacker_{data_path}", appends=2, partitioned=False)
    secret = tmp_path / "other_tenant" / "secret.parquet"
    secret.parent.mkdir()
    pq.write_table(rows(50_000, 10).cast(SCHEMA), secret)  # no field ids: add_files takes it
    link = local_path(table.location()) / "data" / "planted.parquet"
    link.symlink_to(secret)
    table.add_files([link.as_uri()])
    table = table.refresh()
    snapshot, files = table.current_snapshot(), sorted(data_files(table))
    data_dir = sorted(p.name for p in link.parent.iterdir())

    failed = lake.run(f"attacker_{data_path}", data_path=data_path, expect_ok=False)

    assert "outside the allowed locations" in str(failed["error"])
    table = table.refresh()
    assert table.current_snapshot() == snapshot and sorted(data_files(table)) == files
    assert sorted(p.name for p in link.parent.iterdir()) == data_dir  # nothing written


def test_a_data_path_outside_is_refused(lake: Lake, tmp_path: Path) -> None:
    table = lake.table("elsewhere", appends=2, partitioned=False)
    with table.transaction() as tx:
        tx.set_properties({"write.data.path": (tmp_path / "out").as_uri()})
    snapshot = table.refresh().current_snapshot()

    failed = lake.run("elsewhere", expect_ok=False)

    assert "write.data.path" in str(failed["error"])
    assert table.refresh().current_snapshot() == snapshot
    assert not (tmp_path / "out").exists()


def test_a_writer_committing_during_the_tasks(lake: Lake) -> None:
    table = lake.table("busy", appends=3, partitioned=False)
    before_ids = set(table.scan().to_arrow().column("id").to_pylist())
    key = f"{CATALOG_NAME}.{lake.namespace}.busy".replace("`", "")
    hold = lake.holds / f"{key}.hold"
    hold.write_text("")
    done: dict[str, Any] = {}
    job = threading.Thread(target=lambda: done.update(lake.run("busy")))
    job.start()
    try:
        wait_for(lambda: (lake.holds / f"{key}.written").exists(), "the tasks to finish")
        table.refresh().append(rows(90_000, 50))  # a writer's commit before the rewrite's
    finally:
        hold.unlink()
        job.join(timeout=300)
    assert done["data_path"] == "arrow" and done["rewritten_data_files_count"] == 3
    ids = table.refresh().scan().to_arrow().column("id").to_pylist()
    assert len(ids) == len(set(ids)) == len(before_ids) + 50  # nothing lost or duplicated
    assert set(ids) == before_ids | set(range(90_000, 90_050))
    assert json.dumps(done["outcome"]["snapshot_after"]) != "null"


def test_a_conflicting_writer_fails_the_commit_and_loses_nothing(lake: Lake) -> None:
    table = lake.table("conflict", appends=3, partitioned=False)
    key = f"{CATALOG_NAME}.{lake.namespace}.conflict"
    hold = lake.holds / f"{key}.hold"
    hold.write_text("")
    done: dict[str, Any] = {}
    job = threading.Thread(target=lambda: done.update(lake.run("conflict", expect_ok=False)))
    job.start()
    try:
        wait_for(lambda: (lake.holds / f"{key}.written").exists(), "the tasks to finish")
        table.refresh().delete("id < 10")  # rewrites a file the compaction replaces
    finally:
        hold.unlink()
        job.join(timeout=300)
    assert "error" in done  # Iceberg's validation refused the rewrite's commit
    table = table.refresh()
    ids = table.scan().to_arrow().column("id").to_pylist()
    assert sorted(ids) == list(range(10, 900))
    listed = {local_path(p) for p, _ in data_files(table)}
    on_disk = set((local_path(table.location()) / "data").rglob("*.parquet"))
    assert not {p for p in on_disk - listed if "-00001.parquet" in p.name}  # outputs deleted


# --- partial progress, group concurrency, the owner's writer properties ----------------------

PARTIAL = {"min-input-files": "2", "partial-progress.enabled": "true",
           "manifests-first": "false"}


def replaces_since(table: Any, snapshot_id: int) -> list[Any]:
    """The rewrite's commits: the snapshots after ``snapshot_id``, all of them replaces."""
    snaps = table.refresh().metadata.snapshots
    later = snaps[[s.snapshot_id for s in snaps].index(snapshot_id) + 1:]
    assert all(s.summary.operation.value == "replace" for s in later), later
    return later


def test_partial_progress_commits_each_group_on_its_own(lake: Lake) -> None:
    table = lake.table("partial", appends=4)
    before, start = checksum(table), table.current_snapshot().snapshot_id

    result = lake.run("partial", PARTIAL)

    assert result["data_path"] == "arrow", result
    assert result["rewritten_data_files_count"] == 12 and result["added_data_files_count"] == 3
    assert result["failed_data_files_count"] == 0
    assert result["arrow_commits"] == {"commits": 3, "failed_commits": 0,
                                       "groups_not_committed": 0}
    assert len(replaces_since(table, start)) == 3  # one commit per group (max-commits 10)
    assert checksum(table) == before and len(data_files(table)) == 3


def test_max_commits_bounds_the_commits(lake: Lake) -> None:
    table = lake.table("capped", appends=4)
    before, start = checksum(table), table.current_snapshot().snapshot_id

    result = lake.run("capped", {**PARTIAL, "partial-progress.max-commits": "2",
                                 "max-concurrent-file-group-rewrites": "1"})

    assert result["data_path"] == "arrow", result
    # 3 groups, at most 2 commits: ceil(3 / 2) = 2 groups a commit, as Iceberg batches them
    assert result["arrow_commits"]["commits"] == 2
    assert len(replaces_since(table, start)) == 2
    assert result["rewritten_data_files_count"] == 12 and len(data_files(table)) == 3
    assert checksum(table) == before


def test_a_conflict_fails_only_its_groups_commit(lake: Lake) -> None:
    table = lake.table("partly", appends=4)
    ids_before = set(table.scan().to_arrow().column("id").to_pylist())
    start = table.current_snapshot().snapshot_id
    key = f"{CATALOG_NAME}.{lake.namespace}.partly"
    hold = lake.holds / f"{key}.hold"
    hold.write_text("")
    done: dict[str, Any] = {}
    job = threading.Thread(target=lambda: done.update(lake.run("partly", PARTIAL)))
    job.start()
    try:
        wait_for(lambda: (lake.holds / f"{key}.written").exists(), "a group to be written")
        # a writer rewrites a file of partition a: that group's commit must fail validation
        table.refresh().delete("cat == 'a' and id < 10")
        writer = table.refresh().current_snapshot().snapshot_id
    finally:
        hold.unlink()
        job.join(timeout=300)

    assert done["data_path"] == "arrow", done
    assert done["arrow_commits"] == {"commits": 2, "failed_commits": 1,
                                     "groups_not_committed": 1}
    assert done["rewritten_data_files_count"] == 8 and done["added_data_files_count"] == 2
    assert done["failed_data_files_count"] == 0  # the procedure counts failed rewrites only
    table = table.refresh()
    ids = table.scan().to_arrow().column("id").to_pylist()
    assert len(ids) == len(set(ids)) and set(ids) == {i for i in ids_before
                                                      if not (i % 3 == 0 and i < 10)}
    assert len(replaces_since(table, writer)) == 2
    assert writer in [s.snapshot_id for s in table.metadata.snapshots] and start != writer
    listed = {local_path(p) for p, _ in data_files(table)}
    by_dir: dict[str, int] = {}
    for p in listed:
        by_dir[p.parent.name] = by_dir.get(p.parent.name, 0) + 1
    assert by_dir["cat=b"] == by_dir["cat=c"] == 1 and by_dir["cat=a"] > 1  # a: not rewritten
    on_disk = set((local_path(table.location()) / "data").rglob("*.parquet"))
    assert not {p for p in on_disk - listed if "-00001.parquet" in p.name}  # a's outputs gone


@pytest.mark.parametrize(("value", "data_path"), [("99999999999999999999", "auto"),
                                                  ("２０４８", "auto"),
                                                  ("2147483648", "spark")])
def test_an_out_of_range_writer_property_fails_before_anything_is_written(
        lake: Lake, value: str, data_path: str) -> None:
    name = f"badprop_{data_path}_{len(value)}"
    table = lake.table(name, appends=3, partitioned=False)
    with table.transaction() as tx:  # after the appends: pyiceberg's own writer reads it too
        tx.set_properties({"write.parquet.page-size-bytes": value})
    table = table.refresh()
    snapshot, files, before = table.current_snapshot(), sorted(data_files(table)), checksum(table)
    data_dir = local_path(table.location()) / "data"
    on_disk = sorted(data_dir.rglob("*"))
    metadata = sorted((local_path(table.location()) / "metadata").iterdir())

    failed = lake.run(name, data_path=data_path, expect_ok=False)

    assert failed["retryable"] is False
    error = str(failed["error"])
    assert "invalid table property" in error and "write.parquet.page-size-bytes" in error
    assert "from 1 to 2147483647" in error
    table = table.refresh()
    assert table.current_snapshot() == snapshot and sorted(data_files(table)) == files
    assert sorted(data_dir.rglob("*")) == on_disk and checksum(table) == before
    assert sorted((local_path(table.location()) / "metadata").iterdir()) == metadata


def test_a_policy_level_out_of_the_tables_codecs_range_fails_before_anything_is_written(
        lake: Lake) -> None:
    """The policy's compaction.compression-level is checked against zstd's range when it is
    set (0-22); the table's codec is gzip, whose writer takes 1-9: refused, nothing written."""
    table = lake.table("gzip_level", appends=3, partitioned=False)
    with table.transaction() as tx:
        tx.set_properties({"write.parquet.compression-codec": "gzip"})
    table = table.refresh()
    snapshot, before = table.current_snapshot(), checksum(table)
    data_dir = local_path(table.location()) / "data"
    on_disk = sorted(data_dir.rglob("*"))

    failed = lake.run("gzip_level", {"min-input-files": "2", "compression-level": "15"},
                      expect_ok=False)

    assert failed["retryable"] is False
    assert "compaction.compression-level" in str(failed["error"])
    assert "codec gzip" in str(failed["error"]) and "from 1 to 9" in str(failed["error"])
    table = table.refresh()
    assert table.current_snapshot() == snapshot and checksum(table) == before
    assert sorted(data_dir.rglob("*")) == on_disk


def test_with_partial_progress_a_refused_input_sends_every_group_to_spark(lake: Lake) -> None:
    # partition a holds files of the old schema, b and c only new ones: the probe finds a's
    # before any group commits, so no group is committed on the arrow path
    from pyiceberg.types import LongType

    table = lake.table("mixed", appends=0)
    old = rows(0, 300).filter(pc.equal(rows(0, 300).column("cat"), "a"))
    table.append(old)
    table.append(old.slice(0, 50))
    with table.update_schema() as update:
        update.add_column("extra", LongType())
    table = table.refresh()
    for a in range(3):
        batch = rows(1000 + a * 300, 300)
        batch = batch.filter(pc.not_equal(batch.column("cat"), "a"))
        table.append(batch.append_column("extra", pa.array([a] * batch.num_rows, pa.int64())))
    before, start = checksum(table), table.refresh().current_snapshot().snapshot_id

    result = lake.run("mixed", PARTIAL)

    assert result["data_path"] == "spark" and "schema evolved" in result["arrow_refused"]
    assert "arrow_commits" not in result
    assert result["rewritten_data_files_count"] == 8  # 2 of a, 3 each of b and c
    assert checksum(table) == before and len(data_files(table)) == 3
    assert len(replaces_since(table, start)) == 3  # Spark's own partial progress


def test_remove_dangling_deletes_is_left_to_spark(lake: Lake) -> None:
    table = lake.table("dangling", appends=3, partitioned=False)
    before = checksum(table)

    result = lake.run("dangling", {"min-input-files": "2", "remove-dangling-deletes": "true"})

    assert result["data_path"] == "spark"
    assert "remove-dangling-deletes" in result["arrow_refused"]
    assert result["rewritten_data_files_count"] == 3 and checksum(table) == before


def test_a_group_that_fails_to_rewrite_is_counted_and_the_rest_commit(lake: Lake) -> None:
    table = lake.table("broken", appends=4)
    start = table.current_snapshot().snapshot_id
    others = table.scan(row_filter="cat != 'b'").to_arrow().sort_by("id")
    victim = next(local_path(p) for p, _ in data_files(table) if "/cat=b/" in p)
    with victim.open("r+b") as f:  # the first page header zeroed: the footer still reads
        f.seek(4)
        f.write(bytes(64))
    outputs_before = set(victim.parent.iterdir())

    result = lake.run("broken", PARTIAL)

    assert result["data_path"] == "arrow", result
    assert result["failed_data_files_count"] == 4  # group b's inputs, as the action counts
    assert result["rewritten_data_files_count"] == 8 and result["added_data_files_count"] == 2
    assert result["arrow_commits"] == {"commits": 2, "failed_commits": 0,
                                       "groups_not_committed": 0}
    assert len(replaces_since(table, start)) == 2
    table = table.refresh()
    assert table.scan(row_filter="cat != 'b'").to_arrow().sort_by("id").equals(others)
    assert set(victim.parent.iterdir()) == outputs_before  # b's outputs deleted, inputs kept
