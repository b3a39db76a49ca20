"""The gRPC API against a real PostgreSQL: the happy paths and every bad-input status code."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from tests.helpers import sql_catalog
from tms.api.server import ApiServer
from tms.formats.registry import load_formats
from tms.local.ports import free_port
from tms.storage.postgres import PostgresStore
from tms.v1 import tms_pb2, tms_pb2_grpc

pytestmark = pytest.mark.integration


@pytest.fixture
def stub(db_dsn: str, tmp_path: Path) -> Iterator[tms_pb2_grpc.TableManagementServiceStub]:
    store = PostgresStore(db_dsn)
    server = ApiServer(store, load_formats(), f"127.0.0.1:{free_port()}")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    stub = tms_pb2_grpc.TableManagementServiceStub(channel)
    stub.catalog = sql_catalog(store, db_dsn, tmp_path / "warehouse")  # type: ignore[attr-defined]
    stub.catalog_store = store  # type: ignore[attr-defined]
    yield stub
    channel.close()
    server.stop(0)
    store.close()


def register(stub, table_id: str = "events", create: bool = True,
             **over: object) -> tms_pb2.Table:
    """Register ``ns.events`` (or the table_name given) of the fixture's catalog, the table
    created in the catalog first unless ``create`` is false."""
    ns, name = str(over.pop("namespace", "ns")), str(over.pop("table_name", "events"))
    return stub.RegisterTable(tms_pb2.RegisterTableRequest(
        table_id=table_id, table=stub.catalog.pb(ns, name, create=create, **over)))


def error_of(call) -> tuple[grpc.StatusCode, list[str]]:
    """Run a failing call; return its code and the fields its BadRequest names."""
    with pytest.raises(grpc.RpcError) as info:
        call()
    err = info.value
    fields: list[str] = []
    status = rpc_status.from_call(err)
    if status is not None:
        for detail in status.details:
            if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                br = error_details_pb2.BadRequest()
                detail.Unpack(br)
                fields += [fv.field for fv in br.field_violations]
    return err.code(), fields


def test_register_get_list(stub) -> None:
    t = register(stub)
    assert t.name == "tables/events" and t.state == tms_pb2.Table.ACTIVE
    assert t.location == str(stub.catalog.warehouse / "ns" / "events")  # from the catalog
    got = stub.GetTable(tms_pb2.GetTableRequest(name="tables/events"))
    assert got.table_name == "events" and got.queue == "default"
    for i in range(5):
        register(stub, f"t{i}", table_name=f"t{i}")
    seen, token = [], ""
    while True:
        page = stub.ListTables(tms_pb2.ListTablesRequest(page_size=2, page_token=token))
        seen += [t.name for t in page.tables]
        token = page.next_page_token
        if not token:
            break
    assert seen == ["tables/events"] + [f"tables/t{i}" for i in range(5)]


def test_register_conflict(stub) -> None:
    register(stub)
    code, _ = error_of(lambda: register(stub))
    assert code == grpc.StatusCode.ALREADY_EXISTS


@pytest.mark.parametrize("table_id,over,field", [
    ("", {}, "table_id"),
    ("Bad Id", {}, "table_id"),
    ("x" * 64, {}, "table_id"),
    ("ok", {"format": ""}, "table.format"),
    ("ok", {"format": "delta-lake"}, "table.format"),
    ("ok", {"table_name": "", "base_path": ""}, "table.table_name"),
    ("ok", {"owner": "o" * 257}, "table.owner"),
    ("ok", {"namespace": "n" * 1025}, "table.namespace"),
    ("ok", {"base_path": "s3://b/../etc"}, "table.base_path"),
    ("ok", {"priority": 5000}, "table.priority"),
    ("ok", {"queue": "Q!"}, "table.queue"),
    ("ok", {"owner": "a\x00b"}, "table.owner"),
    ("ok", {"policy": {f"k{i}": "v" for i in range(65)}}, "table.policy"),
    ("ok", {"policy": {"compaction.min-small-files": "lots"}},
     "table.policy[compaction.min-small-files]"),
    ("ok", {"policy": {"no.such.key": "1"}}, "table.policy[no.such.key]"),
    ("ok", {"catalog": ""}, "table.catalog"),
    ("ok", {"catalog": "Cat-1"}, "table.catalog"),
])
def test_register_invalid(stub, table_id: str, over: dict, field: str) -> None:
    code, fields = error_of(lambda: register(stub, table_id, create=False, **over))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert field in fields


def test_register_without_table(stub) -> None:
    code, fields = error_of(lambda: stub.RegisterTable(
        tms_pb2.RegisterTableRequest(table_id="x")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "table" in fields


def test_notify_commit_idempotent_and_concurrent(stub) -> None:
    register(stub)
    first = stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table="tables/events", commit_id="1"))
    again = stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table="tables/events", commit_id="1"))
    assert (first.duplicate, again.duplicate) == (False, True)

    def notify(i: int) -> bool:
        return stub.NotifyCommit(tms_pb2.NotifyCommitRequest(
            table="tables/events", commit_id=str(100 + i % 20),
            stats=tms_pb2.CommitStats(files_added=1, bytes_added=10, operation="append"),
        )).duplicate

    with ThreadPoolExecutor(8) as pool:
        dups = list(pool.map(notify, range(60)))
    assert dups.count(False) == 20  # 20 distinct commits, each new exactly once
    assert stub.GetTable(tms_pb2.GetTableRequest(name="tables/events")).commit_count == 21


@pytest.mark.parametrize("req,field", [
    (tms_pb2.NotifyCommitRequest(table="tables/events"), "commit_id"),
    (tms_pb2.NotifyCommitRequest(table="", commit_id="1"), "table"),
    (tms_pb2.NotifyCommitRequest(table="events", commit_id="1"), "table"),
    (tms_pb2.NotifyCommitRequest(table="tables/events", commit_id="c" * 257), "commit_id"),
    (tms_pb2.NotifyCommitRequest(table="tables/events", commit_id="a\nb"), "commit_id"),
    (tms_pb2.NotifyCommitRequest(table="tables/events", commit_id="1",
                                 stats=tms_pb2.CommitStats(files_added=-1)), "stats.files_added"),
    (tms_pb2.NotifyCommitRequest(table="tables/events", commit_id="1",
                                 commit_time={"seconds": 10**12}), "commit_time"),
])
def test_notify_invalid(stub, req, field: str) -> None:
    register(stub)
    code, fields = error_of(lambda: stub.NotifyCommit(req))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and field in fields


def test_unknown_table_is_not_found(stub) -> None:
    for call in (
        lambda: stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table="tables/nope", commit_id="1")),
        lambda: stub.GetTable(tms_pb2.GetTableRequest(name="tables/nope")),
        lambda: stub.ListOperations(tms_pb2.ListOperationsRequest(parent="tables/nope")),
        lambda: stub.GetOperation(tms_pb2.GetOperationRequest(
            name="tables/nope/operations/1")),
    ):
        code, _ = error_of(call)
        assert code == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize("call,field", [
    (lambda s: s.ListTables(tms_pb2.ListTablesRequest(page_token="%%%not-base64")), "page_token"),
    (lambda s: s.ListTables(tms_pb2.ListTablesRequest(page_token="eyJ2IjogMX0")), "page_token"),
    (lambda s: s.ListTables(tms_pb2.ListTablesRequest(page_size=-1)), "page_size"),
    (lambda s: s.ListOperations(tms_pb2.ListOperationsRequest(parent="tables/-",
                                                              page_token="AAAA")), "page_token"),
    (lambda s: s.ListOperations(tms_pb2.ListOperationsRequest(parent="")), "parent"),
    (lambda s: s.ListOperations(tms_pb2.ListOperationsRequest(parent="tables/-", state=42)),
     "state"),
    (lambda s: s.GetOperation(tms_pb2.GetOperationRequest(name="tables/x/operations/abc")),
     "name"),
    (lambda s: s.GetTable(tms_pb2.GetTableRequest(name="")), "name"),
])
def test_list_and_get_invalid(stub, call, field: str) -> None:
    code, fields = error_of(lambda: call(stub))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and field in fields


def test_page_token_of_another_query_is_refused(stub) -> None:
    for i in range(3):
        register(stub, f"t{i}", table_name=f"t{i}")
    token = stub.ListTables(tms_pb2.ListTablesRequest(page_size=1)).next_page_token
    assert token
    code, fields = error_of(lambda: stub.ListTables(
        tms_pb2.ListTablesRequest(page_size=1, page_token=token, format="hudi")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "page_token" in fields


def test_health_and_reflection(db_dsn: str) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    from tests.helpers import wait_for

    store = PostgresStore(db_dsn)
    server = ApiServer(store, load_formats(), f"127.0.0.1:{free_port()}")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as ch:
            health = health_pb2_grpc.HealthStub(ch)
            wait_for(lambda: health.Check(health_pb2.HealthCheckRequest(
                service="tms.v1.TableManagementService")).status
                == health_pb2.HealthCheckResponse.SERVING, "SERVING")
            refl = reflection_pb2_grpc.ServerReflectionStub(ch)
            reply = next(refl.ServerReflectionInfo(iter([
                reflection_pb2.ServerReflectionRequest(list_services="")])))
            names = {s.name for s in reply.list_services_response.service}
            assert {"tms.v1.TableManagementService", "grpc.health.v1.Health"} <= names
        server.stop(0)
        assert health_pb2.HealthCheckResponse.NOT_SERVING == server.health.Check(
            health_pb2.HealthCheckRequest(), None).status
    finally:
        server.stop(0)
        store.close()


def test_tms_migrate_command(pg) -> None:
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "tms_services.cli", "migrate", "--database-url", pg.dsn]
    first = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert "applied 0001_init" in first.stdout and "applied 0002_api" in first.stdout
    second = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert "up to date" in second.stdout
    missing = subprocess.run(cmd[:4], capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin"})
    assert missing.returncode == 2 and "--database-url" in missing.stderr


@pytest.mark.parametrize("table_id", ["events\n", "Events", "e" * 64, "é"])
def test_trailing_newline_and_lookalikes_are_invalid(stub, table_id: str) -> None:
    code, fields = error_of(lambda: register(stub, table_id, create=False))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "table_id" in fields
    code, fields = error_of(lambda: stub.GetTable(tms_pb2.GetTableRequest(
        name=f"tables/{table_id}")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "name" in fields


def _catalog(stub, catalog_id: str, **fields: object) -> None:
    from dataclasses import replace

    store = stub.catalog_store
    spec = replace(stub.catalog.spec, catalog_id=catalog_id, **fields)
    assert store.catalog_create(spec) is not None


def test_registration_goes_through_the_catalog(stub) -> None:
    """NOT_FOUND for an unknown catalog, INVALID_ARGUMENT for a catalog of the wrong type,
    FAILED_PRECONDITION when the catalog does not hold the table or cannot be opened (the
    reference named, never a value), UNAVAILABLE when it cannot be reached."""
    from tms.domain import CatalogType

    code, _ = error_of(lambda: register(stub, "a", catalog="nope", create=False))
    assert code == grpc.StatusCode.NOT_FOUND
    # Hudi tables live in hadoop catalogs only (Iceberg tables in any type, hadoop included)
    code, fields = error_of(lambda: register(stub, "a", create=False, format="hudi",
                                             base_path="/tmp/t"))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["table.catalog"]
    _catalog(stub, "files", type=CatalogType.HADOOP)
    with pytest.raises(grpc.RpcError) as info:  # no HadoopCatalog table at <warehouse>/ns/events
        register(stub, "a", catalog="files")
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.RpcError) as info:
        register(stub, "a", table_name="never_created", create=False)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "does not hold 'ns.never_created'" in info.value.details()
    _catalog(stub, "locked", secrets={"jdbc.password": "env:TMS_SECRET_NOT_SET_HERE"})
    with pytest.raises(grpc.RpcError) as info:
        register(stub, "a", catalog="locked")
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "env:TMS_SECRET_NOT_SET_HERE" in info.value.details()
    dead = f"postgresql+psycopg://nobody:pw-in-uri@127.0.0.1:{free_port()}/none"
    _catalog(stub, "dead", properties={"uri": dead, "warehouse": "/tmp"})
    with pytest.raises(grpc.RpcError) as info:
        register(stub, "a", catalog="dead", create=False)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "catalogs/dead cannot be reached" in info.value.details()
    assert "pw-in-uri" not in info.value.details()
    assert stub.ListTables(tms_pb2.ListTablesRequest()).tables == []  # nothing half done


def test_list_tables_of_one_catalog(stub) -> None:
    register(stub, "a", table_name="a")
    page = stub.ListTables(tms_pb2.ListTablesRequest(catalog="cat"))
    assert [t.name for t in page.tables] == ["tables/a"]
    assert stub.ListTables(tms_pb2.ListTablesRequest(catalog="other")).tables == []
    code, fields = error_of(lambda: stub.ListTables(tms_pb2.ListTablesRequest(catalog="X!")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["catalog"]


@pytest.mark.parametrize("req,field", [
    (tms_pb2.ListHeldActionsRequest(parent="events"), "parent"),
    (tms_pb2.ListHeldActionsRequest(parent=""), "parent"),
    (tms_pb2.ListHeldActionsRequest(parent="tables/-", action="Compaction!"), "action"),
    (tms_pb2.ListHeldActionsRequest(parent="tables/-", page_size=-1), "page_size"),
    (tms_pb2.ListHeldActionsRequest(parent="tables/-", page_token="not-a-token"), "page_token"),
])
def test_list_held_actions_invalid(stub, req, field: str) -> None:
    code, fields = error_of(lambda: stub.ListHeldActions(req))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and field in fields


def test_list_held_actions_and_resume(stub, db_dsn: str) -> None:
    """A hold placed as the scheduler places it is listed, shown by ExplainTable, and released
    by ResumeTable; an unknown table is NOT_FOUND."""
    from datetime import UTC, datetime, timedelta

    register(stub)
    assert stub.ListHeldActions(tms_pb2.ListHeldActionsRequest(parent="tables/-")).holds == []
    with pytest.raises(grpc.RpcError) as e:
        stub.ListHeldActions(tms_pb2.ListHeldActionsRequest(parent="tables/nope"))
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    store = PostgresStore(db_dsn)
    try:
        pk = store.table_get("events").table.pk  # type: ignore[union-attr]
        with store._pool.connection() as conn:  # a failed operation, as an executor ends one
            conn.execute("INSERT INTO tms_operations (table_pk, action, trigger, reason, state,"
                         " max_attempts, queue, error, finished_at) VALUES (%s, 'compaction', "
                         "'policy', 'r', 'FAILED', 1, 'default', 'missing file: /x', now())",
                         (pk,))
        streak = store.hold_streaks([pk])[pk]["compaction"]
        now = datetime.now(UTC)
        assert store.hold_place(streak, 1, "1 compaction operations failed in a row", now,
                                now + timedelta(hours=1), "d")
    finally:
        store.close()
    [held] = stub.ListHeldActions(tms_pb2.ListHeldActionsRequest(parent="tables/events")).holds
    assert (held.table, held.action, held.failures) == ("tables/events", "compaction", 1)
    assert held.last_operation.startswith("tables/events/operations/")
    assert any("tms tables resume" in r for r in held.released_by)
    explained = stub.ExplainTable(tms_pb2.ExplainTableRequest(name="tables/events"))
    assert [a.hold.action for a in explained.actions if a.HasField("hold")] == ["compaction"]
    stub.ResumeTable(tms_pb2.ResumeTableRequest(name="tables/events"))
    assert stub.ListHeldActions(tms_pb2.ListHeldActionsRequest(parent="tables/-")).holds == []
