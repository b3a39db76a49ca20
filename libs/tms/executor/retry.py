"""When a failed attempt runs again: exponential backoff with jitter.

Attempt n waits ``base * 2**(n-1)`` seconds, capped, then jittered down to between half and all
of that ("equal jitter"): the wait still grows with every failure, and executors that failed
together (a catalog outage) do not all come back in the same second.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

RETRY_BASE_DELAY_S = 30.0
RETRY_MAX_DELAY_S = 1800.0
JITTER_FRACTION = 0.5  # the wait is drawn from [1 - this, 1] x the exponential delay


@dataclass(frozen=True)
class RetryPolicy:
    base_delay_s: float = RETRY_BASE_DELAY_S
    max_delay_s: float = RETRY_MAX_DELAY_S
    jitter_fraction: float = JITTER_FRACTION

    def __post_init__(self) -> None:
        if self.base_delay_s < 0 or self.max_delay_s < self.base_delay_s:
            raise ValueError("retry delays must satisfy 0 <= base <= max")
        if not 0 <= self.jitter_fraction <= 1:
            raise ValueError("jitter_fraction must be within [0, 1]")

    def ceiling_s(self, attempt: int) -> float:
        """The un-jittered wait after failed attempt number ``attempt`` (1-based)."""
        exponent = min(max(attempt, 1) - 1, 62)  # 2**62 already dwarfs any cap
        return float(min(self.max_delay_s, self.base_delay_s * 2 ** exponent))

    def delay_s(self, attempt: int, rand: Callable[[], float] = random.random) -> float:
        ceiling = self.ceiling_s(attempt)
        return ceiling * (1 - self.jitter_fraction * rand())
