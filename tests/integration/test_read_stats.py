"""Read statistics on the real database: decay by half-life, per-table caps that a hostile
engine cannot grow past, and names that resolve only inside the batch's catalog."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.conftest import Api
from tms.api.auth import ANONYMOUS_ADMIN
from tms.api.report_intake import ReportIntake
from tms.reads.profile import MAX_PREDICATE_KEYS, READ_HALF_LIFE_S
from tms.reads.reports import parse_batch
from tms.v1 import tms_pb2

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def scan(name: str, *columns: str, op: str = "eq") -> dict[str, object]:
    node: object = {"type": "true"}
    for c in columns:
        node = {"type": "and", "left": node, "right": {"type": op, "term": c, "value": "(x)"}}
    return {"report-type": "scan-report", "table-name": name, "snapshot-id": 1,
            "filter": node, "projected-field-names": list(columns),
            "metrics": {"result-data-files": {"value": 2}, "skipped-data-files": {"value": 8}}}


def take(intake: ReportIntake, *reports: object, catalog: str = "cat") -> object:
    return intake.take(ANONYMOUS_ADMIN, parse_batch(json.dumps(
        {"catalog": catalog, "reports": list(reports)}).encode()))


@pytest.fixture
def registered(api: Api) -> Api:
    api.stub().RegisterTable(tms_pb2.RegisterTableRequest(
        table_id="events", table=api.catalog.pb("ns", "events")))
    return api


def test_weights_halve_every_half_life(registered: Api) -> None:
    now = [T0]
    intake = ReportIntake(registered.store, clock=lambda: now[0])
    result = take(intake, *[scan("lake.ns.events", "user_id")] * 4)
    assert result.scans == 4  # type: ignore[attr-defined]
    pk = registered.store.table_get("events").table.pk  # type: ignore[union-attr]
    now[0] = T0 + timedelta(seconds=READ_HALF_LIFE_S)
    take(intake, scan("lake.ns.events", "ts", op="gt"))
    profile = registered.store.read_profile(pk, now[0])
    assert profile is not None and profile.reports == 5
    assert profile.scans == pytest.approx(3.0)  # 4 halved, plus 1
    weights = {(u.column, u.operator): u.weight for u in profile.predicates}
    assert weights[("user_id", "eq")] == pytest.approx(2.0)
    assert weights[("ts", "range")] == pytest.approx(1.0)
    assert profile.kept_share == pytest.approx(0.2)
    later = registered.store.read_profile(pk, now[0] + timedelta(seconds=READ_HALF_LIFE_S))
    assert later is not None and later.scans == pytest.approx(1.5)


def test_invented_columns_cannot_grow_a_table_past_its_cap(registered: Api) -> None:
    intake = ReportIntake(registered.store, clock=lambda: T0)
    for start in range(0, MAX_PREDICATE_KEYS + 100, 50):
        take(intake, *[scan("lake.ns.events", f"junk_{i}") for i in range(start, start + 50)])
    pk = registered.store.table_get("events").table.pk  # type: ignore[union-attr]
    profile = registered.store.read_profile(pk, T0)
    assert profile is not None
    assert len(profile.predicates) == MAX_PREDICATE_KEYS
    take(intake, scan("lake.ns.events", "junk_0"))  # a known key still counts
    again = registered.store.read_profile(pk, T0)
    assert again is not None
    junk0 = [u for u in again.predicates if u.column == "junk_0" and u.operator == "eq"]
    assert junk0 and junk0[0].weight == pytest.approx(2.0)


def test_names_resolve_only_inside_the_batch_catalog(registered: Api) -> None:
    intake = ReportIntake(registered.store, clock=lambda: T0)
    other = take(intake, scan("lake.ns.events", "a"), catalog="someone_else")
    assert other.scans == 0 and other.unmatched == 1  # type: ignore[attr-defined]
    bare = take(intake, scan("ns.events", "a"), scan("x.y.ns.events", "a"))
    assert bare.scans == 1 and bare.unmatched == 1  # type: ignore[attr-defined]
