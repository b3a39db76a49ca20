"""A batch's Iceberg pointers in one catalog call: the SQL query on a real pyiceberg SQL
catalog in SQLite, the Hive call against a fake metastore client, the per-batch store, and
the scheduler's use of it (a failure leaves every table to ask on its own)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from tests.unit.fakes import FakeCoordinator, FakeFormat, FakeStore, make_catalog, make_table
from tms.catalogs import CatalogAccess
from tms.domain import CatalogType, Table
from tms.formats.base import CatalogUnreachable, TableNotInCatalog
from tms.formats.iceberg import current as iceberg_current
from tms.formats.iceberg import pointers as iceberg_pointers
from tms.formats.iceberg.plugin import IcebergFormat
from tms.formats.iceberg.pointers import MISSING, Prefetched
from tms.scheduler.loop import Scheduler


class Counting(IcebergFormat):
    """Counts per-table pointer calls and loads; the test's own catalog client (SQLite URLs
    do not survive TMS's handling of SQL catalog URLs, which is for PostgreSQL)."""

    def __init__(self, client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        super().__init__(100)
        self._catalogs.get = lambda access: client  # type: ignore[method-assign]
        self.pointer_calls = 0
        self.loads: list[str | None] = []
        real = iceberg_current.current_metadata_location

        def counted(*a: Any) -> Any:
            self.pointer_calls += 1
            return real(*a)

        monkeypatch.setattr(iceberg_current, "current_metadata_location", counted)

    def _load(self, table: Table, catalog: CatalogAccess, where: str | None = None) -> Any:
        self.loads.append(where)
        return super()._load(table, catalog, where)


@pytest.fixture
def sqlite_catalog(tmp_path: Path) -> tuple[Any, CatalogAccess]:
    pytest.importorskip("sqlalchemy")
    from tms.local.iceberg_data import append_batches, create_table, load_catalog

    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    props = {"type": "sql", "uri": f"sqlite:///{tmp_path}/cat.db",
             "warehouse": f"file://{warehouse}"}
    cat = load_catalog("c", props)
    for name in ("t0", "t1", "t2"):
        append_batches(create_table(cat, "ns", name), 2)
    access = CatalogAccess("c", CatalogType.SQL, {k: v for k, v in props.items()
                                                  if k != "type"}, {},
                           allowed_locations=(str(warehouse),))
    return cat, access


def _table(name: str, policy: dict[str, str] | None = None, namespace: str = "ns") -> Table:
    return replace(make_table(pk=sum(map(ord, name))), format="iceberg", catalog="c",
                   namespace=namespace, table_name=name, policy=policy or {})


def _decide(fmt: IcebergFormat, table: Table, access: CatalogAccess) -> dict[str, Any]:
    fmt.locate(table, access)
    return fmt.inspect(table, access)


NAMES = ("t0", "t1", "t2")


def test_one_query_for_the_batch_and_no_call_per_table(
        sqlite_catalog: tuple[Any, CatalogAccess], monkeypatch: pytest.MonkeyPatch) -> None:
    cat, access = sqlite_catalog
    fmt = Counting(cat, monkeypatch)
    tables = [_table(n) for n in NAMES]
    assert fmt.prepare(tables, access) == set()  # first look: the pointers serve the loads
    first = [_decide(fmt, t, access) for t in tables]
    assert fmt.pointer_calls == 0 and len(fmt.loads) == 3 and None not in fmt.loads
    quick = fmt.prepare(tables, access)  # nothing changed: reused, nothing loaded
    assert quick == {t.pk for t in tables}
    again = [_decide(fmt, t, access) for t in tables]
    assert again == first and fmt.unchanged.hits == 3
    assert fmt.pointer_calls == 0 and len(fmt.loads) == 3 and fmt.prefetched.batches == 2


def test_a_changed_table_or_policy_is_measured_again(
        sqlite_catalog: tuple[Any, CatalogAccess], monkeypatch: pytest.MonkeyPatch) -> None:
    from tms.local.iceberg_data import append_batches

    cat, access = sqlite_catalog
    fmt = Counting(cat, monkeypatch)
    tables = [_table(n) for n in NAMES]
    fmt.prepare(tables, access)
    for t in tables:
        _decide(fmt, t, access)
    append_batches(cat.load_table("ns.t1"), 1)
    tables[2] = _table("t2", {"compaction.small-file-bytes": "1024"})
    assert fmt.prepare(tables, access) == {tables[0].pk, tables[2].pk}  # t1: a new file
    after = [_decide(fmt, t, access) for t in tables]
    assert [a["data_files"] for a in after] == [2, 3, 2]
    assert len(fmt.loads) == 5 and fmt.unchanged.hits == 1  # t1 (new file) and t2 (policy)
    assert fmt.loads[3] == cat.load_table("ns.t1").metadata_location  # the batch's pointer
    assert fmt.pointer_calls == 0


def test_dropped_or_renamed_tables_are_not_in_the_catalog(
        sqlite_catalog: tuple[Any, CatalogAccess], monkeypatch: pytest.MonkeyPatch) -> None:
    cat, access = sqlite_catalog
    fmt = Counting(cat, monkeypatch)
    tables = [_table(n) for n in NAMES]
    fmt.prepare(tables, access)
    for t in tables:
        _decide(fmt, t, access)
    cat.drop_table("ns.t0")
    cat.rename_table("ns.t1", "ns.t1_new")
    fmt.prepare([*tables, _table("t1_new")], access)
    for gone in tables[:2]:
        with pytest.raises(TableNotInCatalog, match="does not exist"):
            fmt.locate(gone, access)  # not served from memory
    assert _decide(fmt, _table("t1_new"), access)["data_files"] == 2
    assert _decide(fmt, tables[2], access)["data_files"] == 2
    assert fmt.pointer_calls == 0


def test_unreachable_catalog_leaves_every_table_to_ask_on_its_own(
        sqlite_catalog: tuple[Any, CatalogAccess], monkeypatch: pytest.MonkeyPatch) -> None:
    cat, access = sqlite_catalog
    fmt = Counting(cat, monkeypatch)
    tables = [_table(n) for n in NAMES]
    fmt.prepare(tables, access)
    for t in tables:
        _decide(fmt, t, access)

    def down(*a: Any) -> Any:
        raise OSError("connection refused by postgresql://u:hunter2@db/cat")

    monkeypatch.setattr(iceberg_pointers, "lookup", down)
    access = replace(access, secret_values=("hunter2",))
    fmt.prefetched.put(access.fingerprint(), [fmt._key(tables[0], access)[1]],
                       {})  # an earlier batch's, never taken: not used after a failure
    with pytest.raises(CatalogUnreachable) as e:
        fmt.prepare(tables, access)
    assert "hunter2" not in str(e.value)
    assert _decide(fmt, tables[0], access)["data_files"] == 2  # asked on its own: as before
    assert fmt.pointer_calls == 1


def test_hostile_names_stay_parameters(sqlite_catalog: tuple[Any, CatalogAccess],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    cat, access = sqlite_catalog
    fmt = Counting(cat, monkeypatch)
    hostile = [_table("t0' OR '1'='1"), _table("x", namespace="ns') OR 1=1 --")]
    found = iceberg_pointers.lookup(cat, access, [fmt._key(t, access)[1] for t in hostile])
    assert found == {}  # matched nothing, leaked nothing


def test_prefetched_pointers_are_taken_once_and_only_while_fresh() -> None:
    now = [100.0]
    p = Prefetched(fresh_s=10.0, clock=lambda: now[0])
    p.put("fp", [("ns", "a"), ("ns", "b"), ("ns", "c")], {("ns", "a"): "m1", ("ns", "c"): None})
    assert p.take(("fp", ("ns", "a"))) == (True, "m1")
    assert p.take(("fp", ("ns", "a"))) == (False, None)  # once
    assert p.take(("fp", ("ns", "b"))) == (True, MISSING)  # asked, not held
    assert p.take(("other", ("ns", "c"))) == (False, None)  # another catalog connection
    now[0] = 110.0
    assert p.take(("fp", ("ns", "c"))) == (False, None)  # stale: ask again


@dataclass
class HiveTable:
    tableName: str  # noqa: N815 - thrift's name
    parameters: dict[str, str]


@dataclass
class FakeHive:
    tables: dict[str, list[HiveTable]]
    asked: list[tuple[str, list[str]]] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)

    def identifier_to_database_and_table(self, ident: tuple[str, ...]) -> tuple[str, str]:
        return ident[0], ident[1]

    def _create_hive_client(self, properties: Any) -> Any:
        outer = self

        class Open:
            def __enter__(self) -> Any:
                return self

            def __exit__(self, *a: Any) -> None:
                return None

            def get_table_objects_by_name(self, db: str, names: list[str]) -> list[HiveTable]:
                outer.asked.append((db, names))
                return [t for t in outer.tables.get(db, []) if t.tableName in names]

        return Open()


def test_hive_one_call_per_database() -> None:
    ice = {"table_type": "ICEBERG", "metadata_location": "s3://b/m.json"}
    client = FakeHive({"db1": [HiveTable("a", ice), HiveTable("plain", {})],
                       "db2": [HiveTable("b", dict(ice, metadata_location="s3://b/n.json"))]})
    access = CatalogAccess("h", CatalogType.HIVE, {}, {})
    idents = [("db1", "A"), ("db1", "plain"), ("db1", "gone"), ("db2", "b")]
    found = iceberg_pointers.lookup(client, access, idents)
    assert found == {("db1", "A"): "s3://b/m.json", ("db1", "plain"): None,
                     ("db2", "b"): "s3://b/n.json"}  # names as the metastore keeps them
    assert sorted(db for db, _ in client.asked) == ["db1", "db2"]
    assert iceberg_pointers.lookup(None, CatalogAccess("r", CatalogType.REST, {}, {}),
                                   idents) is None  # no batch call: each table asks


class Prepares(FakeFormat):
    def __init__(self, fail: bool) -> None:
        super().__init__()
        self.fail = False
        self.prepare_fails = fail
        self.prepared: list[list[int]] = []

    def prepare(self, tables: Any, catalog: CatalogAccess) -> None:
        self.prepared.append([t.pk for t in tables])
        if self.prepare_fails:
            raise CatalogUnreachable("catalog down")


@pytest.mark.parametrize("fail", [False, True])
def test_scheduler_prepares_each_catalog_once_and_decides_whatever_it_says(fail: bool) -> None:
    where = {1: "c", 2: "c", 3: "c2", 4: "gone"}
    tables = {pk: make_table(pk=pk, catalog=c) for pk, c in where.items()}
    store = FakeStore(tables=tables, dirty=set(where))
    store.catalogs["c2"] = make_catalog("c2")
    fmt = Prepares(fail)
    s = Scheduler(store, FakeCoordinator(), {"fake": fmt}, "s1",  # type: ignore[arg-type]
                  pull_interval_s=123.0)
    assert s.run_once() == 4
    assert sorted(fmt.prepared) == [[1, 2], [3]]  # a catalog that does not exist: not asked
    assert sorted(fmt.inspected) == [1, 2, 3]  # decided either way
    assert any("catalogs/gone does not exist" in d.reason for pk, d, _ in store.decisions
               if pk == 4)


def test_one_file_io_per_scheme_from_the_catalogs_properties_only(tmp_path: Path) -> None:
    """Tables' FileIO is the catalog's (a table's own io properties are ignored), so one per
    URI scheme serves every table: its file systems are set up once."""
    from pyiceberg.catalog import load_catalog

    from tms.catalogs import _ignore_table_io_properties

    cat = load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/cat.db",
                       warehouse=f"file://{tmp_path}")
    _ignore_table_io_properties(cat)
    a = cat._load_file_io({"py-io-impl": "evil.Module"}, f"file://{tmp_path}/a/m.json")
    b = cat._load_file_io({}, f"file://{tmp_path}/b/m.json")
    assert a is b and "py-io-impl" not in a.properties
    assert cat._load_file_io({}, None) is cat._load_file_io({}, None)  # the warehouse's
    assert cat._load_file_io({}, "s3://bucket/t/m.json") is not a  # another scheme


def test_a_batch_resolves_each_catalogs_secrets_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from tms import catalogs

    calls: list[str] = []
    real = catalogs.access

    def counted(catalog: Any, *a: Any, **kw: Any) -> CatalogAccess:
        calls.append(catalog.name)
        return real(catalog, *a, **kw)

    monkeypatch.setattr(catalogs, "access", counted)
    store = FakeStore(tables={pk: make_table(pk=pk) for pk in (1, 2, 3)}, dirty={1, 2, 3})
    fmt = Prepares(False)
    s = Scheduler(store, FakeCoordinator(), {"fake": fmt}, "s1",  # type: ignore[arg-type]
                  pull_interval_s=123.0)
    assert s.run_once() == 3 and sorted(fmt.inspected) == [1, 2, 3]
    assert calls == ["catalogs/c"]  # once for the batch, not once per table
