"""When a failed call may be sent again, and how long to wait before it.

A call is retried only when sending it twice cannot do harm: reads always, NotifyCommit(s)
because the API is idempotent on (table, commit id), RegisterTable / TriggerOperation only
when the caller passed a ``request_id`` (the API replays the first result for it). Only
transport-level failures are retried — UNAVAILABLE (server down, restarting, database lost)
and DEADLINE_EXCEEDED — never a refusal such as INVALID_ARGUMENT or NOT_FOUND, which would
fail the same way again.

Backoff is exponential with full jitter, so many writers that lost TMS at the same moment do
not come back in lockstep. Total time is always bounded; attempts too unless ``max_attempts``
is None (the CommitNotifier's budget is time only). A wait that would overrun the total time is
cut short so that one last attempt is made before the budget is spent, rather than giving up
early.
"""

from __future__ import annotations

import enum
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import grpc

DEFAULT_MAX_ATTEMPTS = 6
DEFAULT_INITIAL_BACKOFF_S = 0.1
DEFAULT_MAX_BACKOFF_S = 5.0
DEFAULT_BACKOFF_MULTIPLIER = 2.0
DEFAULT_TOTAL_TIMEOUT_S = 30.0
MIN_ATTEMPT_TIMEOUT_S = 0.05  # no point starting an attempt with less time than this left
MAX_BACKOFF_EXPONENT = 64  # the multiplier's power stops growing here (no float overflow)

TRANSIENT_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})


class Safety(enum.Enum):
    """Whether a method may be sent twice."""

    SAFE = "safe"  # reads and idempotent writes
    UNSAFE = "unsafe"  # a write without an idempotency key: never retried


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds on retrying one call: attempts (None: no limit but the total time), backoff and
    the total time including waits."""

    max_attempts: int | None = DEFAULT_MAX_ATTEMPTS
    initial_backoff_s: float = DEFAULT_INITIAL_BACKOFF_S
    max_backoff_s: float = DEFAULT_MAX_BACKOFF_S
    backoff_multiplier: float = DEFAULT_BACKOFF_MULTIPLIER
    total_timeout_s: float = DEFAULT_TOTAL_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1 (or None: bounded by time only)")
        if self.initial_backoff_s < 0 or self.max_backoff_s < self.initial_backoff_s:
            raise ValueError("need 0 <= initial_backoff_s <= max_backoff_s")
        if self.backoff_multiplier < 1 or self.total_timeout_s <= 0:
            raise ValueError("need backoff_multiplier >= 1 and total_timeout_s > 0")

    def backoff_s(self, attempt: int, rand: Callable[[], float] = random.random) -> float:
        """Wait after failed attempt number ``attempt`` (1-based): full jitter over the cap."""
        power = min(max(attempt - 1, 0), MAX_BACKOFF_EXPONENT)
        cap = min(self.max_backoff_s, self.initial_backoff_s * self.backoff_multiplier ** power)
        return cap * rand()


NO_RETRY = RetryPolicy(max_attempts=1)


class RetryState:
    """The retry bookkeeping of one call, shared by the sync and the asyncio clients.

    ``attempt_timeout_s()`` gives the deadline for the next attempt (the per-call deadline,
    cut to what is left of the total budget); ``next_wait_s(code)`` says how long to sleep
    before trying again, or None when the call must fail now: a refusal, an unsafe call, the
    attempts spent (when limited) or less than MIN_ATTEMPT_TIMEOUT_S of the budget left.
    """

    def __init__(self, policy: RetryPolicy, deadline_s: float, safety: Safety,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._policy = policy
        self._deadline_s = deadline_s
        self._safety = safety
        self._clock = clock
        self._end = clock() + policy.total_timeout_s
        self.attempts = 0

    def attempt_timeout_s(self) -> float:
        self.attempts += 1
        return max(MIN_ATTEMPT_TIMEOUT_S, min(self._deadline_s, self._end - self._clock()))

    def next_wait_s(self, code: grpc.StatusCode | None) -> float | None:
        if self._safety is not Safety.SAFE or code not in TRANSIENT_CODES:
            return None
        limit = self._policy.max_attempts
        if limit is not None and self.attempts >= limit:
            return None
        left_s = self._end - self._clock() - MIN_ATTEMPT_TIMEOUT_S
        if left_s <= 0:
            return None
        return min(self._policy.backoff_s(self.attempts), left_s)
