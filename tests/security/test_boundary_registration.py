"""Doors of one shape, at registration, on the real tms-api process (real PostgreSQL, real
pyiceberg SQL catalogs): a table whose location would hold what is not its own. Each test is
one door; a neighbour that is not inside is accepted, so the rule is not "refuse everything".

Catalogs: ``lake`` (warehouse and allowed location ``lake/``), ``shared`` (another catalog on
the same root, its own database), ``team2`` (allowed ``lake/teams/t2``, inside ``lake``'s),
``files`` (Hudi base paths under ``hudi/``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from tms.domain import CatalogSpec, CatalogType
from tms.local import iceberg_data
from tms.local.stack import LocalStack
from tms.storage.postgres import PostgresStore
from tms.v1 import tms_pb2, tms_pb2_grpc

pytestmark = pytest.mark.integration

CALL_TIMEOUT_S = 30


@dataclass
class World:
    root: Path
    stub: tms_pb2_grpc.TableManagementServiceStub
    lake: Any  # pyiceberg catalog "lake"
    shared: Any  # pyiceberg catalog "shared" (same root, another database)

    @property
    def wh(self) -> Path:
        return self.root / "lake"


def _catalog(store: PostgresStore, catalog_id: str, dsn: str, warehouse: Path,
             allowed: Path) -> dict[str, str]:
    props = iceberg_data.sql_catalog_properties(dsn, warehouse.as_uri())
    store.catalog_create(CatalogSpec(catalog_id, CatalogType.SQL,
                                     properties={k: v for k, v in props.items() if k != "type"},
                                     allowed_locations=(str(allowed),)))
    return props


@pytest.fixture(scope="module")
def world(tms_home: Path) -> Iterator[World]:
    root = Path(tempfile.mkdtemp(prefix="tms-boundary-"))
    root.chmod(0o755)
    for d in ("lake/teams/t2", "hudi"):
        (root / d).mkdir(parents=True)
    stack = LocalStack(root / "stack", tms_home)
    channel = None
    try:
        stack.start_servers()
        assert stack.postgres is not None
        store = PostgresStore(stack.database_url)
        try:
            lake = _catalog(store, "lake", stack.postgres.create_database("ice_lake"),
                            root / "lake", root / "lake")
            shared = _catalog(store, "shared", stack.postgres.create_database("ice_shared"),
                              root / "lake", root / "lake")
            _catalog(store, "team2", stack.postgres.create_database("ice_team2"),
                     root / "lake" / "teams" / "t2", root / "lake" / "teams" / "t2")
            store.catalog_create(CatalogSpec("files", CatalogType.HADOOP,
                                             allowed_locations=(str(root / "hudi"),)))
        finally:
            store.close()
        stack.start_api()
        channel = grpc.insecure_channel(stack.api_address)
        yield World(root, tms_pb2_grpc.TableManagementServiceStub(channel),
                    iceberg_data.load_catalog("lake", lake),
                    iceberg_data.load_catalog("shared", shared))
    finally:
        if channel is not None:
            channel.close()
        stack.stop()
        shutil.rmtree(root, ignore_errors=True)


def iceberg(cat: Any, ident: str, location: Path | str, commits: int = 1) -> Any:
    ns = ident.rsplit(".", 1)[0]
    cat.create_namespace_if_not_exists(ns)
    uri = location if isinstance(location, str) else location.as_uri()
    t = cat.create_table(ident, schema=iceberg_data.SCHEMA, location=uri)
    iceberg_data.append_batches(t, commits, 5)
    return t


def register(world: World, table_id: str, ident: str, catalog: str = "lake") -> tms_pb2.Table:
    ns, name = ident.rsplit(".", 1)
    body = tms_pb2.Table(format="iceberg", catalog=catalog, namespace=ns, table_name=name)
    return world.stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=body),
                                    timeout=CALL_TIMEOUT_S)


def register_hudi(world: World, table_id: str, base: Path) -> tms_pb2.Table:
    body = tms_pb2.Table(format="hudi", catalog="files", base_path=str(base))
    return world.stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=body),
                                    timeout=CALL_TIMEOUT_S)


def hudi_dir(path: Path) -> Path:
    (path / ".hoodie").mkdir(parents=True)
    (path / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=t\n")
    return path


def refused(call: Any, *words: str) -> str:
    with pytest.raises(grpc.RpcError) as info:
        call()
    err = info.value
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, err
    assert "table location refused" in err.details(), err.details()
    for word in words:
        assert word in err.details(), err.details()
    return err.details()


def test_the_warehouse_root_itself_in_any_spelling(world: World) -> None:
    """First in this module: before any table is registered (a location containing a
    registered table is refused as a duplicate, ALREADY_EXISTS, before this rule)."""
    iceberg(world.lake, "root_a.t", world.wh)
    refused(lambda: register(world, "root-a", "root_a.t"), "is catalogs/lake's warehouse")
    iceberg(world.lake, "root_b.t", f"{world.wh.as_uri()}/")  # a trailing slash
    refused(lambda: register(world, "root-b", "root_b.t"), "is catalogs/lake's warehouse")
    (world.root / "alias").symlink_to(world.wh)  # a symlink to the warehouse
    iceberg(world.lake, "root_c.t", world.root / "alias")
    # the symlink resolves to the warehouse, which the allowed location check accepts
    refused(lambda: register(world, "root-c", "root_c.t"), "is catalogs/lake's warehouse")
    # a catalog sharing the root: its warehouse, and the other catalog's allowed location
    iceberg(world.shared, "ns_s.root", world.wh)
    refused(lambda: register(world, "shared-root", "ns_s.root", catalog="shared"),
            "catalogs/shared's warehouse")


def test_an_unregistered_table_below(world: World) -> None:
    iceberg(world.lake, "ns_b.events", world.wh / "box" / "ns_b" / "events")  # not in TMS
    iceberg(world.lake, "ns_a.box", world.wh / "box")
    refused(lambda: register(world, "box", "ns_a.box"),
            "another Iceberg table", str(world.wh / "box" / "ns_b" / "events"))
    assert register(world, "events", "ns_b.events").location == \
        str(world.wh / "box" / "ns_b" / "events")


def test_a_namespace_location(world: World) -> None:
    world.lake.create_namespace("nsloc", {"location": (world.wh / "nsloc-dir").as_uri()})
    iceberg(world.lake, "nsloc.t", world.wh / "nsloc-dir")
    refused(lambda: register(world, "nsloc", "nsloc.t"), "is namespace 'nsloc''s location")
    iceberg(world.lake, "nsloc.inside", world.wh / "nsloc-dir" / "inside")
    assert register(world, "nsloc-inside", "nsloc.inside").location.endswith("inside")


def test_a_parent_of_another_catalogs_allowed_location(world: World) -> None:
    iceberg(world.lake, "teams.all", world.wh / "teams")
    refused(lambda: register(world, "teams", "teams.all"),
            "contains catalogs/team2's allowed location")
    iceberg(world.lake, "teams.t1", world.wh / "teams" / "t1")  # beside it: fine
    assert register(world, "teams-t1", "teams.t1").location == str(world.wh / "teams" / "t1")


def test_two_catalogs_sharing_a_root(world: World) -> None:
    """``shared`` allows the same root as ``lake``: a table of one may not sit on the root
    nor above a table of the other that TMS has never heard of."""
    iceberg(world.lake, "ns_l.orders", world.wh / "co" / "orders")  # lake's, not registered
    iceberg(world.shared, "ns_s.co", world.wh / "co")
    refused(lambda: register(world, "co", "ns_s.co", catalog="shared"),
            "another Iceberg table", "co/orders")


def test_an_iceberg_table_above_a_hudi_table(world: World) -> None:
    hudi_dir(world.wh / "hbox" / "data" / "h")
    iceberg(world.lake, "ns_h.hbox", world.wh / "hbox")
    refused(lambda: register(world, "hbox", "ns_h.hbox"), "holds a Hudi table")


def test_a_hudi_base_path_above_an_iceberg_table_or_another_hudi_table(world: World) -> None:
    base = hudi_dir(world.root / "hudi" / "outer")
    iceberg(world.lake, "ns_x.ice", base / "p1" / "ice")  # files only: another team's table
    refused(lambda: register_hudi(world, "outer", base), "another Iceberg table")
    base2 = hudi_dir(world.root / "hudi" / "outer2")
    hudi_dir(base2 / "nested")
    refused(lambda: register_hudi(world, "outer2", base2), "nested holds a Hudi table")
    plain = hudi_dir(world.root / "hudi" / "plain")
    (plain / ".hoodie" / "metadata" / ".hoodie").mkdir(parents=True)  # its metadata table
    assert register_hudi(world, "plain", plain).location == str(plain)


def test_a_symlink_below_the_location(world: World) -> None:
    t = iceberg(world.lake, "ns_l.linky", world.wh / "linky")
    data = Path(t.location().removeprefix("file://")) / "data"
    (data / "elsewhere").symlink_to(world.root / "hudi")
    refused(lambda: register(world, "linky", "ns_l.linky"), "symbolic link")
