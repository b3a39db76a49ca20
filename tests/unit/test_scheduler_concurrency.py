"""Deciding a batch on threads: in the calling thread while fast, spread once decisions wait,
bounded per catalog, and no decision lost when another raises. A fake clock says how long
each decision took; events order the threads (no sleeps, no timed assertions)."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import pytest

from tests.unit.fakes import FAKE_ROOT, NOW, FakeCoordinator, FakeFormat, FakeStore, make_table
from tms.scheduler.concurrency import DecisionRunner
from tms.scheduler.decide import ZooKeeperLost
from tms.scheduler.loop import Scheduler
from tms_services.scheduler import parse_count

WAIT_S = 10.0  # a bound on waiting for an event that must come; never reached when it works


def slow_clock() -> Any:
    """Every decision appears to take a second: the runner spreads after the first two."""
    ticks = itertools.count()
    return lambda: float(next(ticks))


def test_fast_decisions_stay_in_the_calling_thread() -> None:
    runner = DecisionRunner(8, 2, clock=lambda: 0.0)
    seen: list[int] = []
    out = runner.run(list(range(50)), lambda i: "c", lambda i: seen.append(
        threading.get_ident()) or i * 2)
    assert out.results == {i: i * 2 for i in range(50)} and not out.spread
    assert set(seen) == {threading.get_ident()} and runner.spread_batches == 0
    runner.close()


def test_one_slow_decision_alone_does_not_bring_the_threads_in() -> None:
    """Preempted by the machine's other load, not waiting: the next decision is fast."""
    ticks = iter([0.0, 1.0] + [1.0] * 100)
    runner = DecisionRunner(4, 4, clock=lambda: next(ticks))
    out = runner.run(list(range(20)), lambda i: "c", lambda i: i)
    assert len(out.results) == 20 and runner.spread_batches == 0


def test_one_thread_never_spreads_even_when_slow() -> None:
    runner = DecisionRunner(1, 2, clock=slow_clock())
    out = runner.run(list(range(5)), lambda i: "c", lambda i: i)
    assert len(out.results) == 5 and runner.spread_batches == 0


def test_waiting_decisions_are_spread_and_the_next_batch_starts_spread() -> None:
    runner = DecisionRunner(4, 4, clock=slow_clock())
    main = threading.get_ident()
    where: dict[int, int] = {}

    def decide(i: int) -> int:
        where[i] = threading.get_ident()
        return i

    out = runner.run(list(range(20)), lambda i: "c", decide)
    assert out.results == {i: i for i in range(20)} and out.spread
    assert where[0] == where[1] == main and all(where[i] != main for i in range(2, 20))
    where.clear()
    runner.run(list(range(5)), lambda i: "c", decide)
    assert main not in where.values() and runner.spread_batches == 2
    runner.close()


def test_quick_items_go_first_in_the_calling_thread_even_after_a_waiting_batch() -> None:
    """Unchanged tables (quick) are decided in the calling thread although the last batch
    waited; the others are spread as before."""
    walls = {i: (0.0 if i % 2 else 1.0) for i in range(20)}  # odd: quick and fast
    now = [0.0]

    def clock() -> float:
        return now[0]

    runner = DecisionRunner(4, 4, clock=clock)
    runner._waiting = True  # the last batch waited
    main = threading.get_ident()
    where: dict[int, int] = {}
    order: list[int] = []
    lock = threading.Lock()

    def decide(i: int) -> int:
        with lock:
            where[i] = threading.get_ident()
            order.append(i)
        if threading.get_ident() == main:
            now[0] += walls[i]
        return i

    out = runner.run(list(range(20)), lambda i: "c", decide, quick=lambda i: i % 2 == 1)
    assert out.results == {i: i for i in range(20)} and out.spread
    assert order[:10] == list(range(1, 20, 2))  # the quick ones first, in order
    assert all(where[i] == main for i in range(1, 20, 2))
    assert all(where[i] != main for i in range(0, 20, 2))
    runner.close()


def test_quick_items_that_wait_after_all_join_the_spread() -> None:
    runner = DecisionRunner(4, 4, clock=slow_clock())  # every decision waits
    main = threading.get_ident()
    where: dict[int, int] = {}

    def decide(i: int) -> int:
        where[i] = threading.get_ident()
        return i

    out = runner.run(list(range(12)), lambda i: "c", decide, quick=lambda i: i < 6)
    assert out.results == {i: i for i in range(12)}
    assert [i for i in range(12) if where[i] == main] == [0, 1]  # two in a row, then spread
    runner.close()


def test_quick_items_slowed_by_a_loaded_machine_stay_in_the_calling_thread() -> None:
    """10 ms each (preempted, not reading): above WAITING_S, far below QUICK_WAITING_S."""
    ticks = itertools.count()
    runner = DecisionRunner(4, 4, clock=lambda: next(ticks) * 0.01)
    out = runner.run(list(range(30)), lambda i: "c", lambda i: i, quick=lambda i: True)
    assert len(out.results) == 30 and not out.spread and runner.spread_batches == 0


def test_zookeeper_lost_among_quick_items_starts_nothing_more() -> None:
    runner = DecisionRunner(4, 4, clock=lambda: 0.0, stop_on=(ZooKeeperLost,))

    def decide(i: int) -> int:
        if i == 3:
            raise ZooKeeperLost("gone")
        return i

    out = runner.run(list(range(10)), lambda i: "c", decide, quick=lambda i: i >= 2)
    assert isinstance(out.stopped, ZooKeeperLost)
    assert set(out.results) == {2} and set(out.failures) == {3}  # 0, 1, 4..9 not started
    runner.close()


def test_reads_in_flight_per_catalog_are_bounded_and_other_catalogs_go_on() -> None:
    """16 threads, 3 slots per catalog: catalog a never has more than 3 decisions in flight,
    and every decision of catalog b finishes while a's are held."""
    runner = DecisionRunner(16, 3, clock=slow_clock())
    items = ["z", "z"] + ["a", "b"] * 10 + ["a"] * 10
    lock = threading.Condition()
    in_flight = {"a": 0, "b": 0, "z": 0}  # z: the two decided before the threads come in
    peak = dict(in_flight)
    b_done = 0
    go = threading.Event()

    def decide(cat: str) -> str:
        nonlocal b_done
        with lock:
            in_flight[cat] += 1
            peak[cat] = max(peak[cat], in_flight[cat])
            lock.notify_all()
        if cat == "a":
            assert go.wait(WAIT_S)
        with lock:
            in_flight[cat] -= 1
            if cat == "b":
                b_done += 1
            lock.notify_all()
        return cat

    result: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: result.update(
        out=runner.run(items, lambda c: c, decide)))
    worker.start()
    with lock:
        assert lock.wait_for(lambda: b_done == 10 and in_flight["a"] == 3, WAIT_S)
        held = in_flight["a"]
    go.set()
    worker.join(WAIT_S)
    out = result["out"]
    assert held == 3 and peak["a"] == 3 and peak["b"] <= 3
    assert len(out.results) == len(items) and not out.failures
    runner.close()


def test_an_exception_in_one_thread_loses_no_other_decision() -> None:
    runner = DecisionRunner(4, 4, clock=slow_clock())

    def decide(i: int) -> int:
        if i == 7:
            raise ValueError("boom")
        return i

    out = runner.run(list(range(30)), lambda i: "c", decide)
    assert set(out.results) == set(range(30)) - {7}
    assert isinstance(out.failures[7], ValueError) and out.stopped is None
    runner.close()


def test_a_stop_exception_starts_nothing_new_and_keeps_what_finished() -> None:
    runner = DecisionRunner(2, 2, clock=slow_clock(), stop_on=(ZooKeeperLost,))
    second_started = threading.Event()

    def decide(i: int) -> int:
        if i == 2:
            assert second_started.wait(WAIT_S)
            raise ZooKeeperLost("gone")
        if i == 3:  # in flight beside the failing one: finishes after the stop
            second_started.set()
            assert runner.stopping.wait(WAIT_S)
        return i

    out = runner.run(list(range(10)), lambda i: "c", decide)
    assert isinstance(out.stopped, ZooKeeperLost)
    assert out.results == {0: 0, 1: 1, 3: 3} and set(out.failures) == {2}  # 4.. never started
    runner.close()


def _scheduler(store: FakeStore, coord: FakeCoordinator, fmt: FakeFormat) -> Scheduler:
    s = Scheduler(store, coord, {"fake": fmt}, "s1",  # type: ignore[arg-type]
                  pull_interval_s=123.0, now=lambda: NOW, decision_threads=4)
    s.runner = DecisionRunner(4, 2, clock=slow_clock(), stop_on=(ZooKeeperLost,))
    return s


def test_the_loop_records_every_decision_of_a_spread_batch_in_batch_order() -> None:
    store = FakeStore(tables={pk: make_table(pk=pk) for pk in range(1, 21)},
                      dirty=set(range(1, 21)))
    s = _scheduler(store, FakeCoordinator(), FakeFormat())
    assert s.run_once() == 20 and s.runner.spread_batches == 1
    assert [pk for pk, _, _ in store.decisions] == list(range(1, 21))
    assert sorted(pk for pk, _ in store.ops) == list(range(1, 21))
    assert store.dirty == set()
    s.runner.close()


def test_the_loop_gives_marks_back_when_the_session_is_lost_on_a_thread() -> None:
    # locations known (a first look queues only once its batch's locations are stored)
    store = FakeStore(tables={pk: make_table(pk=pk, location=f"{FAKE_ROOT}/t{pk}")
                              for pk in range(1, 11)}, dirty=set(range(1, 11)))
    coord = FakeCoordinator()
    s = _scheduler(store, coord, FakeFormat())

    class LosesSession(FakeFormat):
        def inspect(self, table, catalog):  # type: ignore[no-untyped-def]
            if table.pk == 3:  # the first decision on a worker thread
                coord.healthy = False
            elif table.pk > 3:
                assert s.runner.stopping.wait(WAIT_S)
            return super().inspect(table, catalog)

    s.formats = {"fake": LosesSession()}
    with pytest.raises(ZooKeeperLost):
        s.run_once()
    decided = {pk for pk, _, _ in store.decisions}
    assert {1, 2} <= decided and 3 not in decided and s.runner.spread_batches == 1
    assert sorted(pk for pk, _ in store.ops) == [1, 2]  # none queued once the session was lost
    assert store.dirty == set(range(1, 11)) - decided and 3 in store.dirty
    s.runner.close()


@pytest.mark.parametrize("raw", ["0", "-1", "+4", " 4", "4.0", "1_0", "٤", "99999", "", "x"])
def test_thread_counts_are_parsed_strictly(raw: str) -> None:
    with pytest.raises(ValueError, match="--decision-threads"):
        parse_count(raw, "--decision-threads", 1024)


def test_thread_count_flags_reach_the_runner() -> None:
    assert parse_count("64", "--decision-threads", 1024) == 64
    s = Scheduler(FakeStore(), FakeCoordinator(), {}, "s1",  # type: ignore[arg-type]
                  decision_threads=8, catalog_reads_in_flight=3)
    assert s.runner.threads == 8 and s.runner.slots.per_catalog == 3
    assert s.batch_size >= 4 * 8


@pytest.mark.parametrize("argv,env,flag", [
    (["--decision-threads", "0"], {}, "--decision-threads"),
    (["--catalog-reads-in-flight", "+8"], {}, "--catalog-reads-in-flight"),
    ([], {"TMS_DECISION_THREADS": "64 "}, "--decision-threads"),
    ([], {"TMS_CATALOG_READS_IN_FLIGHT": "99999999999999999999999"},
     "--catalog-reads-in-flight"),
])
def test_bad_counts_stop_the_scheduler_before_it_connects(
        argv: list[str], env: dict[str, str], flag: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from tms_services import scheduler as service

    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(SystemExit) as exited:
        service.main(["--database-url", "postgresql://127.0.0.1:1/none",
                      "--zookeeper", "127.0.0.1:1", *argv])
    assert exited.value.code == 2 and flag in capsys.readouterr().err
