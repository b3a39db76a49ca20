"""Partition-aware compaction on real Iceberg tables: pyiceberg writes day-partitioned tables
into a SQL catalog on a real PostgreSQL, the Iceberg plugin inspects them from their manifests
and decides, and a real spark-submit runs the job with the decision's parameters. Afterwards the
table is read back: only the planned partitions' files changed, and no row did.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pyarrow as pa
import pytest

from tests.integration.test_api import error_of
from tests.integration.test_api_rpcs import register, trigger
from tests.integration.test_iceberg_actions import CATALOG_NAME, Env, run_job_file
from tests.unit.fakes import make_table
from tms.domain import Decision
from tms.formats.iceberg import stats as iceberg_stats
from tms.formats.iceberg.plugin import IcebergFormat
from tms.jobs.partition_filter import days_of
from tms.local.iceberg_data import SCHEMA

pytestmark = pytest.mark.integration

DAYS = 12
ROWS_PER_FILE = 40
START = datetime(2026, 1, 1, tzinfo=UTC)
DAY0 = days_of(START.date())


@pytest.fixture
def env(pg: Any, tmp_path: Path) -> Env:
    return Env(pg, tmp_path)


# pyiceberg writes identity partitions by itself (a transform like day() needs its native
# extension): the first test partitions by a date column, the second lets Spark write days(ts).
DAY_SCHEMA = pa.schema([*SCHEMA, pa.field("day", pa.date32())])


def create_by_date(env: Env) -> Any:
    env.catalog.create_namespace_if_not_exists(env.namespace)
    table = env.catalog.create_table(env.identifier, schema=DAY_SCHEMA)
    with table.update_spec() as spec:
        spec.add_identity("day")
    assert [f.name for f in table.refresh().spec().fields] == ["day"]
    return table


def rows(days: list[int], start_id: int) -> pa.Table:
    """``ROWS_PER_FILE`` rows in each of ``days`` (offsets from 2026-01-01)."""
    ids, stamps = [], []
    for n, d in enumerate(days):
        for i in range(ROWS_PER_FILE):
            ids.append(start_id + n * ROWS_PER_FILE + i)
            stamps.append(START + timedelta(days=d, seconds=i))
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "kind": [("click", "view")[i % 2] for i in ids],
                     "amount": [float(i % 13) for i in ids], "ts": stamps,
                     "day": [t.date() for t in stamps]}, schema=DAY_SCHEMA)


def files_by_day(table: Any, field: str) -> dict[int, set[str]]:
    """Live data and delete files of each day partition."""
    out: dict[int, set[str]] = defaultdict(set)
    for f in table.refresh().inspect.files().to_pylist():
        value = f["partition"][field]
        out[value if isinstance(value, int) else days_of(value)].add(f["file_path"])
    return out


def decide(table: Any, action: str = "compaction", **policy: str
           ) -> tuple[Decision, dict[str, Any]]:
    plugin = IcebergFormat()
    tms_table = make_table(format="iceberg", policy=policy)
    metrics = plugin._measure(tms_table, table.refresh())
    by_action = {d.action: d for d in plugin.evaluate(tms_table, metrics, {},
                                                       datetime.now(UTC))}
    return by_action[action], metrics


def test_partitioned_compaction_touches_only_partitions_that_merge(env: Env) -> None:
    table = create_by_date(env)
    table.append(rows(list(range(DAYS)), 0))  # one small file in each of 12 partitions
    assert len(files_by_day(table, "day")) == DAYS

    # (a) twelve partitions, one small file each: nothing to merge, whatever the threshold
    d, m = decide(table, **{"compaction.min-small-files": "2"})
    assert m["partitions"] == DAYS and m["small_files"] == DAYS
    assert m["mergeable_small_files"] == 0
    assert not d.should_run
    assert f"{DAYS} small data files spread over {DAYS} partitions" in d.reason

    # (b) a second small file in one partition: a compaction of that partition only
    table.append(rows([5], 10_000))
    reads = iceberg_stats.CACHE.reads
    d, m = decide(table, **{"compaction.min-small-files": "2"})
    assert iceberg_stats.CACHE.reads == reads + 1  # only the new manifest was read
    assert m["mergeable_small_files"] == 2
    assert d.should_run, d.reason
    assert json.loads(d.params["partitions"]) == [[1, [DAY0 + 5]]]
    assert "compaction of 1 of 12 partitions, day=2026-01-06 (2 small files)" in d.reason
    assert d.benefit is not None and d.benefit > 0
    before = files_by_day(table, "day")
    total = env.rows()

    result = env.run_job("compaction", d.params)

    assert result["rewritten_data_files_count"] == 2
    assert result["added_data_files_count"] == 1
    assert result["partitions"] == [[1, [DAY0 + 5]]]
    assert result["partition_filter"] == "(`day` = DATE '2026-01-06')"
    after = files_by_day(table, "day")
    assert len(after[DAY0 + 5]) == 1 and after[DAY0 + 5].isdisjoint(before[DAY0 + 5])
    assert {k: v for k, v in after.items() if k != DAY0 + 5} == \
        {k: v for k, v in before.items() if k != DAY0 + 5}
    assert env.rows() == total
    d, _ = decide(table, **{"compaction.min-small-files": "2"})
    assert not d.should_run  # nothing left to merge


def _merge_on_read_days(env: Env, *properties: str) -> list[str]:
    """A format-2 merge-on-read table partitioned by day, one Spark-written file per day."""
    t = env.spark_table
    props = ", ".join(["'format-version'='2'", "'write.delete.mode'='merge-on-read'",
                       *properties])
    return [
        f"CREATE NAMESPACE IF NOT EXISTS {CATALOG_NAME}.{env.namespace}",
        f"CREATE TABLE {t} (id BIGINT, ts TIMESTAMP) USING iceberg PARTITIONED BY (days(ts)) "
        f"TBLPROPERTIES ({props})",
        f"INSERT INTO {t} SELECT id, TIMESTAMP '2026-01-01 00:00:00+00:00' + "
        f"make_interval(0, 0, 0, CAST(id % {DAYS} AS INT)) FROM range({DAYS * ROWS_PER_FILE})",
    ]


def test_merge_on_read_deletes_compact_exactly_their_partitions(env: Env) -> None:
    t = env.spark_table
    # Spark writes one file per day (its writes are distributed by partition), then its
    # merge-on-read DELETE writes position delete files into the two days it touches
    env.run_sql(
        *_merge_on_read_days(env),
        f"DELETE FROM {t} WHERE ts < TIMESTAMP '2026-01-03 00:00:00+00:00' AND id % 5 = 0",
    )
    table = env.table()
    total = env.rows()
    assert total == DAYS * ROWS_PER_FILE - sum(
        1 for i in range(DAYS * ROWS_PER_FILE) if i % DAYS < 2 and i % 5 == 0)
    before = files_by_day(table, "ts_day")
    assert len(before) == DAYS
    counts = {day - DAY0: len(f) for day, f in sorted(before.items())}
    assert counts[0] == counts[1] == 2, counts  # a data and a delete file each

    d, m = decide(table)  # default policy: deletes hiding >= 10 % of a partition's rows
    assert m["position_delete_files"] == 2 and m["equality_delete_files"] == 0
    assert d.should_run, d.reason
    assert sorted(json.loads(d.params["partitions"])) == [[0, [DAY0]], [0, [DAY0 + 1]]]
    assert d.params["delete-file-threshold"] == "1"
    assert d.params["remove-dangling-deletes"] == "true"
    assert "0 small files to merge, 2 delete files to apply" in d.reason

    result = env.run_job("compaction", d.params)

    assert result["rewritten_data_files_count"] == 2
    assert "TIMESTAMP '2026-01-02 00:00:00+00:00'" in result["partition_filter"]
    after = files_by_day(table, "ts_day")
    for day in (DAY0, DAY0 + 1):  # deletes applied: one fresh data file, no delete file
        assert len(after[day]) == 1 and after[day].isdisjoint(before[day])
    assert {k: v for k, v in after.items() if k not in (DAY0, DAY0 + 1)} == \
        {k: v for k, v in before.items() if k not in (DAY0, DAY0 + 1)}
    snapshot = table.refresh().current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    assert int(snapshot.summary.additional_properties.get("total-delete-files", 0)) == 0
    assert env.rows() == total
    d, _ = decide(table)
    assert not d.should_run, d.reason


def test_position_delete_rewrite_merges_only_partitions_holding_two(env: Env) -> None:
    t = env.spark_table
    # partition granularity: each DELETE adds one delete file per day it touches; two DELETEs
    # into day 0, one into day 1
    env.run_sql(
        *_merge_on_read_days(env, "'write.delete.granularity'='partition'"),
        f"DELETE FROM {t} WHERE ts < TIMESTAMP '2026-01-02 00:00:00+00:00' AND id % 5 = 0",
        f"DELETE FROM {t} WHERE ts < TIMESTAMP '2026-01-02 00:00:00+00:00' AND id % 5 = 1",
        f"DELETE FROM {t} WHERE ts >= TIMESTAMP '2026-01-02 00:00:00+00:00' "
        f"AND ts < TIMESTAMP '2026-01-03 00:00:00+00:00' AND id % 5 = 0",
    )
    table = env.table()
    total = env.rows()
    before = files_by_day(table, "ts_day")
    assert len(before[DAY0]) == 3 and len(before[DAY0 + 1]) == 2  # data + delete files
    pol = {"position-deletes.max-files": "2"}

    d, m = decide(table, "rewrite_position_deletes", **pol)
    assert m["position_delete_files"] == 3
    assert d.should_run, d.reason
    assert json.loads(d.params["partitions"]) == [[0, [DAY0]]]
    assert d.params["min-input-files"] == "2"

    result = env.run_job("rewrite_position_deletes", d.params)

    assert result["rewritten_delete_files_count"] == 2
    assert result["added_delete_files_count"] == 1
    assert "TIMESTAMP '2026-01-02 00:00:00+00:00'" in result["partition_filter"]
    assert result["outcome"]["changed_nothing"] is False
    after = files_by_day(table, "ts_day")
    assert len(after[DAY0]) == 2 and len(after[DAY0] - before[DAY0]) == 1  # one new delete file
    assert {k: v for k, v in after.items() if k != DAY0} == \
        {k: v for k, v in before.items() if k != DAY0}
    assert env.rows() == total
    d, _ = decide(table, "rewrite_position_deletes", **pol)
    assert not d.should_run, d.reason  # one delete file per partition: nothing to merge


def test_file_scoped_delete_rewrite_only_where_deletes_outnumber_data_files(env: Env) -> None:
    t = env.spark_table
    # Iceberg's default granularity (file): a DELETE writes one delete file per data file it
    # touches (and Spark folds a data file's earlier deletes into it). Day 0: one data file,
    # one delete file; day 1: two data files, one DELETE touching both: two delete files.
    # 2 % of the rows: below the compaction's delete ratio, so a compaction merges only.
    env.run_sql(
        *_merge_on_read_days(env),
        f"INSERT INTO {t} SELECT id, TIMESTAMP '2026-01-02 00:00:00+00:00' "
        f"FROM range(100000, 100000 + {ROWS_PER_FILE})",
        f"DELETE FROM {t} WHERE ts < TIMESTAMP '2026-01-02 00:00:00+00:00' AND id % 50 = 0",
        f"DELETE FROM {t} WHERE ts >= TIMESTAMP '2026-01-02 00:00:00+00:00' "
        f"AND ts < TIMESTAMP '2026-01-03 00:00:00+00:00' AND id % 50 = 1",
    )
    table = env.table()
    total = env.rows()
    before = files_by_day(table, "ts_day")
    assert len(before[DAY0]) == 2 and len(before[DAY0 + 1]) == 4  # data + delete files
    pol = {"position-deletes.max-files": "2"}

    d, m = decide(table, "rewrite_position_deletes", **pol)
    assert m["delete_granularity"] == "file"
    assert m["position_delete_files"] == 3
    assert not d.should_run, d.reason  # no partition holds more delete than data files
    assert "file granularity: more delete files than data files" in d.reason

    # what the rule spares: a rewrite of day 1 writes one delete file per data file again
    spared = env.run_job("rewrite_position_deletes", {
        "min-input-files": "2", "partitions": json.dumps([[0, [DAY0 + 1]]])})
    assert spared["rewritten_delete_files_count"] == 2
    assert spared["added_delete_files_count"] == 2

    # a compaction merges day 1's two data files: their two delete files now name removed
    # files (dangling), more delete files than data files: the rewrite drops them
    c, _ = decide(table, **{"compaction.min-small-files": "2"})
    assert c.should_run and json.loads(c.params["partitions"]) == [[0, [DAY0 + 1]]], c.reason
    env.run_job("compaction", c.params)
    assert len(files_by_day(table, "ts_day")[DAY0 + 1]) == 3  # one data, two delete files
    d, _ = decide(table, "rewrite_position_deletes", **pol)
    assert d.should_run, d.reason
    assert json.loads(d.params["partitions"]) == [[0, [DAY0 + 1]]]
    result = env.run_job("rewrite_position_deletes", d.params)
    assert result["rewritten_delete_files_count"] == 2
    assert result["added_delete_files_count"] == 0
    after = files_by_day(table, "ts_day")
    assert len(after[DAY0 + 1]) == 1 and after[DAY0] == before[DAY0]
    assert env.rows() == total
    d, _ = decide(table, "rewrite_position_deletes", **pol)
    assert not d.should_run, d.reason


@pytest.mark.parametrize("raw", [
    "[[0,[1]]] OR 1=1", "[[0,[\"x' OR '1'='1\"]]]x", "[[0,[1.5]]]", '[[0,["日本"]]]',
    "[" + ",".join(f"[0,[{i}]]" for i in range(101)) + "]", "[[-1,[1]]]",
    '[[0,["a\\u0000"]]]'])
def test_api_refuses_hostile_partitions(api: Any, raw: str) -> None:
    stub = api.stub()
    register(stub)
    code, fields = error_of(lambda: trigger(stub, params={"partitions": raw}))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "params[partitions]" in fields


def test_api_accepts_partitions_and_the_operation_carries_them(api: Any) -> None:
    stub = api.stub()
    register(stub)
    op = trigger(stub, params={"partitions": '[[0,[20454]],[0,["日本 \\u0027"]]]'.replace(
        "日本", "\\u65e5\\u672c")})
    assert json.loads(op.params["partitions"]) == [[0, [20454]], [0, ["日本 '"]]]


@pytest.mark.parametrize("raw, message", [
    ("[[0,[1.5]]]", "decimal"), ("[[0,[1]]] OR 1=1", "not JSON"),
    ('[[0,["a\\nb"]]]', "control")])
def test_job_refuses_hostile_partitions_before_spark(tmp_path: Path, raw: str,
                                                     message: str) -> None:
    rc, payload, _ = run_job_file(tmp_path, "bad", {
        "catalog_name": CATALOG_NAME,
        "catalog_properties": {"type": "sql", "uri": "postgresql://tms@127.0.0.1:1/none"},
        "table": "ns.events", "action": "compaction", "options": {"partitions": raw},
        "allowed_locations": [str(tmp_path)]})
    assert rc == 1 and payload["error_type"] == "SpecError" and message in payload["error"]
    assert payload["retryable"] is False
