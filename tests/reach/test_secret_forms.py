"""Secrets in every form reach every job: one real compaction per documented secret form.

For each catalog type of the reach matrix that runs here quickly (sql on PostgreSQL, rest on
Iceberg's REST handlers, hadoop and hive on S3 through moto) and each property that can be a secret
reference there (a sql catalog's whole ``uri`` or its ``jdbc.password``; a rest catalog's
``token`` or whole ``uri``; the S3 keys of any catalog), once as ``env:TMS_SECRET_*`` and once
as ``file:<name>`` in the secret directory: the catalog is created through the API with that
reference, a table written by pyiceberg is registered, and the real scheduler and executor run
a compaction with ``spark-submit``. The job must succeed (the jar check works from the
catalog's type, not from which properties are visible once secrets are taken out) and leave
the rows unchanged.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import stub_for, wait_for
from tests.integration.reach_support import (
    S3_STORAGE,
    Servers,
    start_servers,
)
from tests.reach.test_matrix import DONE, checksum, compaction, data_files
from tms.local.iceberg_data import SCHEMA, batch
from tms.local.stack import LocalStack
from tms.v1 import tms_pb2

pytestmark = pytest.mark.e2e

COMMITS = 4
ROWS_PER_COMMIT = 5
ICEBERG_DB = "forms_iceberg"
ENV_NAME = "TMS_SECRET_FORM_{}"
FORMS = ("env", "file")
# (catalog type, storage, the properties given as secrets)
CASES = (
    ("sql", "local", ("uri",)),
    ("sql", "local", ("jdbc.password",)),
    ("rest", "local", ("token",)),
    ("rest", "local", ("uri",)),
    ("hadoop", "s3", ("s3.access-key-id", "s3.secret-access-key")),
    ("hive", "s3", ("s3.access-key-id", "s3.secret-access-key")),
)
SQL_PASSWORD = "not-checked-by-trust-auth"  # the test PostgreSQL trusts loopback


@dataclass
class Forms:
    stack: LocalStack
    servers: Servers
    iceberg_dsn: str
    secret_dir: Path
    environ: dict[str, str]


@pytest.fixture(scope="module")
def forms(tms_home: Path) -> Iterator[Forms]:
    root = Path(tempfile.mkdtemp(prefix="tms-forms-"))
    secret_dir = root / "secrets"
    secret_dir.mkdir()
    stack = LocalStack(root, tms_home)
    environ: dict[str, str] = {}
    try:
        with ExitStack() as servers_stack, pytest.MonkeyPatch.context() as mp:
            stack.start_servers()
            assert stack.postgres is not None
            dsn = stack.postgres.create_database(ICEBERG_DB)
            servers = start_servers(servers_stack, root / "servers", dsn, tms_home / "jars")
            for key, value in servers.environ().items():
                mp.setenv(key, value)
            # every case's values, as environment variables and as files, set before the
            # processes start (they resolve references when a value is used)
            for i, (ctype, _storage, keys) in enumerate(CASES):
                for key in keys:
                    value = _value(servers, dsn, ctype, key)
                    name = _name(i, key)
                    environ[ENV_NAME.format(name)] = value
                    mp.setenv(ENV_NAME.format(name), value)
                    (secret_dir / name.lower()).write_text(value)
            mp.setenv("TMS_SECRET_DIR", str(secret_dir))
            stack.start_api()
            stack.start_scheduler()
            stack.start_executor()
            yield Forms(stack, servers, dsn, secret_dir, environ)
    finally:
        stack.stop()
        shutil.rmtree(root, ignore_errors=True)


def _name(case: int, key: str) -> str:
    return f"C{case}_" + "".join(c if c.isalnum() else "_" for c in key).upper()


def _sql_uri(dsn: str) -> str:
    return dsn.replace("postgresql://", "postgresql+psycopg://", 1)


def _value(servers: Servers, dsn: str, ctype: str, key: str) -> str:
    if key == "uri":
        if ctype == "sql":  # a whole URL with credentials: the form that needs a secret
            user, _, rest = _sql_uri(dsn).partition("@")
            return f"{user}:{SQL_PASSWORD}@{rest}"
        assert servers.rest is not None
        return servers.rest.uri
    if key == "jdbc.password":
        return SQL_PASSWORD
    if key == "token":
        return servers.environ()["TMS_SECRET_REACH_REST_TOKEN"]
    if key == "s3.access-key-id":
        return servers.moto.access_key
    return servers.moto.secret_key


def _ref(form: str, case: int, key: str) -> str:
    name = _name(case, key)
    return f"env:{ENV_NAME.format(name)}" if form == "env" else f"file:{name.lower()}"


def _catalog(f: Forms, case: int, form: str, catalog_id: str
             ) -> tuple[tms_pb2.Catalog, Any, str | None]:
    """The TMS catalog with the case's properties as references of ``form``, the pyiceberg
    catalog that writes its table (values resolved), and whether tables get an explicit
    location."""
    from pyiceberg.catalog import load_catalog

    ctype, storage, secret_keys = CASES[case]
    servers = f.servers
    if storage == "s3" and "s3a" in servers.why_not:
        pytest.skip(servers.why_not["s3a"])
    if ctype in ("rest", "hadoop", "hive") and "java" in servers.why_not:
        pytest.skip(servers.why_not["java"])
    wh = servers.warehouse(ctype, storage) + f"/{catalog_id}"
    if storage == "local":
        Path(wh).mkdir(parents=True, exist_ok=True)
    storage_options = dict(S3_STORAGE, **{"s3.endpoint": servers.moto.endpoint}) \
        if storage == "s3" else {}
    values: dict[str, str] = {}
    if storage == "s3":
        values.update({"s3.access-key-id": servers.moto.access_key,
                       "s3.secret-access-key": servers.moto.secret_key})
    explicit = True
    if ctype == "sql":
        props = {"uri": _sql_uri(f.iceberg_dsn), "warehouse": wh}
        writer = {"type": "sql", **props}
    elif ctype == "rest":
        assert servers.rest is not None
        props = {"uri": servers.rest.uri}
        values["token"] = servers.environ()["TMS_SECRET_REACH_REST_TOKEN"]
        writer = {"type": "rest", **props}
    elif ctype == "hive":
        assert servers.hms is not None
        props = {"uri": servers.hms.uri, "warehouse": wh, "hive.hive2-compatible": "true"}
        writer = {"type": "hive", **props}
    else:  # hadoop: written through a REST server backed by Iceberg's HadoopCatalog
        server = servers.rest_hadoop[storage]
        wh = servers.warehouse(ctype, storage)
        props = {"warehouse": wh}
        writer = server.pyiceberg_properties()
        explicit = False
    for key in secret_keys:
        values[key] = _value(servers, f.iceberg_dsn, ctype, key)
    secrets = {}
    for key in list(props) + list(values):
        if key in secret_keys:
            secrets[key] = _ref(form, case, key)
        elif key in values:  # a secret of the cell that is not under test: by env
            secrets[key] = "env:" + {"token": "TMS_SECRET_REACH_REST_TOKEN",
                                     "s3.access-key-id": "TMS_SECRET_REACH_S3_KEY",
                                     "s3.secret-access-key": "TMS_SECRET_REACH_S3_SECRET"}[key]
    props = {k: v for k, v in props.items() if k not in secrets}
    catalog = tms_pb2.Catalog(type=ctype, properties=props, secrets=secrets,
                              storage_options=storage_options,
                              allowed_locations=[servers.warehouse(ctype, storage)])
    writer_props = {**writer, **storage_options, **values}
    if ctype == "sql":
        writer_props["uri"] = _sql_uri(f.iceberg_dsn)
        writer_props.pop("jdbc.password", None)
    return catalog, load_catalog(catalog_id, **writer_props), wh if explicit else None


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", range(len(CASES)),
                         ids=[f"{c}-{s}-{'+'.join(k)}" for c, s, k in CASES])
def test_secret_form_reaches_the_job(forms: Forms, case: int, form: str) -> None:
    ctype, storage, secret_keys = CASES[case]
    stub = stub_for(forms.stack)
    catalog_id = f"f{case}_{form}"
    catalog, writer, root = _catalog(forms, case, form, catalog_id)
    assert all(k in catalog.secrets and k not in catalog.properties for k in secret_keys)
    stub.CreateCatalog(tms_pb2.CreateCatalogRequest(catalog_id=catalog_id, catalog=catalog),
                       timeout=30)

    namespace, name = f"ns_{catalog_id}", "events"
    writer.create_namespace_if_not_exists(namespace)
    kw = {"location": f"{root}/{namespace}/{name}"} if root is not None else {}
    table = writer.create_table(f"{namespace}.{name}", schema=SCHEMA, **kw)
    for i in range(COMMITS):
        table.append(batch(i * ROWS_PER_COMMIT, ROWS_PER_COMMIT))
    table = writer.load_table(f"{namespace}.{name}")
    before_files, before = data_files(table), checksum(table)
    assert before_files == COMMITS

    table_id = f"{catalog_id}_events"
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=tms_pb2.Table(
        format="iceberg", catalog=catalog_id, namespace=namespace, table_name=name,
        policy={"compaction.min-small-files": "3"})), timeout=30)
    stub.NotifyCommit(tms_pb2.NotifyCommitRequest(
        table=f"tables/{table_id}", commit_id=str(table.current_snapshot().snapshot_id)),
        timeout=10)
    done = wait_for(lambda: (op := compaction(stub, table_id)) and op.state in DONE and op,
                    f"the {ctype} compaction with {'+'.join(secret_keys)} as {form}: secrets")
    assert done.state == tms_pb2.Operation.SUCCEEDED, (done.error, done.log_tail[-2000:])
    assert done.result["rewritten_data_files_count"] == COMMITS
    assert data_files(table) < before_files
    assert checksum(table) == before
    # no secret value in what the API returns about the run
    for value in (SQL_PASSWORD, forms.servers.moto.secret_key,
                  forms.servers.environ()["TMS_SECRET_REACH_REST_TOKEN"]):
        assert value not in done.log_tail and value not in done.error
