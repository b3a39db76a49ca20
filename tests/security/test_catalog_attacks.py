"""Attacks on the catalog API: whoever manages catalogs decides which credentials TMS uses and
where it reads and deletes files, so only an unscoped admin may; and a secret must never be
stored in clear, accepted as anything but a reference, or shown by any RPC, CLI view or log.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import field_mask_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from tests.helpers import wait_for
from tests.integration.conftest import make_api  # noqa: F401 (fixture)
from tests.integration.test_api import error_of
from tests.integration.test_api_catalogs import PG_URI, catalog, create
from tms.api.auth import Authenticator
from tms.domain import TableSpec
from tms.local.ports import free_port
from tms.storage.postgres import PostgresStore
from tms.v1 import tms_pb2, tms_pb2_grpc
from tms_services.cli import run

pytestmark = pytest.mark.integration

TOKENS = {"tokens": [
    {"name": "ops", "token": "admin-token", "roles": ["admin"]},
    {"name": "dash", "token": "reader-token", "roles": ["reader"]},
    {"name": "ingest", "token": "writer-token", "roles": ["writer"]},
    {"name": "team-ops", "token": "scoped-admin-tables", "roles": ["admin"],
     "tables": ["team_a.*"]},
    {"name": "owner-ops", "token": "scoped-admin-owners", "roles": ["admin", "reader"],
     "owners": ["team-a"]},
    {"name": "team-a", "token": "owner-token", "roles": ["owner"], "owners": ["team-a"]},
    {"name": "any-owner", "token": "unscoped-owner-token", "roles": ["owner"]},
]}
DENIED = ("reader-token", "writer-token", "scoped-admin-tables", "scoped-admin-owners",
          "owner-token", "unscoped-owner-token")
PROC_TIMEOUT_S = 60


def md(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


ADMIN = md("admin-token")


@pytest.fixture
def open_api(make_api):  # noqa: F811 (the fixture imported above)
    """An API without tokens (every caller is an admin): for the validation attacks."""
    return make_api()


@pytest.fixture
def secured(make_api):  # noqa: F811 (the fixture imported above)
    return make_api(auth=Authenticator.from_config(TOKENS))


def _every_rpc(stub) -> dict[str, Callable[[tuple], object]]:
    mask = field_mask_pb2.FieldMask(paths=["properties"])
    return {
        "CreateCatalog": lambda m: stub.CreateCatalog(tms_pb2.CreateCatalogRequest(
            catalog_id="evil", catalog=catalog()), metadata=m),
        "GetCatalog": lambda m: stub.GetCatalog(tms_pb2.GetCatalogRequest(
            name="catalogs/lake"), metadata=m),
        "ListCatalogs": lambda m: stub.ListCatalogs(tms_pb2.ListCatalogsRequest(), metadata=m),
        "UpdateCatalog": lambda m: stub.UpdateCatalog(tms_pb2.UpdateCatalogRequest(
            catalog=catalog(name="catalogs/lake", properties={"uri": PG_URI}),
            update_mask=mask), metadata=m),
        "DeleteCatalog": lambda m: stub.DeleteCatalog(tms_pb2.DeleteCatalogRequest(
            name="catalogs/lake"), metadata=m),
    }


def test_only_an_unscoped_admin_manages_catalogs(secured) -> None:
    stub = secured.stub()
    create(stub, metadata=ADMIN)
    for method, call in _every_rpc(stub).items():
        for token in DENIED:
            with pytest.raises(grpc.RpcError) as info:
                call(md(token))
            assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED, (method, token)
        for creds in ((), md("no-such-token")):
            with pytest.raises(grpc.RpcError) as info:
                call(creds)
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED, method
    # nothing changed, and a scoped token cannot even learn whether a catalog exists
    got = stub.GetCatalog(tms_pb2.GetCatalogRequest(name="catalogs/lake"), metadata=ADMIN)
    assert got.properties["warehouse"] == "s3://lake/wh"
    # (catalogs/cat is the fixture's own catalog)
    assert [c.name for c in stub.ListCatalogs(tms_pb2.ListCatalogsRequest(),
                                              metadata=ADMIN).catalogs] == ["catalogs/cat",
                                                                            "catalogs/lake"]
    with pytest.raises(grpc.RpcError) as info:
        stub.GetCatalog(tms_pb2.GetCatalogRequest(name="catalogs/nope"),
                        metadata=md("scoped-admin-tables"))
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    for call in _every_rpc(stub).values():  # the unscoped admin may do each
        try:
            call(ADMIN)
        except grpc.RpcError as e:
            assert e.code() in (grpc.StatusCode.INVALID_ARGUMENT,), e


SECRET_KEYS = ["password", "PASSWORD", "Password", "jdbc.password", "jdbc.pwd", "passwd",
               "s3.secret-access-key", "s3.access-key-id", "client.secret-access-key",
               "client.session-token", "token", "rest.token", "credential", "oauth2.credential",
               "rest.sigv4.secret-access-key", "rest.auth.type", "header.Authorization",
               "adls.sas-token.account", "adls.account-key", "gcs.oauth2.token",
               "private-key", "api_key", "x-api-key", "s3.sse.key", "hive.keytab",
               "glue.secret-access-key", "session_key", "SeCrEt"]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_secret_looking_keys_in_clear_are_refused(open_api, key: str) -> None:
    stub = open_api.stub()
    for where, over in (("properties", {"properties": {"uri": PG_URI, key: "hunter2"},
                                        "secrets": {}}),
                        ("storage_options", {"storage_options": {f"s3.{key}": "hunter2"},
                                             "secrets": {}})):
        k = key if where == "properties" else f"s3.{key}"
        code, fields = error_of(lambda o=over: create(stub, **o))
        assert code == grpc.StatusCode.INVALID_ARGUMENT
        assert fields == [f"catalog.{where}[{k}]"], (key, where)
    # given by reference, the same key is fine
    made = create(stub, secrets={key: "env:TMS_SECRET_X"})
    assert made.secrets[key] == "env:TMS_SECRET_X"


@pytest.mark.parametrize("value", [
    "postgresql+psycopg://tms:hunter2@db/lake",
    "postgresql+psycopg://tms:p%40ss@db/lake",
    "postgresql+psycopg://tms%3Ahunter2@db/lake",
    "postgresql+psycopg://tms:@db/lake",
    "jdbc:postgresql://tms:hunter2@db/lake",
    "jdbc:postgresql://db/lake?user=tms&password=hunter2",
    "jdbc:postgresql://db/lake?user=tms&PASSWORD=hunter2",
    "jdbc:sqlserver://db;user=tms;pwd=hunter2",
    "postgresql+psycopg://tms@db/lake?sslpassword=hunter2",
    "https://account.blob.core.windows.net/c?sv=2020&sig=abc",
    "https://u:hunter2@catalog.internal/api",
    "see //u:hunter2@host",
])
def test_values_with_a_password_are_refused(open_api, value: str) -> None:
    stub = open_api.stub()
    code, fields = error_of(lambda: create(stub, properties={"uri": PG_URI, "extra": value}))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert fields == ["catalog.properties[extra]"], value
    code, fields = error_of(lambda: create(stub, storage_options={"s3.endpoint": value}))
    assert set(fields) == {"catalog.storage_options[s3.endpoint]"}, value
    if value.startswith(("postgresql", "jdbc:postgresql")):
        ctype = "jdbc" if value.startswith("jdbc") else "sql"
        code, fields = error_of(lambda: create(stub, type=ctype, properties={"uri": value}))
        assert fields == ["catalog.properties[uri]"], value
    code, fields = error_of(lambda: create(stub, allowed_locations=["s3://lake/wh", value]))
    assert "catalog.allowed_locations[1]" in fields


@pytest.mark.parametrize("ref", [
    "hunter2", "", "env:PATH", "env:HOME", "env:TMS_SECRET_", "env:TMS_SECRET_DIR",
    "env:TMS_DATABASE_URL", "env:tms_secret_x", "ENV:TMS_SECRET_X", " env:TMS_SECRET_X",
    "env:TMS_SECRET_X ", "env:TMS_SECRET_X\n", "env:TMS_SECRET_X;rm", "env:TMS_SECRET_$X",
    "env:ＴMS_SECRET_X", "env:TMS_SECRET_Ꭺ", "env:TMS_SECRET_X\u200b",
    "file:../x", "file:/etc/shadow", "file:a/b", "file:..", "file:.hidden", "file:a..b",
    "file:%2e%2e", "file:a%2fb", "file:a\\b", "file:", "file:ａ", "file:a\u2024\u2024b",
    "file:a\x00", "file://etc/shadow", "vault:secret/x", "k8s:secret/x",
])
def test_secret_references_outside_the_allowed_forms_are_refused(open_api, ref: str) -> None:
    stub = open_api.stub()
    with pytest.raises(grpc.RpcError) as info:
        create(stub, secrets={"jdbc.password": ref})
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = rpc_status.from_call(info.value)
    assert status is not None
    # the refusal never echoes what was given: it may be the secret itself
    if len(ref) > 5 and ref != "env:TMS_SECRET_":  # (that one is in the help text)
        assert ref not in info.value.details() and ref not in str(status)


def test_accepted_secret_references(open_api) -> None:
    made = create(open_api.stub(), secrets={"jdbc.password": "env:TMS_SECRET_LAKE_PG_2",
                                       "s3.secret-access-key": "file:lake-s3.key",
                                       "fs.s3a.secret.key": "file:_x-1"})
    assert len(made.secrets) == 3


@pytest.mark.parametrize("location", [
    "s3://lake/wh/../../other", "s3://lake/wh/%2e%2e/other", "s3://lake/wh/%252e%252e/x",
    "s3://lake/%2e/x", "/srv/lake/./x", "/srv/lake/%252f..%252fetc", "relative/path",
    "~/lake", "lake", "http://lake/wh", "https://lake/wh", "ftp://lake/wh", "javascript:x",
    "jar:file:/x!/y", "file://evil.example/lake", "file://127.0.0.1/lake", "s3:/lake/wh",
    "s3://", "s3://user@lake/wh", "s3://lake/wh\x00x", "s3://lake/wh%00x", "s3://lake\\wh",
    "\\\\server\\share", "", "s3://la ke/wh", "s3://lake/" + "a" * 4100,
    # Azure's container@account: only on its own schemes, never a user, password or port
    "abfss://user:pw@acct.dfs.core.windows.net/wh", "gs://lake@acct.dfs.core.windows.net/wh",
    "abfss://lake@acct.dfs.core.windows.net@evil.example/wh", "abfss://@acct.x.net/wh",
    "abfss://lake@acct.dfs.core.windows.net:443/wh", "wasbs://l@acct.blob.core.windows.net/x",
    "abfs://lake--@acct.dfs.core.windows.net/wh", "abfss://lake@a.dfs.core.windows.net/wh",
])
def test_odd_allowed_locations_are_refused(open_api, location: str) -> None:
    code, fields = error_of(lambda: create(open_api.stub(), type="hadoop", properties={},
                                           secrets={}, allowed_locations=["/ok", location]))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert fields == ["catalog.allowed_locations[1]"], location


def test_local_locations_on_this_machine_are_accepted(open_api) -> None:
    made = create(open_api.stub(), type="hadoop", properties={}, secrets={},
                  allowed_locations=["file://localhost/srv/lake", "file:///srv/lake2",
                                     "/srv/lake3", "FILE://LOCALHOST/x", "s3a://lake/wh",
                                     "gs://b/p", "hdfs://nn:8020/x",
                                     "abfss://lake@acct01.dfs.core.windows.net/wh",
                                     "wasbs://lake-2@acct01.blob.core.windows.net/wh"])
    assert made.allowed_locations[0] == "file://localhost/srv/lake"


def test_locations_escaping_the_operator_bound_through_a_symlink(make_api,  # noqa: F811
                                                                  tmp_path: Path) -> None:
    from tms.api.allowlist import RegistrationAllowlist

    lake, outside = tmp_path / "lake", tmp_path / "outside"
    lake.mkdir()
    outside.mkdir()
    (lake / "link").symlink_to(outside)
    api = make_api(allowlist=RegistrationAllowlist((str(lake),)))
    stub = api.stub()
    over = dict(type="hadoop", properties={}, secrets={})
    assert create(stub, "ok", allowed_locations=[str(lake / "t")], **over).name
    for loc in (str(lake / "link"), str(lake / "link" / "t"), f"file://{lake}/link/t",
                str(outside), f"{lake}-evil"):
        code, fields = error_of(lambda x=loc: create(stub, "bad", allowed_locations=[x],
                                                     **over))
        assert fields == ["catalog.allowed_locations[0]"], loc


# --- no secret value anywhere -----------------------------------------------------------------

MARKER = "Mk7-s3cr3t-VALUE-q9"
FILE_MARKER = "Fz2-s3cr3t-FILE-w4"
PROPERTY_MARKER = "pg-marker-host-x1"  # a property value: stored, shown, but never logged


def _serving(address: str) -> bool:
    with grpc.insecure_channel(address) as ch:
        try:
            return health_pb2_grpc.HealthStub(ch).Check(
                health_pb2.HealthCheckRequest(), timeout=2).status == \
                health_pb2.HealthCheckResponse.SERVING
        except grpc.RpcError:
            return False


@pytest.fixture
def secret_api(db_dsn: str, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The real tms-api process with the secrets in its environment and secret directory;
    its whole output (the log) goes to a file."""
    secret_dir = tmp_path / "secrets"
    secret_dir.mkdir(mode=0o700)
    (secret_dir / "lake-s3").write_text(FILE_MARKER + "\n")
    address = f"127.0.0.1:{free_port()}"
    log_path = tmp_path / "api.log"
    env = dict(os.environ, TMS_DATABASE_URL=db_dsn, TMS_SECRET_LAKE_PG=MARKER,
               TMS_SECRET_DIR=str(secret_dir), TMS_LOG_LEVEL="DEBUG")
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "tms_services.api", "--listen", address],
                                env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: _serving(address) or proc.poll() is not None, "tms-api to serve")
            assert proc.poll() is None, log_path.read_text()
            yield address, log_path
        finally:
            proc.terminate()
            proc.wait(PROC_TIMEOUT_S)


def _rpc_texts(address: str, db_dsn: str) -> list[str]:
    """Every catalog RPC, succeeding and failing, as text (responses, errors, details)."""
    stub = tms_pb2_grpc.TableManagementServiceStub(grpc.insecure_channel(address))
    texts: list[str] = []

    def call(fn: Callable[[], object]) -> None:
        try:
            texts.append(str(fn()))
        except grpc.RpcError as e:
            status = rpc_status.from_call(e)
            texts.append(f"{e.code()} {e.details()} {status}")

    uri = f"postgresql+psycopg://tms@{PROPERTY_MARKER}:5432/lake"
    secrets = {"jdbc.password": "env:TMS_SECRET_LAKE_PG", "s3.secret-access-key":
               "file:lake-s3"}
    call(lambda: create(stub, properties={"uri": uri, "warehouse": "s3://lake/wh"},
                        secrets=secrets))
    call(lambda: create(stub, properties={"uri": uri}, secrets=secrets))  # ALREADY_EXISTS
    call(lambda: create(stub, "bad", secrets={"jdbc.password": MARKER}))  # a value, refused
    call(lambda: stub.GetCatalog(tms_pb2.GetCatalogRequest(name="catalogs/lake")))
    call(lambda: stub.ListCatalogs(tms_pb2.ListCatalogsRequest()))
    call(lambda: stub.UpdateCatalog(tms_pb2.UpdateCatalogRequest(
        catalog=catalog(name="catalogs/lake", properties={"uri": uri}, secrets=secrets,
                        default_policy={"execution.max-attempts": "2"}),
        update_mask=field_mask_pb2.FieldMask(paths=["properties", "secrets",
                                                    "default_policy"]))))
    # a table in the catalog (whatever the registration path checks today), then delete
    call(lambda: stub.RegisterTable(tms_pb2.RegisterTableRequest(
        table_id="events", table=tms_pb2.Table(format="iceberg", catalog="lake",
                                               namespace="ns", table_name="events"))))
    store = PostgresStore(db_dsn)
    try:
        if store.table_get("events") is None:
            store.table_register(TableSpec("events", "iceberg", catalog="lake", namespace="ns",
                                           table_name="events"))
        call(lambda: stub.DeleteCatalog(tms_pb2.DeleteCatalogRequest(name="catalogs/lake")))
        texts.append(repr(store.catalog_get("lake")))  # what the database holds
        store.table_delete("events", force=True)
    finally:
        store.close()
    return texts


def _cli_texts(address: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    texts: list[str] = []

    def tms(*argv: str) -> None:
        capsys.readouterr()
        code = run([*argv, "--api", address])
        out, err = capsys.readouterr()
        texts.append(f"{code}\n{out}\n{err}")

    for fmt in ((), ("--json",)):
        tms("catalogs", "list", *fmt)
        tms("catalogs", "get", "lake", *fmt)
        tms("catalogs", "show", "catalogs/lake", *fmt)
        tms("catalogs", "update", "lake", "--property", "extra=1", "--secret",
            "gcs.oauth2.token=env:TMS_SECRET_LAKE_PG", "--allowed-location", "s3://lake/x",
            "--discover", *fmt)
        tms("catalogs", "update", "lake", "--unset-property", "extra", "--unset-secret",
            "gcs.oauth2.token", "--remove-allowed-location", "s3://lake/x", *fmt)
        tms("catalogs", "update", "lake", "--secret", f"jdbc.password={MARKER}", *fmt)
        tms("catalogs", "create", "lake2", "--type", "sql", "--property",
            f"uri=postgresql+psycopg://tms@{PROPERTY_MARKER}/x", "--secret",
            "jdbc.password=env:TMS_SECRET_LAKE_PG", "--allowed-location", "s3://lake/wh",
            *fmt)
        tms("catalogs", "create", "lake3", "--type", "sql", "--property",
            f"uri=postgresql+psycopg://tms:{MARKER}@h/x", "--allowed-location", "s3://l/w",
            *fmt)
        tms("catalogs", "delete", "lake2", "--yes", *fmt)
    tms("catalogs", "delete", "lake", "--yes")
    return texts


def test_no_secret_value_in_any_response_cli_output_or_log(secret_api, db_dsn: str,
                                                           capsys) -> None:
    address, log_path = secret_api
    texts = _rpc_texts(address, db_dsn) + _cli_texts(address, capsys)
    blob = "\n".join(texts)
    assert "catalogs/lake" in blob and "env:TMS_SECRET_LAKE_PG" in blob  # the views ran
    assert "file:lake-s3" in blob and "deleted catalogs/lake2" in blob
    assert '"deleted": true' in blob
    for marker in (MARKER, FILE_MARKER):
        for form in (marker, marker.lower(), hashlib.sha256(marker.encode()).hexdigest()):
            assert form not in blob
    log = log_path.read_text()
    assert "catalog created" in log and "catalog updated" in log  # the log is the API's
    for line in log.splitlines():
        if line.startswith("{"):
            json.loads(line)
    for forbidden in (MARKER, FILE_MARKER, PROPERTY_MARKER, "env:TMS_SECRET_LAKE_PG",
                      "file:lake-s3"):
        assert forbidden not in log, forbidden
