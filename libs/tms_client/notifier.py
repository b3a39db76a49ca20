"""Fire-and-forget commit notification for writers that must never wait on TMS.

``notify()`` only validates and enqueues: it returns at once (waiting at most
``enqueue_timeout_s`` for room, capped at ``MAX_ENQUEUE_TIMEOUT_S``), never raises, and a
background thread sends the queue in NotifyCommits batches with retries.

The retry budget is time: a batch is retried (backoff capped at the policy's ``max_backoff_s``)
until ``total_timeout_s`` is spent, never given up after a number of attempts first, so an
outage shorter than the budget costs no commit. A commit that does not reach TMS for any reason
(queue full, malformed, TMS down for the whole budget, refused, close() timed out) is counted
in :class:`NotifierStats`, logged at a limited rate and handed to the writer's ``on_drop``
callback: a lost notification only delays maintenance until the scheduler's pull check, but it
is never lost quietly.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import replace
from datetime import datetime
from typing import Any

from tms_client.client import TmsClient
from tms_client.clock import SYSTEM_CLOCK, Clock
from tms_client.commits import (
    MAX_BATCH_COMMITS,
    Commit,
    CommitResult,
    check_commit,
    split_refused,
)
from tms_client.errors import InvalidArgumentError, TmsError
from tms_client.retry import (
    MIN_ATTEMPT_TIMEOUT_S,
    NO_RETRY,
    TRANSIENT_CODES,
    RetryPolicy,
    RetryState,
    Safety,
)
from tms_client.tally import (
    DROP_CLOSED,
    DROP_ERROR,
    DROP_INVALID,
    DROP_QUEUE_FULL,
    DROP_REJECTED,
    DROP_UNAVAILABLE,
    NotifierStats,
    OnDrop,
    Tally,
)

DEFAULT_QUEUE_SIZE = 10_000
DEFAULT_BATCH_SIZE = 500
DEFAULT_LINGER_S = 0.05  # how long a batch waits for company before it is sent
DEFAULT_ENQUEUE_TIMEOUT_S = 0.0
MAX_ENQUEUE_TIMEOUT_S = 0.5  # the most notify() ever blocks
IDLE_POLL_S = 0.5
DEFAULT_CLOSE_TIMEOUT_S = 5.0
# the budget is time only (max_attempts None): a batch is retried until 60 s are spent
DEFAULT_NOTIFIER_RETRY = RetryPolicy(max_attempts=None, max_backoff_s=10.0,
                                     total_timeout_s=60.0)

CLOSE_LOSSES = ("dropped_unavailable", "dropped_closed", "dropped_error")

log = logging.getLogger("tms_client.notifier")


def _text(value: Any) -> str:
    """``str(value)``, or its type's name when even that fails: notify() must not raise."""
    try:
        return str(value)
    except Exception:
        return f"<unprintable {type(value).__name__}>"


class CommitNotifier:
    """Thread-safe; one per process is enough. ``close()`` it on shutdown to send the rest.

    ``retry``: backoff and the time budget of one batch; its ``max_attempts`` is not used (the
    budget is time). ``on_drop(commits, reason)`` is called for every commit that will not
    reach TMS, with a reason from :data:`tms_client.tally.DROP_REASONS`, from the notifier's
    thread or the one calling notify()/close(); keep it quick. If it raises, the error is
    counted (``stats().on_drop_errors``) and never reaches the notifier or the writer.
    ``clock``: the time source of retries and waits (tests pass a fake).
    """

    def __init__(self, client: TmsClient, *, queue_size: int = DEFAULT_QUEUE_SIZE,
                 batch_size: int = DEFAULT_BATCH_SIZE, linger_s: float = DEFAULT_LINGER_S,
                 enqueue_timeout_s: float = DEFAULT_ENQUEUE_TIMEOUT_S,
                 retry: RetryPolicy = DEFAULT_NOTIFIER_RETRY, on_drop: OnDrop | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        if not 1 <= batch_size <= MAX_BATCH_COMMITS or queue_size < 1:
            raise ValueError(f"need queue_size >= 1 and batch_size in 1..{MAX_BATCH_COMMITS}")
        self._client = client
        self._batch_size = batch_size
        self._linger_s = linger_s
        self._enqueue_timeout_s = min(max(enqueue_timeout_s, 0.0), MAX_ENQUEUE_TIMEOUT_S)
        self._retry = replace(retry, max_attempts=None)
        self._clock = clock
        self._queue: queue.Queue[Commit] = queue.Queue(queue_size)
        self._tally = Tally(log, on_drop)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._wake = threading.Event()
        self._give_up_at: float | None = None
        self._thread = threading.Thread(target=self._run, name="tms-commit-notifier",
                                        daemon=True)
        self._thread.start()

    # --- the writer's side --------------------------------------------------------------------

    def notify(self, table_id: str, commit_id: str, *, commit_time: datetime | None = None,
               files_added: int | None = None, bytes_added: int | None = None,
               operation: str = "") -> bool:
        """Queues one commit; True if queued. Never raises, never blocks past the bound."""
        return self.submit(Commit(_text(table_id), _text(commit_id), commit_time, files_added,
                                  bytes_added, _text(operation)))

    def submit(self, commit: Commit) -> bool:
        """:meth:`notify` for a ready-made Commit (the hook uses it); never raises."""
        try:
            return self._submit(commit)
        except Exception as e:  # a notification must never break the writer's commit path
            self._tally.drop(DROP_INVALID, [commit], f"{type(e).__name__}: {e}")
            return False

    def _submit(self, commit: Commit) -> bool:
        problem = check_commit(commit)
        if problem is not None:
            self._tally.drop(DROP_INVALID, [commit], f"{commit.table_id[:80]}: {problem}")
            return False
        if self._closing.is_set():
            self._tally.drop(DROP_CLOSED, [commit], "notify() after close()")
            return False
        try:
            if self._enqueue_timeout_s > 0:
                self._queue.put(commit, timeout=self._enqueue_timeout_s)
            else:
                self._queue.put_nowait(commit)
        except queue.Full:
            self._tally.drop(DROP_QUEUE_FULL, [commit], f"queue of {self._queue.maxsize} is full")
            return False
        self._tally.add("enqueued")
        return True

    def stats(self) -> NotifierStats:
        return self._tally.snapshot()

    def flush(self, timeout_s: float) -> bool:
        """Waits until every commit queued before this call is sent or dropped."""
        return self._tally.wait_handled(timeout_s)

    def close(self, timeout_s: float = DEFAULT_CLOSE_TIMEOUT_S) -> bool:
        """Sends what is queued for up to ``timeout_s`` and drops the rest. True when TMS
        answered for every queued commit; False if any was dropped meanwhile."""
        before = self.stats()
        with self._lock:
            if self._give_up_at is None:
                self._give_up_at = self._clock.monotonic() + timeout_s
        self._closing.set()
        self._wake.set()
        self._thread.join(max(timeout_s, 0.0) + IDLE_POLL_S)
        if not self._thread.is_alive():  # a notify() racing close() may have queued late
            self._drop_leftovers()
        self._tally.flush_log()
        after = self.stats()
        lost = sum(getattr(after, f) - getattr(before, f) for f in CLOSE_LOSSES)
        return not self._thread.is_alive() and lost == 0

    def __enter__(self) -> CommitNotifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the background thread ----------------------------------------------------------------

    def _drop_leftovers(self) -> None:
        while True:
            try:
                commit = self._queue.get_nowait()
            except queue.Empty:
                return
            self._tally.drop(DROP_CLOSED, [commit], "queued while closing")
            self._tally.handled(1)

    def _past_give_up(self) -> bool:
        return self._give_up_at is not None and self._clock.monotonic() >= self._give_up_at

    def _run(self) -> None:
        while True:
            batch = self._take_batch()
            if batch is None:
                return
            if not batch:
                continue
            try:
                if self._past_give_up():
                    self._tally.drop(DROP_CLOSED, batch, "close() timed out")
                else:
                    self._send(batch)
            except Exception as e:  # a bug must not end the thread and silently fill the queue
                log.exception("sending commit notifications failed")
                self._tally.drop(DROP_ERROR, batch, f"{type(e).__name__}: {e}")
            self._tally.handled(len(batch))

    def _take_batch(self) -> list[Commit] | None:
        """Up to batch_size commits, lingering briefly for more; None once closed and empty."""
        try:
            batch = [self._queue.get(timeout=IDLE_POLL_S)]
        except queue.Empty:
            return None if self._closing.is_set() else []
        linger_end = time.monotonic() + (0.0 if self._closing.is_set() else self._linger_s)
        while len(batch) < self._batch_size:
            try:
                batch.append(self._queue.get(timeout=max(0.0, linger_end - time.monotonic())))
            except queue.Empty:
                break
        return batch

    def _sleep(self, wait_s: float) -> None:
        """Backoff wait, cut short at the close deadline."""
        end = self._clock.monotonic() + wait_s
        while (now := self._clock.monotonic()) < end and not self._past_give_up():
            limit = end if self._give_up_at is None else min(end, self._give_up_at)
            if self._clock.wait(self._wake, max(0.0, limit - now)):
                self._wake.clear()

    def _send(self, batch: list[Commit]) -> None:
        """Sends one batch until TMS answers or the time budget is spent."""
        state = RetryState(self._retry, self._client.options.deadline_s, Safety.SAFE,
                           self._clock.monotonic)
        while batch:
            try:
                results = self._client.notify_commits(
                    batch, deadline_s=self._attempt_timeout_s(state), retry=NO_RETRY)
            except InvalidArgumentError as e:
                # The API refuses a whole batch for one bad entry: drop the entries its field
                # violations name and send the others again (all, if none can be told apart).
                kept, refused = split_refused(batch, e.violations)
                if not refused:
                    kept, refused = [], batch
                self._tally.drop(DROP_REJECTED, refused, e.message)
                batch = kept
                continue
            except TmsError as e:
                wait = state.next_wait_s(e.code)
                if wait is None or self._past_give_up():
                    self._tally.drop(self._give_up_reason(e), batch, str(e))
                    return
                self._sleep(wait)
                continue
            self._record(results)
            return

    def _attempt_timeout_s(self, state: RetryState) -> float:
        timeout = state.attempt_timeout_s()
        if self._give_up_at is not None:  # closing: no attempt outlives close()'s timeout
            left_s = self._give_up_at - self._clock.monotonic()
            timeout = min(timeout, max(MIN_ATTEMPT_TIMEOUT_S, left_s))
        return timeout

    def _give_up_reason(self, error: TmsError) -> str:
        if self._past_give_up():
            return DROP_CLOSED
        return DROP_UNAVAILABLE if error.code in TRANSIENT_CODES else DROP_REJECTED

    def _record(self, results: list[CommitResult]) -> None:
        refused = [r for r in results if r.error is not None]
        self._tally.add("sent", sum(1 for r in results if r.ok and not r.duplicate))
        self._tally.add("duplicates", sum(1 for r in results if r.ok and r.duplicate))
        if refused:
            last = refused[-1]
            self._tally.drop(DROP_REJECTED, [r.commit for r in refused],
                             f"{last.commit.table_id}: {last.error}")
