"""Bad input refused at the door, on the real tms-api process: a commit id the table's format
cannot have, a clustering with no order to cluster by, policy keys that contradict each other.
Each is INVALID_ARGUMENT naming the field when it is sent, never recorded, queued or stored
to fail later."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from google.protobuf import field_mask_pb2
from google.rpc import code_pb2, error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pyiceberg.transforms import IdentityTransform

from tests.helpers import SqlCatalog, sql_catalog, wait_for
from tests.integration.test_api import error_of
from tms.domain import CatalogSpec, CatalogType
from tms.local.ports import free_port
from tms.local.postgres import LocalPostgres
from tms.storage.postgres import PostgresStore
from tms.v1 import tms_pb2, tms_pb2_grpc

pytestmark = pytest.mark.integration

MIB = 1024 * 1024
GIB = 1024 * MIB
HUDI_CATALOG = "files"
SMALL, TARGET = "compaction.small-file-bytes", "compaction.target-file-size-bytes"


@dataclass
class Door:
    stub: tms_pb2_grpc.TableManagementServiceStub
    catalog: SqlCatalog
    hudi_root: Path
    dsn: str


@pytest.fixture(scope="module")
def door(pg_server: LocalPostgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    """The real tms-api process without tokens (every caller an admin: the checks here are
    about values, not about who sends them) on a fresh database with an Iceberg SQL catalog
    ``cat`` and a file-system catalog ``files`` for Hudi base paths."""
    from tms.storage.migrate import migrate

    dsn = pg_server.create_database(f"door{os.getpid()}")
    migrate(dsn)
    tmp = tmp_path_factory.mktemp("door")
    store = PostgresStore(dsn)
    try:
        catalog = sql_catalog(store, dsn, tmp / "warehouse")
        hudi_root = tmp / "hudi"
        hudi_root.mkdir()
        store.catalog_create(CatalogSpec(HUDI_CATALOG, CatalogType.HADOOP,
                                         allowed_locations=(str(hudi_root),)))
    finally:
        store.close()
    address = f"127.0.0.1:{free_port()}"
    log_path = tmp / "api.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "tms_services.api", "--listen", address],
                                env=dict(os.environ, TMS_DATABASE_URL=dsn),
                                stdout=log, stderr=subprocess.STDOUT)
        channel = grpc.insecure_channel(address)
        try:
            health = health_pb2_grpc.HealthStub(channel)

            def serving() -> bool:
                assert proc.poll() is None, log_path.read_text()
                try:
                    return health.Check(health_pb2.HealthCheckRequest(), timeout=2).status \
                        == health_pb2.HealthCheckResponse.SERVING
                except grpc.RpcError:
                    return False

            wait_for(serving, "the API process to serve")
            yield Door(tms_pb2_grpc.TableManagementServiceStub(channel), catalog, hudi_root,
                       dsn)
        finally:
            channel.close()
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _iceberg(door: Door, table_id: str, policy: dict[str, str] | None = None,
             sorted_by_id: bool = False) -> tms_pb2.Table:
    name = table_id.replace("-", "_")
    if sorted_by_id:
        with door.catalog.table("ns", name).update_sort_order() as order:
            order.asc("id", IdentityTransform())
    body = door.catalog.pb("ns", name, policy=policy or {})
    return door.stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=body),
                                   timeout=30)


def _hudi(door: Door, table_id: str) -> tms_pb2.Table:
    base = door.hudi_root / table_id
    (base / ".hoodie").mkdir(parents=True)
    (base / ".hoodie" / "hoodie.properties").write_text(
        f"hoodie.table.name={table_id}\nhoodie.table.type=MERGE_ON_READ\n")
    return door.stub.RegisterTable(tms_pb2.RegisterTableRequest(
        table_id=table_id, table=tms_pb2.Table(format="hudi", catalog=HUDI_CATALOG,
                                               base_path=str(base))), timeout=30)


def _notify(door: Door, table_id: str, commit_id: str) -> tms_pb2.NotifyCommitResponse:
    return door.stub.NotifyCommit(tms_pb2.NotifyCommitRequest(
        table=f"tables/{table_id}", commit_id=commit_id), timeout=10)


def _stats(door: Door, table_id: str) -> tuple[int, str]:
    t = door.stub.GetTable(tms_pb2.GetTableRequest(name=f"tables/{table_id}"), timeout=10)
    return t.commit_count, t.last_commit_id


BAD_ICEBERG_IDS = ["abc", "+5", "05", "-0", " 5", "5 ", "0x10", "1e3", "5.0", "--5",
                   "9223372036854775808", "-9223372036854775809", "\u0665", "١٢٣"]
BAD_HUDI_IDS = ["abc", "2024050109300", "202405010930001", "20241301093000",
                "20240230093000", "20240501250000", "00000000000000", "3051729675574597004",
                "2024050109300012", "+20240501093000", "2024-05-01T09:30"]


def test_an_iceberg_table_refuses_a_commit_id_that_is_no_snapshot_id(door: Door) -> None:
    _iceberg(door, "ice-commits")
    for bad in BAD_ICEBERG_IDS:
        code, fields = error_of(lambda b=bad: _notify(door, "ice-commits", b))
        assert code == grpc.StatusCode.INVALID_ARGUMENT, bad
        assert fields == ["commit_id"], (bad, fields)
    assert _stats(door, "ice-commits") == (0, "")
    for good in ("3051729675574597004", "1", "-42", "9223372036854775807", "20240501093000"):
        assert not _notify(door, "ice-commits", good).duplicate
    assert _stats(door, "ice-commits") == (5, "20240501093000")
    assert _notify(door, "ice-commits", "1").duplicate  # a replay is still a replay


def test_a_hudi_table_refuses_a_commit_id_that_is_no_instant_time(door: Door) -> None:
    _hudi(door, "hudi-commits")
    for bad in BAD_HUDI_IDS:
        code, fields = error_of(lambda b=bad: _notify(door, "hudi-commits", b))
        assert code == grpc.StatusCode.INVALID_ARGUMENT, bad
        assert fields == ["commit_id"], (bad, fields)
    assert _stats(door, "hudi-commits") == (0, "")
    for good in ("20240501093000", "20240229235959999"):
        assert not _notify(door, "hudi-commits", good).duplicate
    assert _stats(door, "hudi-commits") == (2, "20240229235959999")


def test_a_batch_answers_each_refused_commit_by_its_index(door: Door) -> None:
    _iceberg(door, "ice-batch")
    _hudi(door, "hudi-batch")
    commits = [("ice-batch", "101"), ("ice-batch", "abc"), ("hudi-batch", "20240501093000"),
               ("hudi-batch", "101"), ("ice-batch", "20240501093000"), ("nobody", "abc")]
    out = door.stub.NotifyCommits(tms_pb2.NotifyCommitsRequest(commits=[
        tms_pb2.NotifyCommitRequest(table=f"tables/{t}", commit_id=c) for t, c in commits]),
        timeout=10).results
    codes = [r.error.code for r in out]
    assert codes == [code_pb2.OK, code_pb2.INVALID_ARGUMENT, code_pb2.OK,
                     code_pb2.INVALID_ARGUMENT, code_pb2.OK, code_pb2.NOT_FOUND]
    for i in (1, 3):
        br = error_details_pb2.BadRequest()
        assert out[i].error.details[0].Unpack(br)
        assert [f.field for f in br.field_violations] == [f"commits[{i}].commit_id"]
        assert out[i].error.message.startswith(f"commits[{i}].commit_id: ")
    assert _stats(door, "ice-batch") == (2, "20240501093000")
    assert _stats(door, "hudi-batch") == (1, "20240501093000")


def _trigger(door: Door, table_id: str, action: str, params: dict[str, str] | None = None
             ) -> tms_pb2.Operation:
    return door.stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
        parent=f"tables/{table_id}", action=action, params=params or {}), timeout=30)


def _queued(door: Door, table_id: str) -> list[tms_pb2.Operation]:
    return list(door.stub.ListOperations(tms_pb2.ListOperationsRequest(
        parent=f"tables/{table_id}"), timeout=10).operations)


def test_clustering_without_an_order_is_refused_when_triggered(door: Door) -> None:
    _iceberg(door, "unsorted")
    code, fields = error_of(lambda: _trigger(door, "unsorted", "clustering"))
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["params[sort-order]"])
    code, fields = error_of(lambda: _trigger(door, "unsorted", "clustering", {
        "sort-order": "id", "zorder-columns": "id,kind"}))
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["params[zorder-columns]"])
    assert _queued(door, "unsorted") == []
    op = _trigger(door, "unsorted", "clustering", {"sort-order": "id DESC"})
    assert dict(op.params) == {"sort-order": "id DESC"}


def test_clustering_takes_its_order_from_the_policy_or_the_table(door: Door) -> None:
    _iceberg(door, "by-policy", policy={"clustering.zorder-columns": "id,kind"})
    op = _trigger(door, "by-policy", "clustering")
    assert dict(op.params) == {"zorder-columns": "id,kind"}
    _iceberg(door, "by-table", sorted_by_id=True)
    op = _trigger(door, "by-table", "clustering")
    assert op.state == tms_pb2.Operation.QUEUED and dict(op.params) == {}


def test_trigger_refuses_sizes_iceberg_would_refuse_at_run_time(door: Door) -> None:
    _iceberg(door, "sizes")
    for params, field in (({"min-file-size-bytes": str(64 * MIB),
                            "target-file-size-bytes": str(32 * MIB)},
                           "params[min-file-size-bytes]"),
                          ({"target-file-size-bytes": str(64 * MIB),
                            "max-file-size-bytes": str(64 * MIB)},
                           "params[target-file-size-bytes]")):
        code, fields = error_of(lambda p=params: _trigger(door, "sizes", "compaction", p))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and field in fields, (params, fields)
    assert _queued(door, "sizes") == []


def test_policy_pairs_are_checked_against_each_other(door: Door) -> None:
    # both set by the table: refused naming the pair
    def call() -> tms_pb2.Table:
        return _iceberg(door, "pair1", policy={SMALL: str(GIB), TARGET: str(MIB)})

    code, fields = error_of(call)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == [f"table.policy[{SMALL}]"]
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert SMALL in info.value.details() and TARGET in info.value.details()
    # one side from the schema's default (small files 16 MiB) over a 1 MiB target
    code, fields = error_of(lambda: _iceberg(door, "pair2", policy={TARGET: str(MIB)}))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == [f"table.policy[{TARGET}]"]
    # consistent: accepted; an update that breaks the pair is refused and changes nothing
    _iceberg(door, "pair3", policy={SMALL: str(MIB // 2), TARGET: str(MIB)})
    code, fields = error_of(lambda: door.stub.UpdateTable(tms_pb2.UpdateTableRequest(
        table=tms_pb2.Table(name="tables/pair3", policy={SMALL: str(GIB), TARGET: str(MIB)}),
        update_mask=field_mask_pb2.FieldMask(paths=["policy"])), timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == [f"table.policy[{SMALL}]"]
    got = door.stub.GetTable(tms_pb2.GetTableRequest(name="tables/pair3"), timeout=10)
    assert dict(got.policy) == {SMALL: str(MIB // 2), TARGET: str(MIB)}


def test_catalog_default_policy_pairs_and_the_policy_in_force(door: Door) -> None:
    cat = door.stub.GetCatalog(tms_pb2.GetCatalogRequest(name="catalogs/cat"), timeout=10)
    mask = field_mask_pb2.FieldMask(paths=["default_policy"])
    code, fields = error_of(lambda: door.stub.UpdateCatalog(tms_pb2.UpdateCatalogRequest(
        catalog=tms_pb2.Catalog(name=cat.name, default_policy={TARGET: str(MIB)}),
        update_mask=mask), timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert fields == [f"catalog.default_policy[{TARGET}]"], fields
    # a catalog default that holds by itself, and a table whose own key breaks the pair with it
    door.stub.UpdateCatalog(tms_pb2.UpdateCatalogRequest(
        catalog=tms_pb2.Catalog(name=cat.name, default_policy={TARGET: str(32 * MIB)}),
        update_mask=mask), timeout=10)
    try:
        code, fields = error_of(lambda: _iceberg(door, "in-force", policy={SMALL: str(GIB)}))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == [
            f"table.policy[{SMALL}]"]
        _iceberg(door, "in-force-ok", policy={SMALL: str(8 * MIB)})
        # a default that holds alone but breaks a table's own key: refused, naming the table
        with pytest.raises(grpc.RpcError) as info:
            door.stub.UpdateCatalog(tms_pb2.UpdateCatalogRequest(
                catalog=tms_pb2.Catalog(name=cat.name, default_policy={
                    SMALL: str(MIB), TARGET: str(4 * MIB)}), update_mask=mask), timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "tables/in-force-ok" in info.value.details()
        got = door.stub.GetCatalog(tms_pb2.GetCatalogRequest(name=cat.name), timeout=10)
        assert dict(got.default_policy) == {TARGET: str(32 * MIB)}
    finally:
        door.stub.UpdateCatalog(tms_pb2.UpdateCatalogRequest(
            catalog=tms_pb2.Catalog(name=cat.name, default_policy={}), update_mask=mask),
            timeout=10)


def _state(door: Door, table_id: str) -> tuple[int, str]:
    t = door.stub.GetTable(tms_pb2.GetTableRequest(name=f"tables/{table_id}"), timeout=10)
    return t.state, t.state_reason


def test_resume_cannot_make_a_missing_table_active(door: Door) -> None:
    created = _iceberg(door, "gone")
    store = PostgresStore(door.dsn)
    try:
        pk = store.table_get("gone").table.pk  # type: ignore[union-attr]
        store.table_mark_missing("cat", [pk], "not in the catalog's listing")
    finally:
        store.close()
    assert created.state == tms_pb2.Table.ACTIVE
    for rpc in (door.stub.ResumeTable, door.stub.PauseTable):
        with pytest.raises(grpc.RpcError) as info:
            rpc(tms_pb2.ResumeTableRequest(name="tables/gone") if rpc is door.stub.ResumeTable
                else tms_pb2.PauseTableRequest(name="tables/gone"), timeout=10)
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "MISSING" in info.value.details() and "discovery" in info.value.details()
    assert _state(door, "gone")[0] == tms_pb2.Table.MISSING


def test_shrinking_allowed_locations_pauses_the_tables_left_outside(door: Door) -> None:
    inside, outside = _hudi(door, "kept"), _hudi(door, "left-out")
    queued = _trigger(door, "left-out", "clean")
    mask = field_mask_pb2.FieldMask(paths=["allowed_locations"])

    def allow(*where: str) -> tms_pb2.Catalog:
        return door.stub.UpdateCatalog(tms_pb2.UpdateCatalogRequest(
            catalog=tms_pb2.Catalog(name=f"catalogs/{HUDI_CATALOG}", allowed_locations=where),
            update_mask=mask), timeout=30)

    allow(inside.base_path, str(door.hudi_root / "elsewhere"))
    try:
        assert _state(door, "kept") == (tms_pb2.Table.ACTIVE, "")
        state, reason = _state(door, "left-out")
        assert state == tms_pb2.Table.PAUSED
        assert f"catalogs/{HUDI_CATALOG} no longer allows its location" in reason
        assert outside.location in reason
        op = door.stub.GetOperation(tms_pb2.GetOperationRequest(name=queued.name), timeout=10)
        assert op.state == tms_pb2.Operation.CANCELLED and op.error == reason
        with pytest.raises(grpc.RpcError) as info:
            door.stub.ResumeTable(tms_pb2.ResumeTableRequest(name="tables/left-out"),
                                  timeout=10)
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "no longer allows its location" in info.value.details()
    finally:
        allow(str(door.hudi_root))
    resumed = door.stub.ResumeTable(tms_pb2.ResumeTableRequest(name="tables/left-out"),
                                    timeout=10)
    assert (resumed.state, resumed.state_reason) == (tms_pb2.Table.ACTIVE, "")
    paused = door.stub.PauseTable(tms_pb2.PauseTableRequest(name="tables/kept"), timeout=10)
    assert paused.state_reason == "paused by anonymous" or paused.state_reason.startswith(
        "paused by ")
