"""A hostile table owner against registration, on the real processes (tms-api and a
tms-scheduler as subprocesses, real PostgreSQL, real pyiceberg SQL catalogs).

The threat: whoever registers a table chooses where maintenance will delete files. Before
catalogs, a registration carried its own catalog properties and nothing checked the table's
real location, so an owner could point TMS at any directory (or at another team's table, under
a second id, to have two schedules rewrite it). Each test below is one way of trying.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from tests.helpers import wait_for
from tms.domain import CatalogSpec, CatalogType
from tms.local import iceberg_data
from tms.local.ports import free_port
from tms.local.stack import LocalStack
from tms.storage.postgres import PostgresStore
from tms.v1 import tms_pb2, tms_pb2_grpc

pytestmark = pytest.mark.integration

PASSWORD = "sec-Pa55word-never-shown"
SECRET_ENV = "TMS_SECRET_SEC_LAKE_PW"
TOKENS = {"tokens": [
    {"name": "ops", "token": "t-admin", "roles": ["admin"]},
    {"name": "dash", "token": "t-reader", "roles": ["reader"]},
    {"name": "team-a-owner", "token": "t-owner-a", "roles": ["owner"], "owners": ["team-a"]},
    {"name": "team-b-owner", "token": "t-owner-b", "roles": ["owner"], "owners": ["team-b"]},
    {"name": "pipeline", "token": "t-pipeline", "roles": ["owner"]},
]}
ADMIN, READER, OWNER_A, OWNER_B, PIPELINE = (
    (("authorization", f"Bearer {t}"),) for t in
    ("t-admin", "t-reader", "t-owner-a", "t-owner-b", "t-pipeline"))
CALL_TIMEOUT_S = 30


@dataclass
class World:
    root: Path
    stack: LocalStack
    stub: tms_pb2_grpc.TableManagementServiceStub
    channel: grpc.Channel
    lake: Any  # pyiceberg catalog "lake"
    alias: Any  # pyiceberg catalog "lake_alias" on the same database

    @property
    def outside(self) -> Path:
        return self.root / "outside"


def _sql_props(dsn: str, warehouse: Path) -> dict[str, str]:
    return iceberg_data.sql_catalog_properties(dsn, warehouse.as_uri())


@pytest.fixture(scope="module")
def world(tms_home: Path) -> Iterator[World]:
    root = Path(tempfile.mkdtemp(prefix="tms-sec-"))
    root.chmod(0o755)
    for d in ("lake", "hudi", "outside"):
        (root / d).mkdir()
    tokens = root / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    old = os.environ.get(SECRET_ENV)
    os.environ[SECRET_ENV] = PASSWORD  # the services' environment, as a Kubernetes Secret
    stack = LocalStack(root / "stack", tms_home, api_args=["--tokens-file", str(tokens)],
                       scheduler_args=["--poll-interval-s", "0.2", "--shard-settle-s", "0.5"])
    channel = None
    try:
        stack.start_servers()
        assert stack.postgres is not None
        dsn = stack.postgres.create_database("iceberg_sec")
        props = _sql_props(dsn, root / "lake")
        uri = props["uri"]  # user, no password: the password is a secret reference
        store = PostgresStore(stack.database_url)
        try:
            for catalog_id in ("lake", "lake_alias"):
                store.catalog_create(CatalogSpec(
                    catalog_id, CatalogType.SQL,
                    properties={"uri": uri, "warehouse": (root / "lake").as_uri()},
                    secrets={"jdbc.password": f"env:{SECRET_ENV}"},
                    allowed_locations=(str(root / "lake"),), allowed_owners=("team-a",)))
            store.catalog_create(CatalogSpec("files", CatalogType.HADOOP,
                                             allowed_locations=(str(root / "hudi"),),
                                             allowed_tokens=("pipeline",)))
            dead = f"postgresql+psycopg://iceberg@127.0.0.1:{free_port()}/nothing"
            store.catalog_create(CatalogSpec("dead", CatalogType.SQL,
                                             properties={"uri": dead, "warehouse": "/tmp"},
                                             secrets={"jdbc.password": f"env:{SECRET_ENV}"},
                                             allowed_locations=("/tmp",)))
        finally:
            store.close()
        stack.start_api()
        stack.start_scheduler(0)
        channel = grpc.insecure_channel(stack.api_address)
        yield World(root, stack, tms_pb2_grpc.TableManagementServiceStub(channel), channel,
                    iceberg_data.load_catalog("lake", props),
                    iceberg_data.load_catalog("lake_alias", props))
    finally:
        if channel is not None:
            channel.close()
        stack.stop()
        if old is None:
            os.environ.pop(SECRET_ENV, None)
        else:
            os.environ[SECRET_ENV] = old
        shutil.rmtree(root, ignore_errors=True)


def table(world: World, name: str, location: Path | None = None, catalog: Any = None) -> Any:
    """Create ``ns.<name>`` in the lake catalog (at ``location`` when given)."""
    cat = catalog or world.lake
    cat.create_namespace_if_not_exists("ns")
    kwargs = {"location": location.as_uri()} if location else {}
    return cat.create_table(f"ns.{name}", schema=iceberg_data.SCHEMA, **kwargs)


def register(world: World, table_id: str, name: str, creds: Any = ADMIN,
             catalog: str = "lake", **fields: Any) -> tms_pb2.Table:
    body = tms_pb2.Table(format=fields.pop("format", "iceberg"), catalog=catalog,
                         namespace=fields.pop("namespace", "ns"), table_name=name, **fields)
    return world.stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=body),
                                    metadata=creds, timeout=CALL_TIMEOUT_S)


def refused(call: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value


def hudi_dir(path: Path) -> Path:
    (path / ".hoodie").mkdir(parents=True)
    (path / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=t\n")
    return path


# one physical table, one registration ---------------------------------------------------------
def test_same_catalog_and_identifier_under_a_second_id(world: World) -> None:
    table(world, "dup")
    register(world, "dup-1", "dup")
    err = refused(lambda: register(world, "dup-2", "dup"))
    assert err.code() == grpc.StatusCode.ALREADY_EXISTS and "tables/dup-1" in err.details()


def test_second_catalog_on_the_same_database(world: World) -> None:
    """The same metadata registered in another catalog (same database, another name): the
    identifier differs, the location does not."""
    original = table(world, "shared")
    register(world, "shared-1", "shared")
    world.alias.create_namespace_if_not_exists("ns")
    world.alias.register_table("ns.shared_again", original.metadata_location)
    err = refused(lambda: register(world, "shared-2", "shared_again", catalog="lake_alias"))
    assert err.code() == grpc.StatusCode.ALREADY_EXISTS and "tables/shared-1" in err.details()


def test_location_inside_or_containing_another_tables(world: World) -> None:
    outer = table(world, "outer", world.root / "lake" / "box")
    register(world, "outer", "outer")
    table(world, "inner", Path(outer.location().removeprefix("file://")) / "data" / "inner")
    err = refused(lambda: register(world, "inner", "inner"))
    assert err.code() == grpc.StatusCode.ALREADY_EXISTS and "tables/outer" in err.details()
    table(world, "deep", world.root / "lake" / "crate" / "deep")
    register(world, "deep", "deep")
    table(world, "crate", world.root / "lake" / "crate")  # would own deep's files
    err = refused(lambda: register(world, "crate", "crate"))
    assert err.code() == grpc.StatusCode.ALREADY_EXISTS and "tables/deep" in err.details()
    table(world, "box2", world.root / "lake" / "box2")  # a neighbour is not inside
    assert register(world, "box2", "box2").location == str(world.root / "lake" / "box2")


# the real location, not the one in the request ------------------------------------------------
def test_real_location_outside_the_catalogs_allowed_locations(world: World) -> None:
    victim = world.outside / "victim"
    table(world, "escape", victim)  # the catalog says the table lives outside
    err = refused(lambda: register(world, "escape", "escape"))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    assert str(victim) in err.details() and str(world.root / "lake") in err.details()
    listed = world.stub.ListTables(tms_pb2.ListTablesRequest(), metadata=ADMIN,
                                   timeout=CALL_TIMEOUT_S)
    assert "tables/escape" not in [t.name for t in listed.tables]


def test_symlink_inside_an_allowed_prefix_pointing_outside(world: World) -> None:
    (world.outside / "through-link").mkdir()
    link = world.root / "lake" / "link"
    link.symlink_to(world.outside / "through-link")
    table(world, "linked", link / "t")
    err = refused(lambda: register(world, "linked", "linked"))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    assert str(world.outside / "through-link" / "t") in err.details()  # symlink resolved


def test_hudi_base_path_through_a_symlink(world: World) -> None:
    hudi_dir(world.outside / "hudi-victim")
    (world.root / "hudi" / "sneaky").symlink_to(world.outside / "hudi-victim")
    err = refused(lambda: register(world, "h-sneaky", "", catalog="files", format="hudi",
                                   namespace="", base_path=str(world.root / "hudi" / "sneaky")))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    for bad in (f"{world.root}/hudi/../outside/hudi-victim",
                f"{world.root}/hudi/%252e%252e/outside/hudi-victim"):
        err = refused(lambda b=bad: register(world, "h-dots", "", catalog="files",
                                             format="hudi", namespace="", base_path=b))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    real = hudi_dir(world.root / "hudi" / "real")
    (world.root / "hudi" / "alias").symlink_to(real)
    got = register(world, "h-real", "", catalog="files", format="hudi", namespace="",
                   base_path=str(real))
    assert got.location == str(real)
    err = refused(lambda: register(world, "h-alias", "", catalog="files", format="hudi",
                                   namespace="", base_path=str(world.root / "hudi" / "alias")))
    assert err.code() == grpc.StatusCode.ALREADY_EXISTS and "tables/h-real" in err.details()
    err = refused(lambda: register(world, "h-none", "", catalog="files", format="hudi",
                                   namespace="", base_path=str(world.root / "hudi" / "empty")))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION  # no Hudi table there


# who may register -----------------------------------------------------------------------------
def test_owner_tokens_register_only_where_admitted(world: World) -> None:
    for name in ("own_a", "own_b", "own_c"):
        table(world, name)
    err = refused(lambda: register(world, "own-b", "own_b", OWNER_B, owner="team-b"))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED  # lake admits team-a only
    err = refused(lambda: register(world, "own-x", "own_b", OWNER_A, owner="team-b"))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED  # another owner's table
    err = refused(lambda: register(world, "own-y", "own_b", OWNER_A, owner=""))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED  # an ownerless table
    err = refused(lambda: register(world, "own-p", "own_c", PIPELINE, owner="team-a"))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED  # lake does not name the token
    err = refused(lambda: register(world, "own-r", "own_c", READER, owner="team-a"))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED  # readers never register
    assert register(world, "own-a", "own_a", OWNER_A, owner="team-a").owner == "team-a"
    hudi_dir(world.root / "hudi" / "piped")
    got = register(world, "piped", "", PIPELINE, catalog="files", format="hudi",
                   namespace="", base_path=str(world.root / "hudi" / "piped"), owner="anyone")
    assert got.name == "tables/piped"  # files names the pipeline token
    # the owner token manages its own table, not another's
    world.stub.PauseTable(tms_pb2.PauseTableRequest(name="tables/own-a"), metadata=OWNER_A,
                          timeout=CALL_TIMEOUT_S)
    err = refused(lambda: world.stub.PauseTable(tms_pb2.PauseTableRequest(name="tables/own-a"),
                                                metadata=OWNER_B, timeout=CALL_TIMEOUT_S))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED


def test_inline_catalog_properties_are_no_longer_accepted(world: World) -> None:
    """An old client's catalog_properties (field 7) are refused, not silently dropped."""
    entry = b"\x0a\x03uri\x12\x1bpostgresql+psycopg://x@h/db"
    body = tms_pb2.Table(format="iceberg", catalog="lake", namespace="ns",
                         table_name="dup").SerializeToString()
    body += b"\x3a" + bytes([len(entry)]) + entry
    raw = (tms_pb2.RegisterTableRequest(table_id="inline").SerializeToString()
           + b"\x12" + bytes([len(body)]) + body)
    call = world.channel.unary_unary("/tms.v1.TableManagementService/RegisterTable",
                                     request_serializer=lambda b: b,
                                     response_deserializer=tms_pb2.Table.FromString)
    err = refused(lambda: call(raw, metadata=ADMIN, timeout=CALL_TIMEOUT_S))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = rpc_status.from_call(err)
    fields = []
    for detail in status.details if status else []:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            br = error_details_pb2.BadRequest()
            detail.Unpack(br)
            fields += [f.field for f in br.field_violations]
    assert fields == ["table.catalog_properties"]


# secrets ----------------------------------------------------------------------------------------
def test_no_rpc_shows_a_secret_to_a_reader(world: World) -> None:
    table(world, "visible")
    register(world, "visible", "visible")
    world.stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table="tables/visible", commit_id="1"),
                            metadata=ADMIN, timeout=CALL_TIMEOUT_S)
    explain = tms_pb2.ExplainTableRequest(name="tables/visible")

    def explained() -> tms_pb2.ExplainTableResponse | None:
        r = world.stub.ExplainTable(explain, metadata=READER, timeout=CALL_TIMEOUT_S)
        return r if r.actions and all(a.decided for a in r.actions) else None

    decided = wait_for(explained, "the scheduler to decide for the table", 120)
    assert decided.actions and "no operations" not in str(decided)  # the catalog was opened
    seen = [decided,
            world.stub.GetTable(tms_pb2.GetTableRequest(name="tables/visible"),
                                metadata=READER, timeout=CALL_TIMEOUT_S),
            world.stub.ListTables(tms_pb2.ListTablesRequest(), metadata=READER,
                                  timeout=CALL_TIMEOUT_S),
            world.stub.ListOperations(tms_pb2.ListOperationsRequest(parent="tables/-"),
                                      metadata=READER, timeout=CALL_TIMEOUT_S)]
    err = refused(lambda: register(world, "dead", "x", catalog="dead"))
    assert err.code() == grpc.StatusCode.UNAVAILABLE  # the catalog cannot be reached
    for shown in (*map(str, seen), err.details()):
        assert PASSWORD not in shown
    for log in (world.stack.state_dir / "logs").glob("*.log"):
        assert PASSWORD not in log.read_text(errors="replace"), log.name
