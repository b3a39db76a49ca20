"""Group commit for NotifyCommit: concurrent single notifications share one statement.

Each handler hands its event to a flusher thread and waits for the outcome; the flusher takes
everything queued at that moment (up to MAX_GROUP_EVENTS) and writes it with one call to the
store. Nothing waits for a batch to fill, so a lone call pays no extra latency; under load the
cost of a transaction (round trip, WAL flush) is shared. An acknowledgement is still only sent
after the database has committed the event.

The hand-off is a slot holding a lock the caller acquired before queueing it: the flusher
fills in the outcome and releases the lock, the caller's second acquire returns. That is a
third of the work of a ``concurrent.futures.Future`` per call (no condition variable, no
callbacks list, no state machine), and NotifyCommit is called at the rate of gRPC itself.

A flush can hang on a database connection that stopped answering (the fault suite holds a
reply after PostgreSQL committed). Two things keep that from stalling the node: a caller waits
at most its deadline (then UNAVAILABLE, and its retry is idempotent), and when every flusher
has been busy longer than STUCK_FLUSH_S a spare flusher starts on another pool connection
(up to MAX_FLUSHERS; a spare ends after IDLE_EXIT_S without work).
"""

from __future__ import annotations

import itertools
import queue
import threading
import time

import structlog

from tms.domain import CommitEvent
from tms.storage.roles import IntakeStore

MAX_GROUP_EVENTS = 256
# Measured (bench/api_bench.py): 1 flusher 1,669 calls/s, 2 flushers 1,258, 6 flushers 1,052:
# one flusher makes bigger groups and fewer threads contend for the interpreter lock.
FLUSHER_THREADS = 1
SUBMIT_TIMEOUT_S = 10.0
STUCK_FLUSH_S = 2.0
MAX_FLUSHERS = 4
IDLE_EXIT_S = 30.0
CLOSE_WAIT_S = 5.0

log = structlog.get_logger("tms.api.batcher")
_STOP = object()


class _Slot:
    """One waiting call: its event, and the outcome the flusher leaves behind."""

    __slots__ = ("event", "done", "outcome", "error")

    def __init__(self, event: CommitEvent) -> None:
        self.event = event
        self.done = threading.Lock()
        self.done.acquire()  # released once by the flusher: outcome or error is then set
        self.outcome: bool | str | None = None
        self.error: BaseException | None = None


class CommitBatcher:
    def __init__(self, store: IntakeStore, *, flushers: int = FLUSHER_THREADS,
                 max_events: int = MAX_GROUP_EVENTS, stuck_flush_s: float = STUCK_FLUSH_S,
                 max_flushers: int = MAX_FLUSHERS) -> None:
        self._store = store
        self._max = max_events
        self._stuck_s = stuck_flush_s
        self._max_flushers = max(max_flushers, flushers)
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._busy_since: dict[str, float | None] = {}  # flusher name -> start of its flush
        self._names = itertools.count()
        self._closed = False
        self._threads: list[threading.Thread] = []
        for _ in range(flushers):
            self._start_flusher(spare=False)

    def _start_flusher(self, spare: bool) -> None:
        name = f"commit-flusher-{next(self._names)}"
        self._busy_since[name] = None
        t = threading.Thread(target=self._run, args=(name, spare), name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def notify(self, event: CommitEvent, timeout_s: float | None = None) -> bool | str | None:
        """The event's outcome (see IntakeStore.commits_notify); raises what the store raised, or
        TimeoutError after ``timeout_s`` (default SUBMIT_TIMEOUT_S)."""
        slot = _Slot(event)
        self._queue.put(slot)
        self._spare_if_stuck()
        limit = SUBMIT_TIMEOUT_S if timeout_s is None else min(timeout_s, SUBMIT_TIMEOUT_S)
        if not slot.done.acquire(timeout=max(limit, 0.0)):
            raise TimeoutError(f"commit not written within {limit:.1f} s")
        if slot.error is not None:
            raise slot.error
        return slot.outcome

    def _spare_if_stuck(self) -> None:
        # Lock-free first look (a copy of the values is atomic under the interpreter lock):
        # while any flusher is idle, or busy for less than STUCK_FLUSH_S, nothing to do.
        now = time.monotonic()
        if any(t is None or now - t <= self._stuck_s for t in list(self._busy_since.values())):
            return
        with self._lock:
            if self._closed or len(self._busy_since) >= self._max_flushers:
                return
            starts = self._busy_since.values()
            if all(t is not None and now - t > self._stuck_s for t in starts):
                log.warning("every commit flusher is stuck on the database; starting a spare",
                            flushers=len(self._busy_since))
                self._start_flusher(spare=True)

    def close(self) -> None:
        """Write what is queued, then stop; a flusher stuck on the database is not waited for
        longer than CLOSE_WAIT_S."""
        with self._lock:
            self._closed = True
            count = len(self._busy_since)
        for _ in range(count):
            self._queue.put(_STOP)
        deadline = time.monotonic() + CLOSE_WAIT_S
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def _run(self, name: str, spare: bool) -> None:
        try:
            while True:
                try:
                    item = self._queue.get(timeout=IDLE_EXIT_S if spare else None)
                except queue.Empty:
                    return  # a spare that is no longer needed
                if item is _STOP:
                    return
                group = [item]
                while len(group) < self._max:
                    try:
                        nxt = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is _STOP:
                        self._queue.put(_STOP)  # let the loop end after this group
                        break
                    group.append(nxt)
                with self._lock:
                    self._busy_since[name] = time.monotonic()
                self._flush(group)  # type: ignore[arg-type]
                with self._lock:
                    self._busy_since[name] = None
        finally:
            with self._lock:
                self._busy_since.pop(name, None)

    def _flush(self, group: list[_Slot]) -> None:
        try:
            outcomes = self._store.commits_notify([s.event for s in group])
        except Exception as e:  # every waiter gets the error; the API maps it to a status
            for slot in group:
                slot.error = e
                slot.done.release()
            return
        for slot, outcome in zip(group, outcomes, strict=True):
            slot.outcome = outcome
            slot.done.release()
