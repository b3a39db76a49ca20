"""Authentication, authorization, the API's outer bound on locations, TLS and mutual TLS."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from tests.integration.certs import make_pki
from tests.integration.test_api import error_of
from tms.api.allowlist import RegistrationAllowlist
from tms.api.auth import Authenticator
from tms.api.server import TlsConfig
from tms.v1 import tms_pb2

pytestmark = pytest.mark.integration

TOKENS = {
    "tokens": [
        {"name": "ops", "token": "admin-secret", "roles": ["admin"]},
        {"name": "dash", "token": "reader-secret", "roles": ["reader"]},
        {"name": "ingest", "token": "writer-secret", "roles": ["writer"], "tables": ["ingest.*"]},
        {"name": "team-a", "sha256": "", "roles": ["writer", "reader"], "owners": ["team-a"]},
    ]
}
TEAM_A_TOKEN = "team-a-secret"


def _auth() -> Authenticator:
    import hashlib

    TOKENS["tokens"][3]["sha256"] = hashlib.sha256(TEAM_A_TOKEN.encode()).hexdigest()
    return Authenticator.from_config(TOKENS)


def md(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


ADMIN = md("admin-secret")


@pytest.fixture
def secured(make_api, tmp_path: Path):
    return make_api(auth=_auth(), allowlist=RegistrationAllowlist(
        (str(tmp_path / "warehouse"), "s3://bucket/warehouse")))


def reg(stub, table_id: str, creds=ADMIN, create: bool = True, **over) -> tms_pb2.Table:
    name = str(over.pop("table_name", table_id.replace(".", "_")))
    return stub.RegisterTable(tms_pb2.RegisterTableRequest(
        table_id=table_id, table=stub.catalog.pb("ns", name, create=create, **over)),
        metadata=creds)


def notify(stub, table: str, creds, commit: str = "1") -> tms_pb2.NotifyCommitResponse:
    return stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table=table, commit_id=commit),
                             metadata=creds)


def test_authentication(secured) -> None:
    stub = secured.stub()
    reg(stub, "ingest.events")
    get = tms_pb2.GetTableRequest(name="tables/ingest.events")
    for creds in ((), md("wrong"), (("authorization", "Basic YWRtaW4="),),
                  (("authorization", "Bearer"),), (("authorization", "x" * 5000),)):
        code, _ = error_of(lambda c=creds: stub.GetTable(get, metadata=c))
        assert code == grpc.StatusCode.UNAUTHENTICATED
    assert stub.GetTable(get, metadata=md("reader-secret")).name == "tables/ingest.events"


def test_roles(secured) -> None:
    stub = secured.stub()
    reg(stub, "ingest.events")
    code, _ = error_of(lambda: reg(stub, "ingest.more", md("writer-secret")))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    code, _ = error_of(lambda: stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
        parent="tables/ingest.events", action="compaction"), metadata=md("writer-secret")))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    code, _ = error_of(lambda: notify(stub, "tables/ingest.events", md("reader-secret")))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert not notify(stub, "tables/ingest.events", md("writer-secret")).duplicate
    assert notify(stub, "tables/ingest.events", ADMIN).duplicate


def test_writer_scope_by_table_and_owner(secured) -> None:
    stub = secured.stub()
    reg(stub, "ingest.events", owner="team-b")
    reg(stub, "billing", owner="team-a")
    reg(stub, "hr", owner="team-b")
    writer, team_a = md("writer-secret"), md(TEAM_A_TOKEN)
    code, _ = error_of(lambda: notify(stub, "tables/billing", writer))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert not notify(stub, "tables/billing", team_a).duplicate
    code, _ = error_of(lambda: notify(stub, "tables/hr", team_a))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    code, _ = error_of(lambda: stub.GetTable(tms_pb2.GetTableRequest(name="tables/hr"),
                                             metadata=team_a))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    batch = stub.NotifyCommits(tms_pb2.NotifyCommitsRequest(commits=[
        tms_pb2.NotifyCommitRequest(table=f"tables/{t}", commit_id="9")
        for t in ("ingest.events", "billing", "hr")]), metadata=writer)
    assert [r.error.code for r in batch.results] == [
        0, grpc.StatusCode.PERMISSION_DENIED.value[0], grpc.StatusCode.PERMISSION_DENIED.value[0]]
    listed = stub.ListTables(tms_pb2.ListTablesRequest(), metadata=team_a)
    assert [t.name for t in listed.tables] == ["tables/billing"]


def test_writer_reads_the_tables_it_may_notify(secured) -> None:
    """GetTable is open to a writer for its own tables only; listing and other reads stay
    with readers."""
    stub = secured.stub()
    reg(stub, "ingest.events", owner="team-b")
    reg(stub, "billing", owner="team-a")
    writer = md("writer-secret")
    got = stub.GetTable(tms_pb2.GetTableRequest(name="tables/ingest.events"), metadata=writer)
    assert got.name == "tables/ingest.events" and got.owner == "team-b"
    for name in ("tables/billing", "tables/ingest.absent-but-in-scope"):
        code, _ = error_of(lambda n=name: stub.GetTable(tms_pb2.GetTableRequest(name=n),
                                                        metadata=writer))
        assert code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.NOT_FOUND)
    code, _ = error_of(lambda: stub.GetTable(tms_pb2.GetTableRequest(name="tables/billing"),
                                             metadata=writer))
    assert code == grpc.StatusCode.PERMISSION_DENIED  # out of scope: no existence leak
    code, _ = error_of(lambda: stub.ListTables(tms_pb2.ListTablesRequest(), metadata=writer))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    code, _ = error_of(lambda: stub.ExplainTable(tms_pb2.ExplainTableRequest(
        name="tables/ingest.events"), metadata=writer))
    assert code == grpc.StatusCode.PERMISSION_DENIED


@pytest.mark.parametrize("base_path", ["s3://bucket/warehouse/../../etc",
                                       "/lake/%252e%252e/etc", "ftp://host/x"])
def test_bad_base_path_is_invalid(secured, base_path: str) -> None:
    got, fields = error_of(lambda: reg(secured.stub(), "t1", create=False, base_path=base_path))
    assert got == grpc.StatusCode.INVALID_ARGUMENT and "table.base_path" in fields


def test_outer_bound_holds_whatever_a_catalog_allows(secured, db_dsn: str,
                                                    tmp_path: Path) -> None:
    """A catalog that allows more than the API's --allowed-locations (made behind
    CreateCatalog's back) still cannot place a table outside the API's bound."""
    from tests.helpers import sql_catalog

    stub = secured.stub()
    stub.catalog = sql_catalog(secured.store, db_dsn, tmp_path / "elsewhere", "wide",
                               allowed_locations=("/",))
    with pytest.raises(grpc.RpcError) as info:
        reg(stub, "t1")
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "--allowed-locations" in info.value.details()
    assert reg(secured.stub(), "t2").name == "tables/t2"


def test_probes_need_no_token_and_reflection_can_be_off(make_api) -> None:
    on = make_api(auth=_auth())
    with grpc.insecure_channel(on.address) as ch:
        status = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest())
        assert status.status in (health_pb2.HealthCheckResponse.SERVING,
                                 health_pb2.HealthCheckResponse.NOT_SERVING)
        reply = next(reflection_pb2_grpc.ServerReflectionStub(ch).ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
        assert reply.list_services_response.service
    off = make_api(auth=_auth(), reflection_enabled=False)
    with grpc.insecure_channel(off.address) as ch, pytest.raises(grpc.RpcError) as info:
        next(reflection_pb2_grpc.ServerReflectionStub(ch).ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED


def _secure_channel(address: str, ca: Path, client=None) -> grpc.Channel:
    creds = grpc.ssl_channel_credentials(
        root_certificates=ca.read_bytes(),
        private_key=client.key.read_bytes() if client else None,
        certificate_chain=client.cert.read_bytes() if client else None)
    return grpc.secure_channel(address, creds)


LIST = tms_pb2.ListTablesRequest()


def test_tls(make_api, tmp_path: Path) -> None:
    ca, server, _ = make_pki(tmp_path)
    api = make_api(tls=TlsConfig(server.cert, server.key))
    with _secure_channel(api.address, ca.cert) as ch:
        assert api.stub(ch).ListTables(LIST, timeout=10).tables == []
    with grpc.insecure_channel(api.address) as ch, pytest.raises(grpc.RpcError) as info:
        api.stub(ch).ListTables(LIST, timeout=5)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE


def test_mutual_tls(make_api, tmp_path: Path) -> None:
    ca, server, client = make_pki(tmp_path)
    api = make_api(tls=TlsConfig(server.cert, server.key, ca.cert))
    with _secure_channel(api.address, ca.cert, client) as ch:
        assert api.stub(ch).ListTables(LIST, timeout=10).tables == []
    with _secure_channel(api.address, ca.cert) as ch, pytest.raises(grpc.RpcError) as info:
        api.stub(ch).ListTables(LIST, timeout=5)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize("config,message", [
    ({}, "expected"),
    ({"tokens": [{"token": "x", "roles": []}]}, "roles"),
    ({"tokens": [{"token": "x", "roles": ["root"]}]}, "root"),
    ({"tokens": [{"token": "x", "sha256": "ab", "roles": ["admin"]}]}, "exactly one"),
    ({"tokens": [{"sha256": "abcd", "roles": ["admin"]}]}, "64 hex"),
])
def test_bad_tokens_config_is_refused(config, message) -> None:
    with pytest.raises(ValueError, match=message):
        Authenticator.from_config(config)


def test_queue_limits_need_an_unscoped_admin(secured) -> None:
    stub = secured.stub()
    req = tms_pb2.UpdateQueueRequest(name="queues/batch", max_running=1)
    for creds in (md("reader-secret"), md("writer-secret"), md(TEAM_A_TOKEN)):
        with pytest.raises(grpc.RpcError) as info:
            stub.UpdateQueue(req, metadata=creds)
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert stub.UpdateQueue(req, metadata=ADMIN).max_running == 1
    listed = stub.ListQueues(tms_pb2.ListQueuesRequest(), metadata=md("reader-secret"))
    assert [q.name for q in listed.queues] == ["queues/batch"]
