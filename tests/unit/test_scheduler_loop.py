"""The scheduler loop's decisions, with fakes for the store, ZooKeeper and the format."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.unit.fakes import (
    FAKE_ROOT,
    NOW,
    FakeCoordinator,
    FakeFormat,
    FakeStore,
    make_catalog,
    make_table,
)
from tms.domain import TableState
from tms.scheduler.decide import INSPECT_FAILURE_RETRY_S, ZooKeeperLost
from tms.scheduler.loop import Scheduler


def scheduler(store: FakeStore, coord: FakeCoordinator | None = None,
              fmt: FakeFormat | None = None) -> Scheduler:
    return Scheduler(store, coord or FakeCoordinator(),  # type: ignore[arg-type]
                     {"fake": fmt or FakeFormat()}, "s1", pull_interval_s=123.0,
                     now=lambda: NOW)


def test_queues_and_records_the_decision() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    s = scheduler(store)
    assert s.run_once() == 1
    assert [d.action for _, d in store.ops] == ["compaction"]
    assert store.decisions[0][2] == 1 and store.decisions[0][1].reason == "20 small files"
    assert store.finished_decisions == [(1, 123.0)]
    assert store.dirty == set() and s.decided.is_set()


def test_already_decided_table_is_skipped() -> None:
    store = FakeStore(tables={1: make_table()})  # no mark, next check an hour away
    fmt = FakeFormat()
    assert scheduler(store, fmt=fmt).run_once() == 0
    assert fmt.inspected == [] and store.ops == []


def test_pull_check_due_without_commits() -> None:
    store = FakeStore(tables={1: make_table()})
    store.db_now = NOW.replace(year=2027)
    s = Scheduler(store, FakeCoordinator(), {"fake": FakeFormat()},  # type: ignore[arg-type]
                  "s1", now=lambda: NOW.replace(year=2027))
    assert s.run_once() == 1 and len(store.ops) == 1


def test_no_zookeeper_session_no_decisions() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    assert scheduler(store, FakeCoordinator(healthy=False)).run_once() == 0
    assert store.ops == [] and store.decisions == [] and store.dirty == {1}


def test_session_lost_mid_decision_keeps_the_mark() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    coord = FakeCoordinator()

    class LosesSession(FakeFormat):
        def inspect(self, table, catalog):  # type: ignore[no-untyped-def]
            coord.healthy = False
            return super().inspect(table, catalog)

    with pytest.raises(ZooKeeperLost):
        scheduler(store, coord, LosesSession()).run_once()
    assert store.ops == [] and store.dirty == {1}


def test_paused_table_gets_nothing() -> None:
    store = FakeStore(tables={1: make_table(state=TableState.PAUSED)}, dirty={1})
    assert scheduler(store).run_once() == 0
    assert store.ops == []


def test_second_decision_while_active_records_why_not() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    s = scheduler(store)
    s.run_once()
    store.dirty.add(1)
    s.run_once()
    assert len(store.ops) == 1
    last = store.decisions[-1][1]
    assert not last.should_run and "already active" in last.reason


def test_inspection_failure_is_recorded_and_retried_later() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    scheduler(store, fmt=FakeFormat(fail=True)).run_once()
    assert store.ops == []
    assert "catalog unreachable" in store.decisions[0][1].reason
    assert store.finished_decisions == [(1, INSPECT_FAILURE_RETRY_S)]


def test_retention_stops_at_its_time_budget() -> None:
    from tms.scheduler.retention import Retention

    class Busy:
        calls: list[str] = []

        def retention_prune(self, what: str, retention_s: float, batch: int) -> int:
            self.calls.append(what)
            return batch  # always a full batch: there is more

    ticks = iter(range(100))
    store = Busy()
    done = Retention(batch=10, budget_s=5).prune(store, lambda: float(next(ticks)))  # type: ignore[arg-type]
    assert sum(done.values()) == 10 * len(store.calls) and len(store.calls) == 4


def test_queue_priority_feeds_the_operation_priority() -> None:
    from dataclasses import replace

    from tms_services.scheduler import parse_queue_priorities

    store = FakeStore(tables={1: replace(make_table(), priority=5, queue="urgent")}, dirty={1})
    s = Scheduler(store, FakeCoordinator(), {"fake": FakeFormat()},  # type: ignore[arg-type]
                  "s1", now=lambda: NOW, queue_priorities=parse_queue_priorities("urgent=100"))
    s.run_once()
    assert store.priorities == [105]
    with pytest.raises(ValueError, match="queue=integer"):
        parse_queue_priorities("urgent")


def test_shards_decide_only_their_own_tables() -> None:
    from tms.coordination import NUM_SHARDS

    store = FakeStore(tables={pk: make_table(pk=pk) for pk in (1, 2, 1 + NUM_SHARDS)},
                      dirty={1, 2, 1 + NUM_SHARDS})
    s = scheduler(store, FakeCoordinator(shards=frozenset({1})))
    assert s.run_once() == 2
    assert sorted(pk for pk, _ in store.ops) == [1, 1 + NUM_SHARDS]
    assert store.dirty == {2}  # another scheduler's shard: its mark waits for it


def test_shards_not_settled_means_no_decisions() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    coord = FakeCoordinator()
    coord.owned_shards = lambda: None  # type: ignore[method-assign]
    assert scheduler(store, coord).run_once() == 0
    assert store.ops == [] and store.dirty == {1}


def test_session_lost_mid_batch_keeps_the_rest_of_the_marks() -> None:
    store = FakeStore(tables={pk: make_table(pk=pk, location=f"{FAKE_ROOT}/t{pk}")
                              for pk in (1, 2, 3)}, dirty={1, 2, 3})
    coord = FakeCoordinator()

    class LosesSessionAfterOne(FakeFormat):
        def inspect(self, table, catalog):  # type: ignore[no-untyped-def]
            if table.pk == 2:
                coord.healthy = False
            return super().inspect(table, catalog)

    with pytest.raises(ZooKeeperLost):
        scheduler(store, coord, LosesSessionAfterOne()).run_once()
    assert [pk for pk, _ in store.ops] == [1]  # queued while the session lived, and recorded
    assert [pk for pk, _, _ in store.decisions] == [1]
    assert store.dirty == {2, 3}


def test_session_lost_before_first_looks_are_settled_queues_nothing() -> None:
    """Tables seen for the first time are queued only once their batch's locations are
    stored; a session lost before that stores none and queues nothing: every mark kept."""
    store = FakeStore(tables={pk: make_table(pk=pk) for pk in (1, 2, 3)}, dirty={1, 2, 3})
    coord = FakeCoordinator()

    class LosesSession(FakeFormat):
        def inspect(self, table, catalog):  # type: ignore[no-untyped-def]
            if table.pk == 3:
                coord.healthy = False
            return super().inspect(table, catalog)

    with pytest.raises(ZooKeeperLost):
        scheduler(store, coord, LosesSession()).run_once()
    assert store.ops == [] and store.decisions == [] and store.location_batches == []
    assert store.dirty == {1, 2, 3}


def _reasons(store: FakeStore) -> list[str]:
    return [d.reason for _, d, _ in store.decisions]


def test_location_is_checked_again_at_every_decision() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    fmt = FakeFormat()
    assert scheduler(store, fmt=fmt).run_once() == 1
    assert store.locations == {1: f"{FAKE_ROOT}/t1"} and len(store.ops) == 1
    # the catalog now puts the table outside its allowed locations: nothing queued
    store.tables[1] = make_table(base_path="/etc")
    store.catalogs["c"] = make_catalog()
    store.ops.clear()
    s = scheduler(store, fmt=fmt)
    store.dirty.add(1)
    assert s.run_once() == 1
    assert store.ops == [] and fmt.inspected == [1]  # never inspected there
    assert "outside the allowed locations" in _reasons(store)[-1]


def test_overlapping_location_or_missing_catalog_gets_no_operations() -> None:
    store = FakeStore(tables={1: make_table(), 2: make_table(pk=2, base_path=f"{FAKE_ROOT}/t1/x"),
                              3: make_table(pk=3, catalog="gone")}, dirty={1, 2, 3})
    scheduler(store).run_once()
    assert [pk for pk, _ in store.ops] == [1]
    reasons = dict((pk, d.reason) for pk, d, _ in store.decisions)
    assert "overlaps tables/t1" in reasons[2] and "catalogs/gone does not exist" in reasons[3]


def test_missing_secret_is_a_reason_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMS_SECRET_NOPE", raising=False)
    store = FakeStore(tables={1: make_table()}, dirty={1},
                      catalogs={"c": make_catalog(secrets={"jdbc.password":
                                                           "env:TMS_SECRET_NOPE"})})
    assert scheduler(store).run_once() == 1 and store.ops == []
    assert "env:TMS_SECRET_NOPE" in _reasons(store)[0]


class SeesPolicy(FakeFormat):
    """Records the policy each inspection saw."""

    def __init__(self) -> None:
        super().__init__()
        self.policies: list[dict[str, str]] = []

    def inspect(self, table, catalog):  # type: ignore[no-untyped-def]
        self.policies.append(dict(table.policy))
        return super().inspect(table, catalog)


def test_the_catalogs_default_policy_applies_under_the_tables_own() -> None:
    default = {"execution.max-attempts": "7", "scheduler.pull-interval-s": "77",
               "compaction.min-small-files": "5"}  # the last: an Iceberg key, not fake's
    store = FakeStore(tables={1: make_table(), 2: make_table(
        pk=2, policy={"execution.max-attempts": "2"})}, dirty={1, 2},
        catalogs={"c": make_catalog(default_policy=default)})
    fmt = SeesPolicy()
    assert scheduler(store, fmt=fmt).run_once() == 2
    assert fmt.policies == [{"execution.max-attempts": "7", "scheduler.pull-interval-s": "77"},
                            {"execution.max-attempts": "2", "scheduler.pull-interval-s": "77"}]
    assert [p.max_attempts for p in store.enqueued] == [7, 2]
    assert sorted(store.finished_decisions) == [(1, 77.0), (2, 77.0)]


def test_first_looks_store_their_locations_in_one_call_per_batch() -> None:
    store = FakeStore(tables={pk: make_table(pk=pk) for pk in (1, 2, 3)}, dirty={1, 2, 3})
    assert scheduler(store).run_once() == 3
    assert store.location_batches == [[(pk, f"{FAKE_ROOT}/t{pk}") for pk in (1, 2, 3)]]
    assert sorted(pk for pk, _ in store.ops) == [1, 2, 3]
    store.tables = {pk: replace(t, location=store.locations[pk])
                    for pk, t in store.tables.items()}
    store.dirty = {1, 2, 3}
    scheduler(store).run_once()  # known locations: nothing to store again
    assert len(store.location_batches) == 1


def test_overlap_within_one_batch_refuses_the_later_table() -> None:
    """Two tables of one batch whose new locations nest: the first in the batch gets its
    location and its operations; the second neither, and its decisions say whose."""
    store = FakeStore(tables={1: make_table(base_path=f"{FAKE_ROOT}/shared"),
                              2: make_table(pk=2, base_path=f"{FAKE_ROOT}/shared/inner")},
                      dirty={1, 2})
    scheduler(store).run_once()
    assert [pk for pk, _ in store.ops] == [1]
    assert store.locations == {1: f"{FAKE_ROOT}/shared"}
    refused = [d for pk, d, _ in store.decisions if pk == 2]
    assert refused and all("overlaps tables/t1" in d.reason and not d.should_run
                           and not d.metrics for d in refused)


def test_another_tenants_location_is_refused_in_a_batch() -> None:
    """The attacker's table: its catalog names (inside the allowed locations) the location
    of another tenant's table. Inspected in its batch like the others, but nothing queued,
    nothing stored, and its decisions carry no metrics of the other tenant's table."""
    store = FakeStore(tables={1: make_table(), 3: make_table(pk=3),
                              2: make_table(pk=2, base_path=f"{FAKE_ROOT}/victim/data")},
                      dirty={1, 2, 3}, locations={9: f"{FAKE_ROOT}/victim"})
    scheduler(store).run_once()
    assert sorted(pk for pk, _ in store.ops) == [1, 3]
    assert 2 not in store.locations and store.locations[9] == f"{FAKE_ROOT}/victim"
    refused = [d for pk, d, _ in store.decisions if pk == 2]
    assert refused and all("overlaps tables/t9" in d.reason and not d.metrics
                           for d in refused)
    assert (2, INSPECT_FAILURE_RETRY_S) in store.finished_decisions  # looked at again soon


def test_an_action_already_active_is_not_asked_to_queue_again() -> None:
    """The batch learns which actions have an operation QUEUED or RUNNING in one query; a
    decision that calls for one of them says so without an INSERT that could only fail."""
    store = FakeStore(tables={1: make_table(location=f"{FAKE_ROOT}/t1")}, dirty={1})
    s = scheduler(store)
    s.run_once()
    assert len(store.ops) == 1 and store.enqueue_attempts == 1
    store.dirty.add(1)
    s.run_once()
    assert len(store.ops) == 1 and store.enqueue_attempts == 1  # not tried again
    last = [d for pk, d, _ in store.decisions if pk == 1][-1]
    assert not last.should_run and "an operation is already active" in last.reason


def test_a_failed_queueing_after_the_batch_write_fails_that_table_only() -> None:
    store = FakeStore(tables={pk: make_table(pk=pk) for pk in (1, 2)}, dirty={1, 2})
    real = store.operation_enqueue

    def enqueue(params):  # type: ignore[no-untyped-def]
        if params.table.pk == 1:
            raise RuntimeError("database hiccup")
        return real(params)

    store.operation_enqueue = enqueue  # type: ignore[method-assign]
    assert scheduler(store).run_once() == 2
    assert [pk for pk, _ in store.ops] == [2]
    assert (1, INSPECT_FAILURE_RETRY_S) in store.finished_decisions
    assert store.locations == {1: f"{FAKE_ROOT}/t1", 2: f"{FAKE_ROOT}/t2"}


def test_a_new_location_at_the_warehouse_root_pauses_the_table() -> None:
    """A table moved to its catalog's warehouse root (its location would hold every other
    table's files): paused, its decisions saying why, the location not stored."""
    store = FakeStore(tables={1: make_table()}, dirty={1}, catalogs={"c": make_catalog(
        properties={"warehouse": f"file://{FAKE_ROOT}/t1/"})})
    assert scheduler(store).run_once() == 1
    assert store.ops == [] and store.locations == {}
    assert store.tables[1].state is TableState.PAUSED
    reason = _reasons(store)[0]
    assert "table paused: location refused" in reason and "catalogs/c's warehouse" in reason
    # paused: the next pass decides nothing for it
    store.dirty.add(1)
    assert scheduler(store).run_once() == 0


def test_a_new_location_beside_the_warehouse_root_is_stored() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1}, catalogs={"c": make_catalog(
        properties={"warehouse": f"{FAKE_ROOT}/t10"})})
    assert scheduler(store).run_once() == 1
    assert store.locations == {1: f"{FAKE_ROOT}/t1"} and len(store.ops) == 1
