"""Domain records shared by the API, the scheduler and the executor.

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

    @property
    def terminal(self) -> bool:
        return self in (OperationState.SUCCEEDED, OperationState.FAILED, OperationState.CANCELLED)


class TableState(enum.StrEnum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"


@dataclass(frozen=True)
class TableSpec:
    """What a client registers: everything about a table except bookkeeping."""

    table_id: str
    format: str
    catalog: str = ""
    namespace: str = ""
    table_name: str = ""
    base_path: str = ""
    catalog_properties: dict[str, str] = field(default_factory=dict)
    owner: str = ""
    queue: str = "default"
    priority: int = 0
    policy: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TableRecord:
    id: int
    table_id: str
    format: str
    catalog: str
    namespace: str
    table_name: str
    base_path: str
    catalog_properties: dict[str, str]
    owner: str
    queue: str
    priority: int
    policy: dict[str, str]
    state: TableState
    commit_count: int
    last_commit_id: str | None
    last_commit_time: datetime | None
    next_check_at: datetime
    created_at: datetime
    updated_at: datetime

    @property
    def name(self) -> str:
        return f"tables/{self.table_id}"


@dataclass(frozen=True)
class CommitEvent:
    table_id: str
    commit_id: str
    commit_time: datetime | None = None
    files_added: int | None = None
    bytes_added: int | None = None
    operation_type: str = ""
    traceparent: str = ""  # W3C trace context of the notification, carried to the decision


class AttemptState(enum.StrEnum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    LOST = "LOST"  # the executor vanished; the reaper took the lease back
    HANDED_BACK = "HANDED_BACK"  # the executor shut down and returned the operation


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
class OperationRecord:
    id: int
    table_pk: int
    action: str
    state: OperationState
    attempt: int
    max_attempts: int
    priority: int
    trigger: str
    reason: str
    params: dict[str, Any]
    metrics: dict[str, Any]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    lease_owner: str | None
    lease_expires_at: datetime | None
    engine_handle: str | None
    exit_code: int | None
    result: dict[str, Any] | None
    error: str | None
    log_tail: str | None
    cancel_requested: bool = False
    retry_of: int | None = None
    table_id: str = ""
    queue: str = "default"
    run_after: datetime | None = None  # a QUEUED retry is not claimed before this
    attempts: tuple[Attempt, ...] = ()  # filled by readers that ask for them
    traceparent: str | None = None  # W3C trace context of the decision that queued it

    @property
    def name(self) -> str:
        return f"tables/{self.table_id}/operations/{self.id}"


@dataclass(frozen=True)
class Decision:
    """A format plugin's verdict on one action of one table, with its reason in words."""

    action: str
    should_run: bool
    reason: str
    metrics: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)


class Lease(enum.Enum):
    """What a heartbeat learns: the lease is still ours, ours but cancel was asked, or gone."""

    HELD = "held"
    CANCEL_REQUESTED = "cancel_requested"
    LOST = "lost"


@dataclass(frozen=True)
class TableUpdate:
    """A field-mask update: None means "leave as is"."""

    owner: str | None = None
    queue: str | None = None
    priority: int | None = None
    policy: dict[str, str] | None = None
    catalog_properties: dict[str, str] | None = None


@dataclass(frozen=True)
class Explanation:
    action: str
    decided_at: datetime | None
    should_run: bool | None
    reason: str | None
    metrics: dict[str, Any] | None
    operation_id: int | None
    scheduler_id: str | None
    active_id: int | None


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended, as the executor records it."""

    state: OperationState
    result: dict[str, Any] | None = None
    error: str | None = None
    log_tail: str | None = None
    exit_code: int | None = None
    retryable: bool = True  # False: another attempt cannot help (table gone, bad config)


@dataclass(frozen=True)
class JobSpec:
    """What an execution engine runs: a PySpark application and its JSON spec, or a JVM main
    class with arguments (Hudi utilities). Formats build it, engines run it: it lives here so
    neither plugin kind depends on the other."""

    kind: str  # "pyspark" or "jvm"
    app: str  # path of the .py application, or the main class
    spec: dict[str, Any] = field(default_factory=dict)
    args: tuple[str, ...] = ()
