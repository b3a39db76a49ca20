"""A location checked from a table's unchanged state is reused, and a symlink swapped since
cannot be used: the job is refused where the location is used, and the next decision that
sees a new state checks again (issue 15). The attacker here owns a directory inside the
allowed locations and swaps it for a symlink to somewhere else after the first check."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.unit.fakes import (
    FakeCoordinator,
    FakeFormat,
    FakeStore,
    make_catalog,
    make_op,
    make_table,
)
from tms import locations
from tms.catalogs import CatalogAccess
from tms.domain import Table
from tms.formats.iceberg.plugin import IcebergFormat
from tms.jobs import table_guard
from tms.scheduler.decide import NotUsable
from tms.scheduler.loop import Scheduler


class Stated(FakeFormat):
    """Locates at a fixed raw path and names the state it read it from (a metadata file)."""

    def __init__(self, raw: str) -> None:
        super().__init__(small_files=3)
        self.raw = raw
        self.state = "metadata/00001.json"

    def locate(self, table: Table, catalog: CatalogAccess) -> str:
        return self.raw

    def located_state(self, table: Table, catalog: CatalogAccess) -> str | None:
        return self.state


@pytest.fixture
def lake(tmp_path: Path) -> dict[str, Any]:
    allowed = tmp_path / "lake"
    (allowed / "tenant" / "t1").mkdir(parents=True)
    (tmp_path / "elsewhere" / "t1").mkdir(parents=True)
    raw = str(allowed / "tenant" / "t1")
    fmt = Stated(raw)
    store = FakeStore(tables={1: make_table()},
                      catalogs={"c": make_catalog(allowed_locations=(str(allowed),))})
    s = Scheduler(store, FakeCoordinator(), {"fake": fmt}, "s1")  # type: ignore[arg-type]
    return dict(tmp=tmp_path, allowed=str(allowed), raw=raw, fmt=fmt, store=store, s=s)


def located(lake: dict[str, Any], stored: str) -> Table:
    table = replace(lake["store"].tables[1], location=stored)
    return lake["s"]._located(table, lake["fmt"])[0]


def swap_for_symlink(lake: dict[str, Any]) -> None:
    tenant = Path(lake["allowed"]) / "tenant"
    tenant.rename(lake["tmp"] / "tenant-was")
    tenant.symlink_to(lake["tmp"] / "elsewhere")


def test_the_check_is_reused_while_the_state_is_the_same(lake: dict[str, Any],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real_check = locations.check
    monkeypatch.setattr(locations, "check", lambda *a, **k: calls.append(a) or
                        real_check(*a, **k))
    first = located(lake, "")
    assert first.location == lake["raw"] and lake["store"].locations == {1: lake["raw"]}
    for _ in range(3):
        assert located(lake, first.location).location == lake["raw"]
    assert len(calls) == 1 and lake["s"].checked.reused == 3
    lake["fmt"].state = "metadata/00002.json"  # a new metadata file: checked again
    located(lake, first.location)
    assert len(calls) == 2


def test_a_symlink_swapped_after_the_check_is_refused_where_it_is_used(
        lake: dict[str, Any]) -> None:
    checked = located(lake, "")  # the first inspection: inside the allowed locations
    swap_for_symlink(lake)
    # the same metadata file: the decision reuses its check...
    assert located(lake, checked.location).location == lake["raw"]
    # ...but the job is refused where the location is used: build_job resolves it again
    access = CatalogAccess("c", make_catalog().spec.type, {}, {}, (lake["allowed"],))
    table = replace(checked, format="iceberg")
    with pytest.raises(locations.LocationError, match="outside the allowed locations"):
        IcebergFormat(0).build_job(table, access, make_op())
    # and the job itself refuses the location it reads from the catalog
    with pytest.raises(table_guard.LocationRefused):
        table_guard.check_paths({"table location": lake["raw"]}, [lake["allowed"]])
    # the next decision that sees a changed metadata location checks again: no operations
    lake["fmt"].state = "metadata/00002.json"
    with pytest.raises(NotUsable, match="location refused"):
        located(lake, checked.location)
    # and a refused check is not remembered: the old state checks again too
    lake["fmt"].state = "metadata/00001.json"
    with pytest.raises(NotUsable, match="location refused"):
        located(lake, checked.location)


def test_no_state_named_no_reuse(lake: dict[str, Any]) -> None:
    lake["fmt"].state = None
    checked = located(lake, "")
    located(lake, checked.location)
    assert lake["s"].checked.reused == 0
