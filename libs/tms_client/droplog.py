"""Counted, rate-limited warnings for commits the notifier had to give up on.

A writer whose TMS is down may drop thousands of notifications a second; one log line per
drop would flood its logs for no gain. Drops are counted per reason and summed into at most
one line per interval, naming the last problem seen, so the first drop is always visible and
the totals are never lost.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable

DROP_LOG_INTERVAL_S = 30.0


class DropLog:
    def __init__(self, logger: logging.Logger, interval_s: float = DROP_LOG_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._log = logger
        self._interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: Counter[str] = Counter()
        self._detail: dict[str, str] = {}
        self._last_emit: float | None = None

    def record(self, reason: str, count: int, detail: str = "") -> None:
        with self._lock:
            self._pending[reason] += count
            if detail:
                self._detail[reason] = detail
            now = self._clock()
            if self._last_emit is not None and now - self._last_emit < self._interval_s:
                return
            self._last_emit = now
            line = self._take()
        self._log.warning("TMS commit notifications dropped (the scheduler's pull check "
                          "catches up): %s", line)

    def flush(self) -> None:
        """Log whatever was counted since the last line (at close)."""
        with self._lock:
            if not self._pending:
                return
            line = self._take()
        self._log.warning("TMS commit notifications dropped: %s", line)

    def _take(self) -> str:
        parts = []
        for reason, n in sorted(self._pending.items()):
            detail = self._detail.get(reason)
            parts.append(f"{n} {reason}" + (f" (last: {detail})" if detail else ""))
        self._pending.clear()
        self._detail.clear()
        return "; ".join(parts)
