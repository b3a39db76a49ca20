"""The time source of the CommitNotifier's retry budget, replaceable in tests.

The notifier's budget is time (it retries until ``total_timeout_s`` is spent), so a test of
that budget needs time it controls: a fake :class:`Clock` whose ``wait`` moves its own time
forward lets a minute of retrying run in milliseconds.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back."""
        ...

    def wait(self, event: threading.Event, timeout_s: float) -> bool:
        """Wait until ``event`` is set or ``timeout_s`` passed; True if it was set."""
        ...


class SystemClock:
    """The real clock: ``time.monotonic`` and ``Event.wait``."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wait(self, event: threading.Event, timeout_s: float) -> bool:
        return event.wait(timeout_s)


SYSTEM_CLOCK = SystemClock()
