"""Operations and their attempts: what to run, who runs it under which lease, how it ended.

Field names match the Postgres columns so rows map onto them without translation code.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class OperationState(enum.StrEnum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    # re-checked right before it would run, its decision no longer held: nothing ran
    SKIPPED = "SKIPPED"

    @property
    def terminal(self) -> bool:
        return self not in (OperationState.QUEUED, OperationState.RUNNING)


class AttemptState(enum.StrEnum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    LOST = "LOST"  # the executor vanished; the reaper took the lease back
    HANDED_BACK = "HANDED_BACK"  # the executor shut down and returned the operation
    SKIPPED = "SKIPPED"  # re-checked before running: no longer needed, nothing ran


@dataclass(frozen=True)
class Attempt:
    """One try of an operation, kept after the operation moves on."""

    operation_id: int
    attempt: int
    executor_id: str
    state: AttemptState
    started_at: datetime
    finished_at: datetime | None = None
    engine_handle: str | None = None
    exit_code: int | None = None
    error: str | None = None
    log_tail: str | None = None
    result: dict[str, Any] | None = None
    retry_at: datetime | None = None
    progress: dict[str, Any] | None = None


@dataclass(frozen=True)
class QueueInfo:
    """A queue's concurrency limit (None: unlimited) and what it holds now."""

    name: str
    max_running: int | None
    queued: int = 0
    running: int = 0


@dataclass(frozen=True)
class OperationWork:
    """What an operation is to do and why it was queued."""

    trigger: str  # policy | manual | retry
    reason: str
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)  # the decision's inspection figures
    retry_of: int | None = None  # the operation this one retries (trigger "retry")
    benefit: float | None = None  # the decision's benefit per cost (claim order after priority)
    waits_for: tuple[str, ...] = ()  # actions of its table it waits for while they are active


@dataclass(frozen=True)
class OperationLease:
    """Who runs it: the attempt in progress (or last made) and the lease that fences it.

    ``attempt`` rises by one with every claim and is the fence of every write; attempts that
    were handed back on an executor's shutdown are not failures and are counted apart, so
    ``attempts_used`` (what counts against ``max_attempts``) is ``attempt - handed_back``.
    """

    attempt: int = 0
    max_attempts: int = 1
    handed_back: int = 0
    owner: str | None = None
    expires_at: datetime | None = None
    started_at: datetime | None = None
    run_after: datetime | None = None  # a QUEUED retry is not claimed before this
    engine_handle: str | None = None
    cancel_requested: bool = False

    @property
    def attempts_used(self) -> int:
        return self.attempt - self.handed_back


@dataclass(frozen=True)
class OperationResult:
    """How its last attempt ended (empty while none has)."""

    finished_at: datetime | None = None
    exit_code: int | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    log_tail: str | None = None


@dataclass(frozen=True)
class Operation:
    """One maintenance action on one table: identity and state, then what to run
    (``work``), who runs it (``lease``) and how it ended (``outcome``)."""

    id: int
    table_pk: int
    table_id: str
    action: str
    state: OperationState
    queue: str
    priority: int
    created_at: datetime
    work: OperationWork
    lease: OperationLease = field(default_factory=OperationLease)
    outcome: OperationResult = field(default_factory=OperationResult)
    traceparent: str | None = None  # W3C trace context of the decision that queued it
    attempts: tuple[Attempt, ...] = ()  # filled by readers that ask for them
    hold: str | None = None  # why a QUEUED operation waits, when readers ask for it

    @property
    def name(self) -> str:
        return f"tables/{self.table_id}/operations/{self.id}"


class LeaseStatus(enum.Enum):
    """What a heartbeat learns: the lease is still ours, ours but cancel was asked, or gone."""

    HELD = "held"
    CANCEL_REQUESTED = "cancel_requested"
    LOST = "lost"


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended, as the executor records it."""

    state: OperationState
    result: dict[str, Any] | None = None
    error: str | None = None
    log_tail: str | None = None
    exit_code: int | None = None
    retryable: bool = True  # False: another attempt cannot help (table gone, bad config)
