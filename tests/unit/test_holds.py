"""Holds: an action that keeps failing is held (the decision rules and the scheduler's use of
them, with fakes for the store and the format)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from tests.unit.fakes import NOW, FakeCoordinator, FakeFormat, FakeStore, make_table
from tms.domain.holds import HELD, RELEASED, Streak
from tms.policy.common import DEFAULT_HOLD_AFTER_FAILURES, hold_after_failures
from tms.scheduler import holds
from tms.scheduler.loop import Scheduler

DIGEST = holds.policy_digest({})
ERROR = ("missing file (the table references a missing file: /lake/t/data/a.parquet; restore "
         "it or remove it from the table): FileNotFoundError: [Errno 2] ...")


def streak(failures: int, **hold: object) -> Streak:
    return Streak(1, "compaction", failures, 40 + failures, ERROR, 7, **hold)  # type: ignore[arg-type]


def held(failures: int = 3, **kw: object) -> Streak:
    base = dict(hold_state=HELD, held_failures=3, last_operation_id=43, holds=1,
                hold_reason="3 compaction operations failed in a row", held_at=NOW,
                held_until=NOW + timedelta(hours=1), held_commit_seq=7, policy_digest=DIGEST,
                version=0)
    base.update(kw)
    return streak(failures, **base)


def test_policy_key_default_and_bounds() -> None:
    assert DEFAULT_HOLD_AFTER_FAILURES == 3
    assert hold_after_failures({}) == 3
    assert hold_after_failures({"execution.hold-after-failures": "5"}) == 5
    assert hold_after_failures({"execution.hold-after-failures": "0"}) == 3  # out of range


def test_hold_doubles_and_is_capped() -> None:
    assert holds.hold_length_s(1) == holds.HOLD_BASE_S
    assert holds.hold_length_s(2) == 2 * holds.HOLD_BASE_S
    assert holds.hold_length_s(3) == 4 * holds.HOLD_BASE_S
    assert holds.hold_length_s(99) == holds.HOLD_MAX_S


def test_fewer_failures_than_the_threshold_nothing() -> None:
    assert holds.judge(None, 3, DIGEST, NOW).kind == holds.NONE
    assert holds.judge(streak(2), 3, DIGEST, NOW).kind == holds.NONE
    # a released hold counts again from its release: the query already did
    assert holds.judge(streak(2, hold_state=RELEASED, version=4), 3, DIGEST, NOW).kind \
        == holds.NONE


def test_threshold_reached_places_a_hold_naming_the_cause() -> None:
    v = holds.judge(streak(3), 3, DIGEST, NOW)
    assert v.kind == holds.PLACE and v.holds == 1
    assert v.held_until == NOW + timedelta(seconds=holds.HOLD_BASE_S)
    assert "3 compaction operations failed in a row" in v.reason
    assert "the table references a missing file: /lake/t/data/a.parquet" in v.reason


def test_held_until_it_runs_out_then_one_try() -> None:
    v = holds.judge(held(), 3, DIGEST, NOW + timedelta(minutes=5))
    assert v.kind == holds.HOLD
    assert "held until" in v.reason and "tms tables resume" in v.reason
    assert "a new commit" in v.reason and "policy" in v.reason
    assert holds.judge(held(), 3, DIGEST, NOW + timedelta(hours=1)).kind == holds.TRY


def test_the_try_failing_holds_twice_as_long() -> None:
    v = holds.judge(held(4), 3, DIGEST, NOW + timedelta(hours=2))
    assert v.kind == holds.PLACE and v.holds == 2
    assert v.held_until == NOW + timedelta(hours=2) + timedelta(seconds=2 * holds.HOLD_BASE_S)


def test_new_commit_allows_one_try_not_a_release() -> None:
    v = holds.judge(replace(held(), commit_seq=9), 3, DIGEST,
                    NOW + timedelta(minutes=1))
    assert v.kind == holds.TRY and "new commit" in v.reason


def test_policy_change_and_success_release() -> None:
    v = holds.judge(held(), 3, holds.policy_digest({"execution.hold-after-failures": "5"}),
                    NOW)
    assert (v.kind, v.released_by) == (holds.RELEASE, "policy")
    v = holds.judge(held(0), 3, DIGEST, NOW)
    assert (v.kind, v.released_by) == (holds.RELEASE, "success")


def scheduler(store: FakeStore) -> Scheduler:
    return Scheduler(store, FakeCoordinator(), {"fake": FakeFormat()},  # type: ignore[arg-type]
                     "s1", pull_interval_s=123.0, now=lambda: NOW)


def test_scheduler_holds_instead_of_queueing() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    store.streaks = {1: {"compaction": streak(3)}}
    assert scheduler(store).run_once() == 1
    assert store.ops == []
    assert [(s.failures, n) for s, n, _ in store.holds_placed] == [(3, 1)]
    decision = store.decisions[0][1]
    assert not decision.should_run and decision.reason.startswith("not queued: held until")


def test_scheduler_queues_below_the_threshold_and_on_a_try() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    store.streaks = {1: {"compaction": streak(2)}}
    assert scheduler(store).run_once() == 1
    assert len(store.ops) == 1 and store.holds_placed == []

    store = FakeStore(tables={1: make_table()}, dirty={1})
    store.streaks = {1: {"compaction": replace(held(), held_until=NOW)}}
    assert scheduler(store).run_once() == 1
    assert len(store.ops) == 1 and "one try after a hold" in store.ops[0][1].reason


def test_scheduler_releases_on_policy_change() -> None:
    table = replace(make_table(), policy={"execution.hold-after-failures": "5"})
    store = FakeStore(tables={1: table}, dirty={1})
    store.streaks = {1: {"compaction": held()}}
    assert scheduler(store).run_once() == 1
    assert [by for _, by in store.holds_released] == ["policy"]
    assert len(store.ops) == 1
