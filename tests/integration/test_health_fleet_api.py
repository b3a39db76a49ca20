"""Health, history, liveness and per-day summaries through a real API server on a real
PostgreSQL: ListTables' health filters and orders with page tokens, ExplainTable's health and
partitions, GetTableHistory, GetFleetStatus, SummarizeOperations, and their errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import grpc
import psycopg
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from tests.integration.conftest import Api
from tests.integration.test_api import error_of, register
from tests.integration.test_api_security import TOKENS, md
from tms.api.auth import Authenticator
from tms.domain import Decision, Table
from tms.domain.fleet import ProcessBeat
from tms.health.figures import inspection
from tms.storage.roles import EnqueueParams
from tms.v1 import tms_pb2

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)


def _metrics(data_files: int, small_files: int, deletes: int = 0) -> dict[str, object]:
    return {"data_files": data_files, "small_files": small_files, "delete_files": deletes,
            "small_file_bytes": 16 << 20, "total_bytes": data_files * (8 << 20),
            "snapshots": 3, "manifests": 2, "_snapshot_times_ms": [],
            "_partitions": [
                {"spec": 0, "values": [20_000], "data_files": 10, "small_files": 2, "bytes": 5},
                {"spec": 0, "values": [20_001], "data_files": 40, "small_files": 30,
                 "bytes": 9, "position_delete_files": 1}],
            "_specs": {"0": [["ts", "day", "timestamp"]]}}


def _inspect(api: Api, table_id: str, data_files: int, small_files: int) -> int:
    view = api.store.table_get(table_id)
    assert view is not None
    ins = inspection(view.table, _metrics(data_files, small_files), [], {}, NOW)
    api.store.health_record_batch([ins], 300.0, 86_400.0)
    return ins.health.score


def _tables(api: Api, stub, n: int = 3) -> list[Table]:
    out = []
    for i in range(n):
        register(stub, f"t{i}", table_name=f"events{i}")
        view = api.store.table_get(f"t{i}")
        assert view is not None
        out.append(view.table)
    return out


@pytest.fixture
def stub(api: Api):
    return api.stub()


def test_health_in_tables_filters_orders_and_pages(api: Api, stub) -> None:
    _tables(api, stub, 4)
    scores = {"t0": _inspect(api, "t0", 100, 5), "t1": _inspect(api, "t1", 100, 60),
              "t2": _inspect(api, "t2", 100, 35)}  # t3: never inspected
    assert scores["t1"] < scores["t2"] < scores["t0"] == 100
    got = stub.GetTable(tms_pb2.GetTableRequest(name="tables/t1"))
    assert got.HasField("health_score") and got.health_score == scores["t1"]
    assert not stub.GetTable(tms_pb2.GetTableRequest(name="tables/t3")).HasField(
        "health_score")

    def walk(**kw: object) -> list[str]:
        names, token = [], ""
        while True:
            page = stub.ListTables(tms_pb2.ListTablesRequest(page_size=1, page_token=token,
                                                             **kw))
            names += [t.name.removeprefix("tables/") for t in page.tables]
            token = page.next_page_token
            if not token:
                return names

    assert walk(order_by="health") == ["t1", "t2", "t0", "t3"]  # never inspected last
    assert walk(order_by="-health") == ["t0", "t2", "t1", "t3"]
    assert walk(order_by="health", max_health=scores["t2"]) == ["t1", "t2"]
    assert walk(min_health=scores["t2"]) == ["t0", "t2"]
    assert walk(order_by="-last_commit_time") == ["t3", "t2", "t1", "t0"]  # none committed
    assert walk(search="EVENTS2") == ["t2"]
    assert walk(search="%") == []  # a literal, not a wildcard
    assert walk(namespace="ns", order_by="health")[:1] == ["t1"]

    code, fields = error_of(lambda: stub.ListTables(tms_pb2.ListTablesRequest(
        order_by="health; DROP TABLE x")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["order_by"]
    code, fields = error_of(lambda: stub.ListTables(tms_pb2.ListTablesRequest(max_health=101)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["max_health"]
    token = stub.ListTables(tms_pb2.ListTablesRequest(page_size=1, order_by="health")
                            ).next_page_token
    code, fields = error_of(lambda: stub.ListTables(tms_pb2.ListTablesRequest(
        page_size=1, order_by="-health", page_token=token)))  # another query's token
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["page_token"]


def test_explain_shows_the_parts_and_worst_partitions(api: Api, stub) -> None:
    _tables(api, stub, 1)
    before = stub.ExplainTable(tms_pb2.ExplainTableRequest(name="tables/t0"))
    assert not before.HasField("health") and not before.partitions
    score = _inspect(api, "t0", 100, 60)
    got = stub.ExplainTable(tms_pb2.ExplainTableRequest(name="tables/t0"))
    assert got.health.score == score
    parts = {p.name: p for p in got.health.parts}
    assert set(parts) == {"small_files", "delete_files", "manifests", "snapshots",
                          "maintenance_overdue"}
    assert 100 - sum(p.penalty for p in parts.values()) == score
    assert parts["small_files"].penalty > 0 and "60% of 100 data files" in \
        parts["small_files"].detail
    assert [p.partition for p in got.partitions] == ["ts_day=2024-10-05", "ts_day=2024-10-04"]
    assert got.partitions[0].small_files == 30 and got.partitions[0].delete_files == 1


def _ts(at: datetime) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(at)
    return ts


def test_history_points_and_markers(api: Api, stub, db_dsn: str) -> None:
    (table,) = _tables(api, stub, 1)
    _inspect(api, "t0", 100, 60)
    _inspect(api, "t0", 100, 60)  # the same figures at once: no second point
    op = api.store.operation_enqueue(EnqueueParams(table, "compaction", "policy", "r", 3, 0))
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("UPDATE tms_operations SET state = 'SUCCEEDED', finished_at = now(),"
                     " started_at = now() WHERE id = %s", (op,))
        conn.execute("UPDATE tms_table_history SET at = at - interval '10 minutes'")
    _inspect(api, "t0", 20, 1)  # changed, and the last point is old enough: a new point
    got = stub.GetTableHistory(tms_pb2.GetTableHistoryRequest(name="tables/t0"))
    assert [(p.data_files, p.small_files, p.resolution) for p in got.points] == [
        (100, 60, "inspection"), (20, 1, "inspection")]
    assert got.points[0].health_score < got.points[1].health_score
    assert got.points[1].mean_file_bytes == 8 << 20
    assert [(m.operation, m.action, m.state) for m in got.markers] == [
        (f"tables/t0/operations/{op}", "compaction", tms_pb2.Operation.SUCCEEDED)]
    old = stub.GetTableHistory(tms_pb2.GetTableHistoryRequest(
        name="tables/t0", start_time=_ts(NOW - timedelta(days=3)),
        end_time=_ts(NOW - timedelta(days=2))))
    assert not old.points and not old.markers
    code, fields = error_of(lambda: stub.GetTableHistory(tms_pb2.GetTableHistoryRequest(
        name="tables/t0", start_time=_ts(NOW), end_time=_ts(NOW - timedelta(days=1)))))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["start_time"]
    code, _ = error_of(lambda: stub.GetTableHistory(tms_pb2.GetTableHistoryRequest(
        name="tables/nope")))
    assert code == grpc.StatusCode.NOT_FOUND
    code, fields = error_of(lambda: stub.GetTableHistory(tms_pb2.GetTableHistoryRequest(
        name="<script>")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["name"]


def test_fleet_status_and_summaries(api: Api, stub, db_dsn: str) -> None:
    tables = _tables(api, stub, 3)
    _inspect(api, "t0", 100, 60)
    _inspect(api, "t1", 100, 5)
    stub.PauseTable(tms_pb2.PauseTableRequest(name="tables/t2"))
    api.store.heartbeat_record(ProcessBeat("sched-1", "scheduler", "h1", NOW, 10.0, True,
                                           (0, 1, 2)))
    api.store.heartbeat_record(ProcessBeat("exec-1", "executor", "h2", NOW, 10.0,
                                           running=("tables/t0/operations/1",)))
    api.store.heartbeat_record(ProcessBeat("exec-old", "executor", "h3", NOW, 10.0))
    ops = [api.store.operation_enqueue(EnqueueParams(t, "compaction", "policy", "r", 3, 0,
                                                     metrics={"data_files": 100}))
           for t in tables]
    outcome = '{"outcome": {"data_files_removed": 80, "data_files_added": 4, ' \
              '"data_bytes_rewritten": 1000}}'
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("UPDATE tms_processes SET heartbeat_at = now() - interval '5 minutes'"
                     " WHERE id = 'exec-old'")
        conn.execute("UPDATE tms_operations SET state = 'SUCCEEDED', finished_at = now(),"
                     " started_at = now(), result = %s WHERE id = %s", (outcome, ops[0]))
        conn.execute("UPDATE tms_operations SET state = 'FAILED', finished_at = now()"
                     " - interval '1 day', started_at = now() WHERE id = %s", (ops[1],))
    api.store.commits_notify([])
    fleet = stub.GetFleetStatus(tms_pb2.GetFleetStatusRequest())
    assert dict(fleet.tables_by_state) == {"ACTIVE": 2, "PAUSED": 1}
    bands = {b.band: b.tables for b in fleet.health_bands}
    assert bands == {"healthy": 1, "fair": 1, "poor": 0, "unknown": 1}
    assert fleet.operations_queued == 1 and fleet.operations_running == 0
    assert dict(fleet.operations_last_24h) == {"SUCCEEDED": 1}  # the failure: a day ago
    procs = {p.id: p for p in fleet.processes}
    assert procs["sched-1"].leader and list(procs["sched-1"].shards) == [0, 1, 2]
    assert procs["sched-1"].alive and procs["exec-1"].alive and not procs["exec-old"].alive
    assert list(procs["exec-1"].running_operations) == ["tables/t0/operations/1"]

    summary = stub.SummarizeOperations(tms_pb2.SummarizeOperationsRequest(days=3))
    today = NOW.strftime("%Y-%m-%d")
    assert [d.day for d in summary.days][-1] == today and len(summary.days) == 3
    last = summary.days[-1]
    assert (last.succeeded, last.failed, last.data_files_before, last.data_files_after,
            last.bytes_rewritten) == (1, 0, 100, 24, 1000)
    assert summary.days[-2].failed == 1
    one = stub.SummarizeOperations(tms_pb2.SummarizeOperationsRequest(parent="tables/t1"))
    assert len(one.days) == 7 and sum(d.succeeded for d in one.days) == 0
    code, fields = error_of(lambda: stub.SummarizeOperations(
        tms_pb2.SummarizeOperationsRequest(days=91)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["days"]


def test_a_reader_reads_the_fleet_and_a_writer_does_not(make_api) -> None:
    api = make_api(auth=Authenticator.from_config(
        {"tokens": [t for t in TOKENS["tokens"] if "token" in t]}))
    stub = api.stub()
    reader = md("reader-secret")
    assert stub.GetFleetStatus(tms_pb2.GetFleetStatusRequest(), metadata=reader).time.seconds
    assert len(stub.SummarizeOperations(tms_pb2.SummarizeOperationsRequest(),
                                        metadata=reader).days) == 7
    code, _ = error_of(lambda: stub.GetFleetStatus(tms_pb2.GetFleetStatusRequest(),
                                                   metadata=md("writer-secret")))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    # a token limited to some tables may not summarise the whole fleet
    code, fields = error_of(lambda: stub.SummarizeOperations(
        tms_pb2.SummarizeOperationsRequest(), metadata=md("writer-secret")))
    assert code == grpc.StatusCode.PERMISSION_DENIED


def test_decisions_and_operations_show_in_the_table(api: Api, stub) -> None:
    (table,) = _tables(api, stub, 1)
    api.store.decision_finish_batch("s1", [(table.pk, Decision("compaction", True, "60 small"),
                                            None)], [])
    op = api.store.operation_enqueue(EnqueueParams(table, "compaction", "policy", "r", 3, 0))
    got = stub.GetTable(tms_pb2.GetTableRequest(name="tables/t0"))
    assert got.last_decision == "compaction: 60 small"
    assert got.last_operation == f"tables/t0/operations/{op}"
    assert got.last_operation_state == tms_pb2.Operation.QUEUED


def test_operations_by_queue_and_in_every_order(api: Api, stub, db_dsn: str) -> None:
    tables = _tables(api, stub, 4)
    ops = [api.store.operation_enqueue(EnqueueParams(t, "compaction", "policy", "r", 3, p))
           for t, p in zip(tables, (5, 9, 5, 1), strict=True)]
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("UPDATE tms_operations SET queue = 'batch' WHERE id = %s", (ops[3],))
        for op, minutes in ((ops[0], 30), (ops[2], 10)):
            conn.execute("UPDATE tms_operations SET state = 'SUCCEEDED', started_at = now(),"
                         " finished_at = now() - make_interval(mins => %s) WHERE id = %s",
                         (minutes, op))

    def walk(**kw: object) -> list[int]:
        ids, token = [], ""
        while True:
            page = stub.ListOperations(tms_pb2.ListOperationsRequest(
                parent="tables/-", page_size=1, page_token=token, **kw))
            ids += [int(o.name.rsplit("/", 1)[-1]) for o in page.operations]
            token = page.next_page_token
            if not token:
                return ids

    assert walk() == ops[::-1]
    assert walk(order_by="create_time") == ops
    assert walk(order_by="-end_time") == [ops[2], ops[0], ops[3], ops[1]]
    assert walk(order_by="priority") == [ops[1], ops[0], ops[2], ops[3]]
    assert walk(queue="batch") == [ops[3]]
    assert walk(queue="default", order_by="priority") == [ops[1], ops[0], ops[2]]
    code, fields = error_of(lambda: stub.ListOperations(tms_pb2.ListOperationsRequest(
        parent="tables/-", order_by="id; --")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["order_by"]
    code, fields = error_of(lambda: stub.ListOperations(tms_pb2.ListOperationsRequest(
        parent="tables/-", queue="Bad Queue")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["queue"]


def test_retention_prunes_processes_gone_for_an_hour(api: Api, db_dsn: str) -> None:
    from tms.scheduler.retention import Retention

    for pid in ("gone", "here"):
        api.store.heartbeat_record(ProcessBeat(pid, "executor", "h", NOW, 10.0))
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("UPDATE tms_processes SET heartbeat_at = now() - interval '2 hours'"
                     " WHERE id = 'gone'")
    assert Retention().prune(api.store)["processes"] == 1
    assert [p.process_id for p in api.store.heartbeat_list(86_400.0, 10)] == ["here"]
    api.store.heartbeat_forget("here")
    assert api.store.heartbeat_list(86_400.0, 10) == []
