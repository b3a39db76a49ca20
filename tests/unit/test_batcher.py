"""Group commit: concurrent notifications share store calls; errors reach every waiter."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest

from tms.api.batcher import CommitBatcher
from tms.domain import CommitEvent


class SlowStore:
    """Blocks its first call until released, so the next events pile up into one group."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[int] = []
        self.release = threading.Event()
        self.fail = fail

    def commits_notify(self, events: Sequence[CommitEvent]) -> list[bool | None]:
        self.calls.append(len(events))
        if len(self.calls) == 1:
            assert self.release.wait(10)
        if self.fail:
            raise OSError("database gone")
        return [None if e.table_id == "unknown" else e.commit_id != "dup" for e in events]


def test_waiting_events_are_written_together() -> None:
    store = SlowStore()
    batcher = CommitBatcher(store, flushers=1, stuck_flush_s=60)  # type: ignore[arg-type]
    with ThreadPoolExecutor(12) as pool:
        first = pool.submit(batcher.notify, CommitEvent("t", "first"))
        while not store.calls:
            threading.Event().wait(0.01)
        events = [CommitEvent("t", str(i)) for i in range(9)]
        events += [CommitEvent("t", "dup"), CommitEvent("unknown", "x")]
        futures = [pool.submit(batcher.notify, e) for e in events]
        while batcher._queue.qsize() < len(events):
            threading.Event().wait(0.01)
        store.release.set()
        results = [f.result(10) for f in futures]
    assert first.result(10) is True
    assert results == [True] * 9 + [False, None]
    assert store.calls == [1, 11]
    batcher.close()


def test_store_errors_reach_every_waiter() -> None:
    store = SlowStore(fail=True)
    store.release.set()
    batcher = CommitBatcher(store)  # type: ignore[arg-type]
    with pytest.raises(OSError, match="database gone"):
        batcher.notify(CommitEvent("t", "1"))
    batcher.close()


class HangingStore:
    """Its first call never answers (a connection whose reply was lost); later calls do."""

    def __init__(self) -> None:
        self.calls = 0
        self.hang = threading.Event()

    def commits_notify(self, events: Sequence[CommitEvent]) -> list[bool | None]:
        self.calls += 1
        if self.calls == 1:
            self.hang.wait(30)
            raise OSError("connection reset")
        return [True for _ in events]


def test_a_stuck_flush_times_out_its_caller_and_a_spare_serves_the_rest() -> None:
    store = HangingStore()
    batcher = CommitBatcher(store, stuck_flush_s=0.2)  # type: ignore[arg-type]
    with pytest.raises(TimeoutError):
        batcher.notify(CommitEvent("t", "stuck"), timeout_s=0.5)
    # every flusher has been busy > 0.2 s: this call starts a spare that answers it
    assert batcher.notify(CommitEvent("t", "next"), timeout_s=5) is True
    assert store.calls == 2
    store.hang.set()
    batcher.close()


def test_spares_are_bounded() -> None:
    store = HangingStore()
    store.calls = -10  # the first eleven calls hang
    original = store.commits_notify

    def hang_all(events: Sequence[CommitEvent]) -> list[bool | None]:
        store.calls += 1
        if store.calls <= 1:
            store.hang.wait(30)
            raise OSError("connection reset")
        return original(events)

    store.commits_notify = hang_all  # type: ignore[method-assign]
    batcher = CommitBatcher(store, stuck_flush_s=0.05, max_flushers=3)  # type: ignore[arg-type]
    for i in range(6):
        with pytest.raises(TimeoutError):
            batcher.notify(CommitEvent("t", str(i)), timeout_s=0.2)
    assert len(batcher._threads) == 3
    store.hang.set()
    batcher.close()
