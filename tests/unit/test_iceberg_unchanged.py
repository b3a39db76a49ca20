"""Unchanged Iceberg tables reuse their last metrics: the cache itself (fake clock), and the
plugin on a real pyiceberg SQL catalog in SQLite (tables written by pyiceberg)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tms.catalogs import CatalogAccess
from tms.domain import CatalogType, Table
from tms.formats.iceberg.plugin import IcebergFormat
from tms.formats.iceberg.unchanged import VALID_UNTIL, UnchangedTables, valid_until_s

KEY = ("fp", ("ns", "t"))


def test_reused_only_for_the_same_metadata_file_and_policy() -> None:
    cache = UnchangedTables(clock=lambda: 1000.0)
    cache.remember(KEY, "m1.json", "/w/t", {"a": "1"}, {"files": 3})
    assert cache.metrics(KEY, "m1.json", {"a": "1"}) == {"files": 3}
    assert cache.table_location(KEY, "m1.json") == "/w/t"
    assert cache.metrics(KEY, "m2.json", {"a": "1"}) is None  # a new commit
    assert cache.table_location(KEY, "m2.json") is None
    assert cache.metrics(KEY, "m1.json", {"a": "2"}) is None  # the policy changed
    assert cache.metrics(("other", ("ns", "t")), "m1.json", {"a": "1"}) is None
    assert cache.hits == 1


def test_reused_metrics_are_a_copy() -> None:
    cache = UnchangedTables()
    cache.remember(KEY, "m1", "/w/t", {}, {"files": 3})
    cache.metrics(KEY, "m1", {})["files"] = 99  # type: ignore[index]
    assert cache.metrics(KEY, "m1", {}) == {"files": 3}


def test_metrics_expire_when_the_table_turns_quiet() -> None:
    now = [1000.0]
    cache = UnchangedTables(clock=lambda: now[0])
    metrics = {"last_commit_ms": 900_000}  # committed at 900 s
    until = valid_until_s(metrics, quiet_s=300, now_s=now[0])
    assert until == 1200.0
    cache.remember(KEY, "m1", "/w/t", {}, {**metrics, VALID_UNTIL: until})
    now[0] = 1199.0
    assert cache.metrics(KEY, "m1", {}) is not None
    now[0] = 1200.0
    assert cache.metrics(KEY, "m1", {}) is None  # quiet now: measure again
    assert valid_until_s(metrics, quiet_s=300, now_s=1300.0) is None  # already quiet
    assert valid_until_s(metrics, quiet_s=0, now_s=1000.0) is None  # quiet rule off
    assert valid_until_s({VALID_UNTIL: 5.0}, quiet_s=300, now_s=0.0) == 5.0


def test_bounded_least_recently_used_out_first() -> None:
    cache = UnchangedTables(max_entries=2)
    for n in ("a", "b"):
        cache.remember(("fp", (n,)), "m", n, {}, {"n": n})
    cache.metrics(("fp", ("a",)), "m", {})  # a used last: b goes first
    cache.remember(("fp", ("c",)), "m", "c", {}, {"n": "c"})
    assert len(cache) == 2 and cache.table_location(("fp", ("b",)), "m") is None
    assert cache.table_location(("fp", ("a",)), "m") == "a"
    off = UnchangedTables(max_entries=0)
    off.remember(KEY, "m", "l", {}, {})
    assert len(off) == 0


# --- the plugin on a real catalog --------------------------------------------------------------
class Counting(IcebergFormat):
    """Counts loads and measurements; opens the test's own catalog client (SQLite URLs do not
    survive TMS's credential handling of SQL catalog URLs, which is for PostgreSQL)."""

    def __init__(self, client: Any, entries: int = 100) -> None:
        super().__init__(entries)
        self._catalogs.get = lambda access: client  # type: ignore[method-assign]
        self.measured = 0
        self.loads = 0

    def _measure(self, table: Table, tbl: Any) -> dict[str, Any]:
        self.measured += 1
        return super()._measure(table, tbl)

    def _load(self, table: Table, catalog: CatalogAccess, where: str | None = None) -> Any:
        self.loads += 1
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
    append_batches(create_table(cat, "ns", "t"), 2)
    access = CatalogAccess("c", CatalogType.SQL, {k: v for k, v in props.items()
                                                  if k != "type"}, {},
                           allowed_locations=(str(warehouse),))
    return cat, access


def _table(policy: dict[str, str] | None = None) -> Table:
    from dataclasses import replace

    from tests.unit.fakes import make_table

    return replace(make_table(), format="iceberg", catalog="c", namespace="ns",
                   table_name="t", policy=policy or {})


def _decide(fmt: IcebergFormat, table: Table, access: CatalogAccess) -> dict[str, Any]:
    """What the scheduler does per decision: locate, then inspect."""
    fmt.locate(table, access)
    return fmt.inspect(table, access)


def test_unchanged_table_is_not_loaded_or_measured_again(
        sqlite_catalog: tuple[Any, CatalogAccess]) -> None:
    cat, access = sqlite_catalog
    fmt = Counting(cat)
    first = _decide(fmt, _table(), access)
    assert (fmt.loads, fmt.measured) == (1, 1) and first["data_files"] == 2
    again = _decide(fmt, _table(), access)
    assert (fmt.loads, fmt.measured) == (1, 1) and again == first
    assert fmt.unchanged.hits == 1


def test_changed_table_or_policy_is_measured_again(
        sqlite_catalog: tuple[Any, CatalogAccess]) -> None:
    from tms.local.iceberg_data import append_batches

    cat, access = sqlite_catalog
    fmt = Counting(cat)
    _decide(fmt, _table(), access)
    append_batches(cat.load_table("ns.t"), 1)
    after = _decide(fmt, _table(), access)
    assert fmt.measured == 2 and after["data_files"] == 3 and fmt.loads == 2
    _decide(fmt, _table({"compaction.small-file-bytes": "1024"}), access)
    assert fmt.measured == 3
    _decide(fmt, _table({"compaction.small-file-bytes": "1024"}), access)
    assert fmt.measured == 3


def test_quiet_rule_metrics_carry_their_expiry(sqlite_catalog: tuple[Any, CatalogAccess]
                                               ) -> None:
    cat, access = sqlite_catalog
    metrics = _decide(Counting(cat), _table({"compaction.quiet-s": "600"}), access)
    assert metrics[VALID_UNTIL] == pytest.approx(metrics["last_commit_ms"] / 1000 + 600)
    assert metrics[VALID_UNTIL] > time.time()


def test_reuse_off_loads_and_measures_every_time(sqlite_catalog: tuple[Any, CatalogAccess]
                                                 ) -> None:
    cat, access = sqlite_catalog
    fmt = Counting(cat, entries=0)
    for _ in range(3):
        _decide(fmt, _table(), access)
    assert (fmt.loads, fmt.measured) == (3, 3)


def test_a_dropped_table_is_not_in_the_catalog(sqlite_catalog: tuple[Any, CatalogAccess]
                                               ) -> None:
    from tms.formats.base import TableNotInCatalog

    cat, access = sqlite_catalog
    fmt = Counting(cat)
    _decide(fmt, _table(), access)
    cat.drop_table("ns.t")
    with pytest.raises(TableNotInCatalog):
        fmt.locate(_table(), access)
