"""The notifier's bookkeeping: what became of each commit, and waiting for progress.

Kept apart from the sending logic so the counters have one lock and one meaning: every commit
the notifier queued ends in exactly one outcome, and ``flush`` can wait for that.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, fields

from tms_client.droplog import DropLog

DROPPED_PREFIX = "dropped_"


@dataclass
class NotifierStats:
    """Counts since the notifier started. Every queued commit ends in exactly one of sent,
    duplicates, rejected, dropped_unavailable, dropped_closed or dropped_error."""

    enqueued: int = 0
    sent: int = 0
    duplicates: int = 0
    rejected: int = 0  # refused by the API (unknown table, out of the token's scope, invalid)
    dropped_queue_full: int = 0
    dropped_invalid: int = 0  # refused before enqueueing (malformed)
    dropped_unavailable: int = 0  # TMS unreachable past the retry budget
    dropped_closed: int = 0  # notify() after close(), or left over when close() timed out
    dropped_error: int = 0  # an unexpected failure in the notifier itself (logged)

    @property
    def dropped(self) -> int:
        return sum(getattr(self, f.name) for f in fields(self)
                   if f.name.startswith(DROPPED_PREFIX))


class Tally:
    """Thread-safe counters; drops and refusals also go to a rate-limited log."""

    def __init__(self, logger: logging.Logger) -> None:
        self._cond = threading.Condition()
        self._stats = NotifierStats()
        self._handled = 0
        self._drops = DropLog(logger)

    def add(self, counter: str, n: int = 1, detail: str = "") -> None:
        with self._cond:
            setattr(self._stats, counter, getattr(self._stats, counter) + n)
        if counter.startswith(DROPPED_PREFIX) or counter == "rejected":
            self._drops.record(counter.removeprefix(DROPPED_PREFIX), n, detail)

    def handled(self, n: int) -> None:
        """``n`` queued commits reached their outcome."""
        with self._cond:
            self._handled += n
            self._cond.notify_all()

    def wait_handled(self, timeout_s: float) -> bool:
        """Waits until every commit queued so far has reached its outcome."""
        with self._cond:
            target = self._stats.enqueued
            return self._cond.wait_for(lambda: self._handled >= target, timeout_s)

    def snapshot(self) -> NotifierStats:
        with self._cond:
            return NotifierStats(**{f.name: getattr(self._stats, f.name)
                                    for f in fields(NotifierStats)})

    def flush_log(self) -> None:
        self._drops.flush()
