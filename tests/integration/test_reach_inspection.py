"""The reach matrix, scheduler side: for each catalog type (sql, rest, hive, glue, hadoop) on
each storage (a local directory, S3 on moto), a real catalog server on loopback, a catalog
created through the API (secrets by reference), a table written by pyiceberg with a few
commits, registered through the API (the plugin locates it, the location is checked),
another found by discovery, and both inspected through the Iceberg plugin.

The hadoop cells' tables are real Iceberg HadoopCatalog tables: pyiceberg commits through a
REST server backed by Iceberg's own HadoopCatalog, which writes ``version-hint.text`` and
``vN.metadata.json`` into the warehouse; TMS reads them without any catalog server.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Api
from tests.integration.reach_support import (
    COMMITS,
    REST_TOKEN_ENV,
    ROWS_PER_COMMIT,
    Cell,
    Servers,
    iter_cells,
    make_cell,
    start_servers,
)
from tms.catalogs import access
from tms.formats.registry import load_formats
from tms.local.iceberg_data import SCHEMA
from tms.local.postgres import LocalPostgres
from tms.scheduler.discovery import Discovery
from tms.v1 import tms_pb2

pytestmark = pytest.mark.integration

@pytest.fixture(scope="module")
def iceberg_dsn(pg_server: LocalPostgres) -> str:
    """The database the sql cells' pyiceberg catalogs and the REST server's JdbcCatalog use."""
    name = f"reach_{int(time.time() * 1000) % 10**9}"
    pg_server.create_database(name)
    return str(pg_server.dsn(name))


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory, iceberg_dsn: str,
            tms_home: Path) -> Iterator[Servers]:
    with ExitStack() as stack:
        started = start_servers(stack, tmp_path_factory.mktemp("reach"), iceberg_dsn,
                                tms_home / "jars")
        print("reach servers' start seconds:",
              {k: round(v, 1) for k, v in sorted(started.start_s.items())})
        yield started


@pytest.fixture
def environ(servers: Servers, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The secrets' values, in this process's environment (the in-process API reads them)."""
    env = servers.environ()
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def create_catalog(api: Api, cell: Cell, catalog_id: str, namespace: str) -> None:
    api.stub().CreateCatalog(tms_pb2.CreateCatalogRequest(catalog_id=catalog_id, catalog=(
        tms_pb2.Catalog(type=cell.ctype, properties=cell.properties, secrets=cell.secrets,
                        storage_options=cell.storage_options,
                        allowed_locations=[cell.warehouse],
                        discovery=tms_pb2.CatalogDiscovery(
                            enabled=True, interval_s=10, include=[f"{namespace}.*"])))))


def register(api: Api, catalog_id: str, namespace: str, name: str) -> tms_pb2.Table:
    return api.stub().RegisterTable(tms_pb2.RegisterTableRequest(
        table_id=f"{catalog_id}_{name}", table=tms_pb2.Table(
            format="iceberg", catalog=catalog_id, namespace=namespace, table_name=name)))


def same_place(a: str, b: str) -> bool:
    from tms.locations import parse, resolve

    return resolve(parse(a, literal=True)) == resolve(parse(b, literal=True))


def inspect(api: Api, table_id: str, environ: dict[str, str]) -> dict[str, Any]:
    view = api.store.table_get(table_id)
    assert view is not None, table_id
    catalog = api.store.catalog_get(view.table.catalog)
    assert catalog is not None
    return dict(load_formats()["iceberg"].inspect(view.table, access(catalog, environ)))


@pytest.mark.parametrize("ctype,storage", list(iter_cells()))
def test_cell(servers: Servers, make_api: Callable[..., Api], environ: dict[str, str],
              iceberg_dsn: str, ctype: str, storage: str) -> None:
    cell = make_cell(servers, ctype, storage, iceberg_dsn)
    api = make_api()
    catalog_id, namespace = f"{ctype}_{storage}", f"n_{storage}"
    create_catalog(api, cell, catalog_id, namespace)

    written = cell.write(namespace, "events")
    made = register(api, catalog_id, namespace, "events")
    assert same_place(made.location, written.metadata.location)
    assert same_place(made.location, cell.table_location(namespace, "events"))

    cell.write(namespace, "orders")
    later = datetime.now(UTC) + timedelta(hours=1)  # the catalog is due
    discovery = Discovery(api.store, load_formats(), now=lambda: later, environ=environ)
    (report,) = [r for r in discovery.run_once() if r.catalog_id == catalog_id]
    assert report.error is None, report.error
    assert report.registered == [f"{catalog_id}.{namespace}.orders"], report
    assert report.skipped == []

    for table_id in (f"{catalog_id}_events", f"{catalog_id}.{namespace}.orders"):
        metrics = inspect(api, table_id, environ)
        assert (metrics["data_files"], metrics["snapshots"], metrics["records"]) == (
            COMMITS, COMMITS, COMMITS * ROWS_PER_COMMIT), (table_id, metrics)
        assert metrics["delete_files"] == 0 and metrics["total_bytes"] > 0

    # one plugin, as in a scheduler: a second look at the unchanged table asks the catalog for
    # its current metadata file only (sql, hive, glue, hadoop; rest loads) and reuses metrics
    from tms.formats.iceberg.plugin import IcebergFormat

    plugin = IcebergFormat()  # its own: load_formats() hands out one shared instance
    view = api.store.table_get(f"{catalog_id}_events")
    catalog = api.store.catalog_get(catalog_id)
    assert view is not None and catalog is not None
    first = plugin.inspect(view.table, access(catalog, environ))
    plugin.locate(view.table, access(catalog, environ))
    assert plugin.inspect(view.table, access(catalog, environ)) == first
    assert plugin.unchanged.hits == 1

    # a batch's pointers in one call (sql: one query, hive: get_table_objects_by_name): the
    # unchanged table is found quick and reused, a table the catalog does not hold is not
    from dataclasses import replace

    from tms.formats.base import TableNotInCatalog

    gone = replace(view.table, pk=view.table.pk + 10_000, table_name="never_created")
    quick = plugin.prepare([view.table, gone], access(catalog, environ))
    if ctype in ("sql", "hive"):
        assert quick == {view.table.pk} and plugin.prefetched.batches == 1
        with pytest.raises(TableNotInCatalog):
            plugin.locate(gone, access(catalog, environ))
    else:  # one call per table, as before
        assert not quick and plugin.prefetched.batches == 0
    plugin.locate(view.table, access(catalog, environ))
    assert plugin.inspect(view.table, access(catalog, environ)) == first
    assert plugin.unchanged.hits == 2


# --- the attacker's inputs --------------------------------------------------------------------

@pytest.mark.parametrize("ctype,props,storage,field", [
    ("rest", {"uri": "http://admin:pw@127.0.0.1:8181/"}, {}, "catalog.properties[uri]"),
    ("rest", {"uri": "http://127.0.0.1:8181/?token=abc"}, {}, "catalog.properties[uri]"),
    ("rest", {"uri": "http://127.0.0.1:8181/", "token": "abc"}, {},
     "catalog.properties[token]"),
    ("rest", {"uri": "http://127.0.0.1:8181/", "credential": "id:secret"}, {},
     "catalog.properties[credential]"),
    ("hive", {"uri": "thrift://user:pw@127.0.0.1:9083"}, {}, "catalog.properties[uri]"),
    ("glue", {"warehouse": "s3://lake/wh"}, {}, "catalog.properties[glue.region]"),
    ("glue", {"glue.region": "us-east-1", "glue.endpoint": "ftp://127.0.0.1/"}, {},
     "catalog.properties[glue.endpoint]"),
    ("hadoop", {"warehouse": "s3://other-bucket/wh"}, {}, "catalog.properties[warehouse]"),
    ("hadoop", {"warehouse": "s3://lake/wh/../../x"}, {}, "catalog.properties[warehouse]"),
    ("hadoop", {}, {"s3.endpoint": "file:///etc"}, "catalog.storage_options[s3.endpoint]"),
    ("hadoop", {}, {"s3.secret-access-key": "abc"},
     "catalog.storage_options[s3.secret-access-key]"),
])
def test_catalog_inputs_refused(make_api: Callable[..., Api], ctype: str, props: dict,
                                storage: dict, field: str) -> None:
    from tests.integration.test_api import error_of

    api = make_api()
    code, fields = error_of(lambda: api.stub().CreateCatalog(tms_pb2.CreateCatalogRequest(
        catalog_id="evil", catalog=tms_pb2.Catalog(type=ctype, properties=props,
                                                   storage_options=storage,
                                                   allowed_locations=["s3://lake/wh"]))))
    assert (code.name, fields) == ("INVALID_ARGUMENT", [field])
    assert api.store.catalog_get("evil") is None


def _refused(api: Api, catalog_id: str, namespace: str, name: str) -> tuple[str, str]:
    import grpc

    with pytest.raises(grpc.RpcError) as info:
        register(api, catalog_id, namespace, name)
    assert api.store.table_get(f"{catalog_id}_{name}") is None
    return info.value.code().name, str(info.value.details())


def test_version_hint_pointing_outside_the_table(servers: Servers, make_api: Callable[..., Api],
                                                 environ: dict[str, str],
                                                 iceberg_dsn: str) -> None:
    """A table writer controls version-hint.text and the metadata files: a hint that names a
    path (pyiceberg's own reader would follow it) or metadata naming another table's directory
    is refused; nothing is registered."""
    cell = make_cell(servers, "hadoop", "local", iceberg_dsn)
    api = make_api()
    create_catalog(api, cell, "hadoop_local", "n_evil")
    cell.write("n_evil", "victim", commits=1)
    cell.write("n_evil", "hinted", commits=1)
    cell.write("n_evil", "moved", commits=1)
    hinted = Path(cell.table_location("n_evil", "hinted")) / "metadata"
    (hinted / "version-hint.text").write_text("../../victim/metadata/v2.metadata.json")
    code, why = _refused(api, "hadoop_local", "n_evil", "hinted")
    assert code == "PERMISSION_DENIED" and "version number" in why
    (hinted / "version-hint.text").write_text("-1")
    assert _refused(api, "hadoop_local", "n_evil", "hinted")[0] == "PERMISSION_DENIED"

    # metadata copied from the victim: its location is the victim's directory
    victim = Path(cell.table_location("n_evil", "victim")) / "metadata"
    moved = Path(cell.table_location("n_evil", "moved")) / "metadata"
    hint = (moved / "version-hint.text").read_text().strip()
    (moved / f"v{hint}.metadata.json").write_bytes(
        (victim / f"v{(victim / 'version-hint.text').read_text().strip()}.metadata.json")
        .read_bytes())
    code, why = _refused(api, "hadoop_local", "n_evil", "moved")
    assert code == "PERMISSION_DENIED" and "not its own directory" in why


def test_s3_table_in_another_bucket(servers: Servers, make_api: Callable[..., Api],
                                    environ: dict[str, str], iceberg_dsn: str) -> None:
    """A table whose catalog puts it in a bucket the TMS catalog does not allow is refused
    (the location is the catalog's, checked on scheme + bucket + whole path segments)."""
    cell = make_cell(servers, "sql", "s3", iceberg_dsn)
    api = make_api()
    create_catalog(api, cell, "sql_s3", "n_other")
    servers.moto.create_bucket("reach-other")
    cell.writer.create_namespace_if_not_exists("n_other")
    cell.writer.create_table("n_other.elsewhere", schema=SCHEMA,
                             location="s3://reach-other/sql/n_other/elsewhere")
    cell.writer.create_table("n_other.prefix", schema=SCHEMA,
                             location=f"{cell.warehouse}x/n_other/prefix")
    for name in ("elsewhere", "prefix"):
        code, why = _refused(api, "sql_s3", "n_other", name)
        assert code == "PERMISSION_DENIED" and "outside the allowed locations" in why


def test_rest_token_is_passed_by_reference(servers: Servers, make_api: Callable[..., Api],
                                           environ: dict[str, str], iceberg_dsn: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The REST server demands the bearer token: the one the reference resolves to opens the
    catalog (test_cell), a wrong one is UNAVAILABLE and its value is never echoed."""
    cell = make_cell(servers, "rest", "local", iceberg_dsn)
    api = make_api()
    create_catalog(api, cell, "rest_local", "n_token")
    cell.write("n_token", "events", commits=1)
    wrong = "wrong-token-value-42"
    monkeypatch.setenv(REST_TOKEN_ENV, wrong)
    code, why = _refused(api, "rest_local", "n_token", "events")
    assert code == "UNAVAILABLE" and wrong not in why
    monkeypatch.setenv(REST_TOKEN_ENV, servers.environ()[REST_TOKEN_ENV])
    assert register(api, "rest_local", "n_token", "events").location


@pytest.mark.parametrize("ctype", ["sql", "glue"])
def test_table_properties_never_steer_the_schedulers_file_io(
        servers: Servers, make_api: Callable[..., Api], environ: dict[str, str],
        iceberg_dsn: str, ctype: str) -> None:
    """A table writer sets ``s3.endpoint`` (and ``py-io-impl``) on their table: the scheduler
    still reads the table with the catalog's storage settings, never sends the catalog's
    signed requests elsewhere, never imports the named class."""
    cell = make_cell(servers, ctype, "s3", iceberg_dsn)
    api = make_api()
    catalog_id = f"{ctype}_s3"
    create_catalog(api, cell, catalog_id, "n_props")
    from tms.catalogs import _ignore_table_io_properties

    _ignore_table_io_properties(cell.writer)  # else the writer itself cannot commit them
    table = cell.write("n_props", "steered", commits=2)
    with table.transaction() as tx:
        tx.set_properties({"s3.endpoint": "http://127.0.0.1:9",
                           "py-io-impl": "tests.integration.no_such_module.FileIO"})
    register(api, catalog_id, "n_props", "steered")
    metrics = inspect(api, f"{catalog_id}_steered", environ)
    assert (metrics["snapshots"], metrics["manifests"]) == (2, 2)  # properties: no snapshot
