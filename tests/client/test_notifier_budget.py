"""The CommitNotifier's retry budget is time, and every drop is reported (unit tests: a fake
TMS and a fake clock, so a minute of retrying runs in milliseconds)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

import grpc
import pytest

from tms_client import Commit, CommitNotifier, RetryPolicy
from tms_client.commits import CommitResult
from tms_client.errors import NotFoundError, PermissionDeniedError, TmsError, UnavailableError
from tms_client.notifier import DEFAULT_NOTIFIER_RETRY
from tms_client.retry import MIN_ATTEMPT_TIMEOUT_S, RetryState, Safety
from tms_client.tally import (
    DROP_CLOSED,
    DROP_INVALID,
    DROP_QUEUE_FULL,
    DROP_REJECTED,
    DROP_UNAVAILABLE,
)

FLUSH_TIMEOUT_S = 10.0  # real seconds: the fake clock makes the notifier's waits instant
BUDGET_S = DEFAULT_NOTIFIER_RETRY.total_timeout_s
ATTEMPT_S = 2.0  # how long a failing attempt takes on the fake clock (the API's pool wait)


class FakeClock:
    """Time that moves only when someone waits (or a fake call takes time)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds

    def wait(self, event: threading.Event, timeout_s: float) -> bool:
        if event.is_set():
            return True
        self.advance(timeout_s)
        return False


@dataclass
class FakeTms:
    """A TmsClient stand-in: down (UNAVAILABLE after ATTEMPT_S) until ``up_at`` on the fake
    clock, then stores every commit; ``refuse`` answers every call with that error."""

    clock: FakeClock
    up_at: float = float("inf")
    refuse: TmsError | None = None
    unknown_tables: frozenset[str] = frozenset()
    options: SimpleNamespace = field(default_factory=lambda: SimpleNamespace(deadline_s=10.0))
    attempts: list[float] = field(default_factory=list)
    stored: list[Commit] = field(default_factory=list)

    def notify_commits(self, commits: Sequence[Commit], *, deadline_s: float,
                       retry: RetryPolicy) -> list[CommitResult]:
        assert retry.max_attempts == 1  # the notifier retries itself
        self.attempts.append(self.clock.monotonic())
        if self.refuse is not None:
            raise self.refuse
        if self.clock.monotonic() < self.up_at:
            self.clock.advance(min(ATTEMPT_S, deadline_s))
            raise UnavailableError(grpc.StatusCode.UNAVAILABLE, "database unavailable")
        out = []
        for c in commits:
            if c.table_id in self.unknown_tables:
                out.append(CommitResult(c, error=NotFoundError(grpc.StatusCode.NOT_FOUND,
                                                               f"tables/{c.table_id}")))
            else:
                self.stored.append(c)
                out.append(CommitResult(c))
        return out


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def notifier_for(tms: FakeTms, clock: FakeClock, drops: list[tuple[str, list[str]]],
                 **kwargs: object) -> CommitNotifier:
    def on_drop(commits: list[Commit], reason: str) -> None:
        drops.append((reason, [c.commit_id for c in commits]))

    return CommitNotifier(tms, clock=clock, on_drop=on_drop, linger_s=0.0,  # type: ignore[arg-type]
                          **kwargs)  # type: ignore[arg-type]


def test_an_outage_shorter_than_the_budget_drops_nothing(clock: FakeClock) -> None:
    """Down for 55 s of a 60 s budget: far more than 8 attempts, and the batch gets through."""
    tms = FakeTms(clock, up_at=clock.now + BUDGET_S - 5.0)
    drops: list[tuple[str, list[str]]] = []
    notifier = notifier_for(tms, clock, drops)
    assert notifier.notify("sales.orders", "1")
    assert notifier.flush(FLUSH_TIMEOUT_S)
    stats = notifier.stats()
    assert (stats.sent, stats.dropped, drops) == (1, 0, [])
    assert [c.commit_id for c in tms.stored] == ["1"]
    assert len(tms.attempts) > 8  # the old cap of 8 attempts would have dropped it
    assert notifier.close(FLUSH_TIMEOUT_S)


def test_attempts_continue_until_the_time_budget_is_spent(clock: FakeClock) -> None:
    """TMS never comes back: the notifier keeps trying for the whole budget, then drops the
    batch as unavailable and reports it."""
    start = clock.now
    tms = FakeTms(clock)
    drops: list[tuple[str, list[str]]] = []
    notifier = notifier_for(tms, clock, drops)
    for i in range(3):
        assert notifier.notify("sales.orders", str(i))
    assert notifier.flush(FLUSH_TIMEOUT_S)
    # the last attempt starts within MIN_ATTEMPT_TIMEOUT_S of the budget's end
    assert tms.attempts[-1] >= start + BUDGET_S - MIN_ATTEMPT_TIMEOUT_S - ATTEMPT_S
    assert clock.now >= start + BUDGET_S
    gaps = [b - a for a, b in zip(tms.attempts, tms.attempts[1:], strict=False)]
    cap = DEFAULT_NOTIFIER_RETRY.max_backoff_s
    assert max(gaps) <= cap + ATTEMPT_S  # backoff capped
    stats = notifier.stats()
    assert stats.dropped_unavailable == 3 and stats.sent == 0
    assert drops == [(DROP_UNAVAILABLE, ["0", "1", "2"])]


def test_a_policy_with_an_attempt_cap_still_spends_its_time(clock: FakeClock) -> None:
    """The notifier's budget is time even when the policy it is given caps attempts."""
    policy = RetryPolicy(max_attempts=2, initial_backoff_s=0.1, max_backoff_s=1.0,
                         total_timeout_s=30.0)
    tms = FakeTms(clock, up_at=clock.now + 20.0)
    drops: list[tuple[str, list[str]]] = []
    notifier = notifier_for(tms, clock, drops, retry=policy)
    assert notifier.notify("sales.orders", "late")
    assert notifier.flush(FLUSH_TIMEOUT_S)
    assert notifier.stats().sent == 1 and drops == [] and len(tms.attempts) > 2


def test_a_refusal_is_dropped_at_once_and_reported(clock: FakeClock) -> None:
    tms = FakeTms(clock, up_at=clock.now,
                  refuse=PermissionDeniedError(grpc.StatusCode.PERMISSION_DENIED, "no"))
    drops: list[tuple[str, list[str]]] = []
    notifier = notifier_for(tms, clock, drops)
    assert notifier.notify("sales.orders", "1")
    assert notifier.flush(FLUSH_TIMEOUT_S)
    assert len(tms.attempts) == 1
    assert drops == [(DROP_REJECTED, ["1"])] and notifier.stats().rejected == 1


def test_every_kind_of_drop_reaches_on_drop(clock: FakeClock) -> None:
    tms = FakeTms(clock, up_at=clock.now, unknown_tables=frozenset({"sales.gone"}))
    drops: list[tuple[str, list[str]]] = []
    notifier = notifier_for(tms, clock, drops, batch_size=5)
    assert not notifier.notify("Not A Table", "bad")
    assert not notifier.notify("sales.orders", "x", files_added="many")  # type: ignore[arg-type]
    assert notifier.notify("sales.gone", "refused")
    assert notifier.notify("sales.orders", "ok")
    assert notifier.flush(FLUSH_TIMEOUT_S)
    assert notifier.close(FLUSH_TIMEOUT_S)
    assert not notifier.notify("sales.orders", "after-close")
    reasons = sorted(drops)
    assert reasons == [(DROP_CLOSED, ["after-close"]), (DROP_INVALID, ["bad"]),
                       (DROP_INVALID, ["x"]), (DROP_REJECTED, ["refused"])]
    stats = notifier.stats()
    assert (stats.dropped_invalid, stats.rejected, stats.dropped_closed, stats.sent) == \
        (2, 1, 1, 1)


def test_a_full_queue_is_reported(clock: FakeClock) -> None:
    release = threading.Event()

    class Stuck(FakeTms):
        def notify_commits(self, commits: Sequence[Commit], **kw: object) -> list[CommitResult]:
            release.wait(FLUSH_TIMEOUT_S)
            return super().notify_commits(commits, **kw)  # type: ignore[arg-type]

    tms = Stuck(clock, up_at=clock.now)
    drops: list[tuple[str, list[str]]] = []
    notifier = notifier_for(tms, clock, drops, queue_size=1, batch_size=1)
    results = [notifier.notify("sales.orders", str(i)) for i in range(5)]
    release.set()
    assert notifier.flush(FLUSH_TIMEOUT_S)
    full = [ids for reason, ids in drops if reason == DROP_QUEUE_FULL]
    assert results.count(False) == len(full) >= 1
    assert notifier.stats().dropped_queue_full == len(full)


def test_a_failing_on_drop_never_reaches_the_notifier_or_the_writer(clock: FakeClock) -> None:
    def on_drop(commits: list[Commit], reason: str) -> None:
        raise RuntimeError("the writer's metrics backend is down")

    tms = FakeTms(clock)
    notifier = CommitNotifier(tms, clock=clock, on_drop=on_drop,  # type: ignore[arg-type]
                              retry=RetryPolicy(max_attempts=None, total_timeout_s=5.0))
    assert not notifier.notify("Not A Table", "bad")  # raised in the writer's thread: caught
    assert notifier.notify("sales.orders", "1")
    assert notifier.flush(FLUSH_TIMEOUT_S)  # raised in the notifier's thread: it goes on
    tms.up_at = clock.now
    assert notifier.notify("sales.orders", "2")
    assert notifier.flush(FLUSH_TIMEOUT_S)
    stats = notifier.stats()
    assert (stats.on_drop_errors, stats.dropped_invalid, stats.dropped_unavailable,
            stats.sent) == (2, 1, 1, 1)


def test_time_only_retry_state() -> None:
    clock = FakeClock()
    state = RetryState(RetryPolicy(max_attempts=None, initial_backoff_s=1.0, max_backoff_s=8.0,
                                   total_timeout_s=60.0), 10.0, Safety.SAFE, clock.monotonic)
    waits = []
    while True:
        state.attempt_timeout_s()
        wait = state.next_wait_s(grpc.StatusCode.UNAVAILABLE)
        if wait is None:
            break
        waits.append(wait)
        clock.advance(wait + 1.0)
    assert len(waits) > 6 and max(waits) <= 8.0
    assert clock.now >= 1000.0 + 60.0 - MIN_ATTEMPT_TIMEOUT_S  # the budget was spent
    # a huge attempt number neither overflows nor exceeds the cap
    assert RetryPolicy(max_attempts=None).backoff_s(10_000, rand=lambda: 1.0) == \
        RetryPolicy().max_backoff_s
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
