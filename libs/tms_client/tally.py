"""The notifier's bookkeeping: what became of each commit, and waiting for progress.

Kept apart from the sending logic so the counters have one lock and one meaning: every commit
the notifier queued ends in exactly one outcome, and ``flush`` can wait for that. A commit that
does not reach TMS, for any reason, goes through :meth:`Tally.drop`: counted, logged at a
limited rate and handed to the writer's ``on_drop`` callback, so none is lost quietly.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

from tms_client.commits import Commit
from tms_client.droplog import DropLog

DROPPED_PREFIX = "dropped_"
# why a commit did not reach TMS: the ``reason`` given to ``on_drop``
DROP_QUEUE_FULL = "queue_full"  # the queue was full when notify() was called
DROP_INVALID = "invalid"  # malformed, refused before queueing
DROP_UNAVAILABLE = "unavailable"  # TMS unreachable for the whole retry budget (time)
DROP_CLOSED = "closed"  # notify() after close(), or still queued when close() timed out
DROP_ERROR = "error"  # an unexpected failure in the notifier itself (logged)
DROP_REJECTED = "rejected"  # refused by TMS (unknown table, out of the token's scope, invalid)
DROP_REASONS = (DROP_QUEUE_FULL, DROP_INVALID, DROP_UNAVAILABLE, DROP_CLOSED, DROP_ERROR,
                DROP_REJECTED)

OnDrop = Callable[[list[Commit], str], None]  # (the dropped commits, one of DROP_REASONS)


@dataclass
class NotifierStats:
    """Counts since the notifier started. Every queued commit ends in exactly one of sent,
    duplicates, rejected, dropped_unavailable, dropped_closed or dropped_error.

    These counters are the notifier's metric: export them to your metrics system (see the
    README); ``dropped + rejected`` is every commit TMS never stored."""

    enqueued: int = 0
    sent: int = 0
    duplicates: int = 0
    rejected: int = 0  # refused by the API (unknown table, out of the token's scope, invalid)
    dropped_queue_full: int = 0
    dropped_invalid: int = 0  # refused before enqueueing (malformed)
    dropped_unavailable: int = 0  # TMS unreachable for the whole retry budget
    dropped_closed: int = 0  # notify() after close(), or left over when close() timed out
    dropped_error: int = 0  # an unexpected failure in the notifier itself (logged)
    on_drop_errors: int = 0  # calls of the writer's on_drop callback that raised

    @property
    def dropped(self) -> int:
        return sum(getattr(self, f.name) for f in fields(self)
                   if f.name.startswith(DROPPED_PREFIX))


def counter_of(reason: str) -> str:
    """The NotifierStats field that counts drops for ``reason``."""
    return reason if reason == DROP_REJECTED else f"{DROPPED_PREFIX}{reason}"


class Tally:
    """Thread-safe counters; drops and refusals also go to a rate-limited log and to the
    writer's ``on_drop`` callback."""

    def __init__(self, logger: logging.Logger, on_drop: OnDrop | None = None) -> None:
        self._cond = threading.Condition()
        self._stats = NotifierStats()
        self._handled = 0
        self._log = logger
        self._drops = DropLog(logger)
        self._on_drop = on_drop

    def add(self, counter: str, n: int = 1) -> None:
        with self._cond:
            setattr(self._stats, counter, getattr(self._stats, counter) + n)

    def drop(self, reason: str, commits: Sequence[Commit], detail: str = "") -> None:
        """``commits`` did not reach TMS for ``reason``: count, log, tell the writer.

        Called from the notifier's thread or the writer's (notify, close); the callback never
        raises into either: a failure is counted (``on_drop_errors``) and the first logged."""
        if not commits:
            return
        self.add(counter_of(reason), len(commits))
        self._drops.record(reason, len(commits), detail)
        if self._on_drop is None:
            return
        try:
            self._on_drop(list(commits), reason)
        except Exception:
            with self._cond:
                self._stats.on_drop_errors += 1
                first = self._stats.on_drop_errors == 1
            if first:
                self._log.warning("the on_drop callback raised (counted in on_drop_errors; "
                                  "only the first is logged)", exc_info=True)

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
