"""Catalog discovery as a hostile table owner would use it: whoever can create tables in a
catalog (a writer) chooses their names and, for Iceberg, their locations; whoever can write
into an allowed directory can plant symlinks. Discovery must register nothing outside the
catalog's allowed locations, nothing on another table's files, and only ids TMS accepts.

Real PostgreSQL, a real pyiceberg SQL catalog, real Hudi tables on disk.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PgHandle
from tests.integration.discovery_support import HudiLake, IcebergLake, unzip_hudi
from tms.storage.postgres import PostgresStore

pytestmark = pytest.mark.integration

TABLE_ID_RE = re.compile(r"^[a-z][a-z0-9_.-]{0,62}$")


@pytest.fixture
def store(db_dsn: str) -> Iterator[PostgresStore]:
    s = PostgresStore(db_dsn)
    yield s
    s.close()


@pytest.fixture
def lake(store: PostgresStore, pg: PgHandle, tmp_path: Path) -> IcebergLake:
    return IcebergLake(store, pg.dsn, tmp_path)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside every allowed location (another tenant's, or the system's)."""
    path = Path(os.path.realpath(tmp_path)) / "outside"
    path.mkdir()
    return path


def test_iceberg_table_located_outside_allowed_locations_is_not_registered(
        lake: IcebergLake, outside: Path) -> None:
    lake.create(("sales", "orders"))
    lake.create(("sales", "evil"), location=(outside / "evil").as_uri())

    report = lake.listing()
    assert report.registered == ["lake.sales.orders"]
    assert list(lake.rows()) == ["lake.sales.orders"]
    status = lake.catalog().status
    assert status.last_error is not None
    assert "1 table(s) not registered" in status.last_error
    assert "'sales.evil'" in status.last_error
    assert "outside the allowed locations" in status.last_error
    assert status.last_registered == 1


def test_iceberg_table_behind_a_symlink_in_the_warehouse_is_not_registered(
        lake: IcebergLake, outside: Path) -> None:
    """The location string is inside the warehouse; the path it names is not."""
    (lake.warehouse / "link").symlink_to(outside, target_is_directory=True)
    lake.create(("sales", "linked"), location=(lake.warehouse / "link" / "t").as_uri())

    report = lake.listing()
    assert report.registered == [] and lake.rows() == {}
    assert "outside the allowed locations" in (lake.catalog().status.last_error or "")


def test_second_table_on_the_same_files_is_not_registered(lake: IcebergLake) -> None:
    """Two catalog entries on one physical table would get two schedules (HUDI-7503)."""
    location = lake.create(("sales", "orders"))
    lake.create(("sales", "twin"), location=location)
    lake.create(("sales", "inner"), location=f"{location}/data/inner")

    report = lake.listing()
    assert len(report.registered) == 1 and len(report.skipped) == 2
    # refused as overlapping the one registered, or (the table boundary) as holding another
    # table's metadata below it: orders and twin hold inner's
    assert all("overlaps tables/" in s or "holds another Iceberg table" in s
               for s in report.skipped), report.skipped
    assert len(lake.rows()) == 1


def test_hudi_table_behind_a_symlink_is_not_followed(store: PostgresStore, tmp_path: Path,
                                                     outside: Path) -> None:
    lake = HudiLake(store, tmp_path)
    unzip_hudi(lake.root / "own" / "trips")
    foreign = unzip_hudi(outside / "foreign")
    (lake.root / "link").symlink_to(outside, target_is_directory=True)  # a directory link
    (lake.root / "alias").symlink_to(foreign, target_is_directory=True)  # a table link
    stolen = lake.root / "stolen"  # a real directory whose timeline lives elsewhere
    stolen.mkdir()
    (stolen / ".hoodie").symlink_to(foreign / ".hoodie", target_is_directory=True)

    report = lake.listing()
    assert report.registered == ["files.own.trips"]
    assert [r["base_path"] for r in lake.rows().values()] == [str(lake.root / "own" / "trips")]


def test_hostile_names_get_valid_distinct_ids(lake: IcebergLake) -> None:
    hostile = [("Sales", "Orders"), ("sales", "orders"), ("Ünïcöde", "Tàble"),
               ("ops", "a.b"), ("ops", "a", "b"), ("ops", "x" * 200), ("ops", "x" * 201),
               ("日本", "表"), ("dots", "a..b")]
    for ident in hostile:
        lake.create(ident)
    # a table named "..": pyiceberg puts it at <warehouse>/dots/.. (the warehouse itself)
    lake.create(("dots", ".."))

    report = lake.listing()
    assert report.error is None
    assert len(report.skipped) == 1
    assert "'dots...': location must not contain '.' or '..' segments" in report.skipped[0]
    rows = lake.rows()
    assert len(rows) == len(hostile) == len(set(report.registered))
    assert all(TABLE_ID_RE.fullmatch(i) and ".." not in i for i in rows), sorted(rows)
    by_name = {(r["namespace"], r["name"]): i for i, r in rows.items()}
    # the catalog's own names are kept as they are; only the id is sanitised
    assert set(by_name) == {(".".join(i[:-1]), i[-1]) for i in hostile}
    assert by_name[("sales", "orders")] == "lake.sales.orders"
    assert by_name[("Sales", "Orders")].startswith("lake.sales.orders-")
    assert by_name[("Ünïcöde", "Tàble")].startswith("lake.unicode.table-")
    # "ops"/"a.b" and "ops.a"/"b" would both be lake.ops.a.b: the second one is hashed
    assert {by_name[("ops", "a.b")], by_name[("ops.a", "b")]} >= {"lake.ops.a.b"}

    # the same names give the same ids: a second listing registers nothing new
    assert lake.listing().registered == []
