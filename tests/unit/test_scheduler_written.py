"""An equal decision is not written again; anything that differs is (issue 15)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tests.unit.fakes import NOW, FakeCoordinator, FakeFormat, FakeStore, make_table
from tms.domain import Decision
from tms.scheduler.loop import Scheduler
from tms.scheduler.written import WrittenDecisions


class Clocked(FakeFormat):
    """A rule that depends on the clock, like a minimum interval's "too soon"."""

    def evaluate(self, table, metrics, last_runs, now):  # type: ignore[no-untyped-def]
        too_soon = now < NOW + timedelta(minutes=5)
        return [Decision("compaction", False, "too soon" if too_soon else "nothing to do",
                         dict(metrics))]


def scheduler(store: FakeStore, fmt: FakeFormat, coord: FakeCoordinator | None = None,
              clock: list[datetime] | None = None) -> Scheduler:
    at = clock if clock is not None else [NOW]
    return Scheduler(store, coord or FakeCoordinator(),  # type: ignore[arg-type]
                     {"fake": fmt}, "s1", now=lambda: at[0])


def again(store: FakeStore, s: Scheduler, *pks: int) -> int:
    store.dirty |= set(pks or {1})
    return s.run_once()


def test_an_equal_decision_is_written_once_and_every_table_is_checked() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    fmt = FakeFormat(small_files=3)  # nothing to run
    s = scheduler(store, fmt)
    assert s.run_once() == 1
    assert again(store, s) == 1 and again(store, s) == 1
    assert len(store.decisions) == 1  # written once
    assert store.finished_decisions == [(1, s.pull_interval_s)] * 3  # checked three times
    assert s.written.skipped == 2
    fmt.small_files = 4  # the metrics and the reason change: written
    again(store, s)
    assert [d.reason for _, d, _ in store.decisions] == ["3 small files", "4 small files"]


def test_a_decision_that_changes_with_the_clock_is_written() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    clock = [NOW]
    s = scheduler(store, Clocked(small_files=3), clock=clock)
    s.run_once()
    again(store, s)
    clock[0] = NOW + timedelta(minutes=10)  # the table did not change, the decision did
    again(store, s)
    again(store, s)
    assert [d.reason for _, d, _ in store.decisions] == ["too soon", "nothing to do"]


def test_queued_then_already_active_then_equal() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    s = scheduler(store, FakeFormat(small_files=20))
    s.run_once()
    for _ in range(3):
        again(store, s)
    ops = [op for _, _, op in store.decisions]
    assert ops[0] is not None  # queued: written with its operation
    reasons = [d.reason for _, d, _ in store.decisions]
    assert len(store.decisions) == 2 and "already active" in reasons[1]


def test_a_change_of_shards_writes_again() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    coord = FakeCoordinator()
    s = scheduler(store, FakeFormat(small_files=3), coord)
    s.run_once()
    coord.shards = frozenset()  # released (another scheduler may write meanwhile)
    assert again(store, s) == 0
    coord.shards = None  # every shard again
    again(store, s)
    assert len(store.decisions) == 2


def test_a_failed_write_is_not_remembered() -> None:
    class Flaky(FakeStore):
        fail = True

        def decision_finish_batch(self, *a: Any) -> None:
            if self.fail:
                self.fail = False
                raise OSError("connection lost")
            super().decision_finish_batch(*a)

    store = Flaky(tables={1: make_table()}, dirty={1})
    s = scheduler(store, FakeFormat(small_files=3))
    try:
        s.run_once()
    except OSError:
        pass
    again(store, s)
    assert len(store.decisions) == 1


def test_memory_is_bounded() -> None:
    w = WrittenDecisions(max_tables=2)
    rows = [(pk, Decision("compaction", False, "r"), None) for pk in (1, 2, 3)]
    w.wrote(rows)
    assert len(w) <= 2
    assert w.changed(rows[2:]) == []  # the last one is remembered


def test_a_quiet_decision_span_continues_the_commit_trace(monkeypatch: Any) -> None:
    """With no exporter the decision's span records nothing but keeps the trace: the
    operation it queues stores a traceparent of the commit's trace."""
    from tms.observability import tracing
    from tms.scheduler.decide import decision_span

    monkeypatch.setitem(tracing._mode, "tracing", "quiet")
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with decision_span(make_table(), parent):
        inside = tracing.current_traceparent()
    assert inside is not None and inside.split("-")[1] == parent.split("-")[1]
    assert inside.split("-")[2] != parent.split("-")[2]
    assert tracing.current_traceparent() != inside  # ended with the decision


def test_without_tracing_a_decision_span_passes_the_commit_trace_on(monkeypatch: Any) -> None:
    """No SDK installed (the API's no-op spans): the decision keeps the commit's context as
    the no-op span did, and none when the table had no commit's; nothing left current."""
    from tms.observability import tracing
    from tms.scheduler.decide import decision_span

    monkeypatch.setitem(tracing._mode, "tracing", "unconfigured")
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with decision_span(make_table(), parent):
        assert tracing.current_traceparent() == parent
    with decision_span(make_table(), None):
        assert tracing.current_traceparent() is None
    with decision_span(make_table(), "00-zz-malformed"):
        assert tracing.current_traceparent() is None
    assert tracing.current_traceparent() is None
