"""Tables: what an owner registers and sets, what TMS observes about a table, and the
commits writers report.

Field names match the Postgres columns so rows map onto them without translation code.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple


class TableState(enum.StrEnum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    MISSING = "MISSING"  # discovery no longer finds it in its catalog (migration 0009)


@dataclass(frozen=True)
class TableSpec:
    """What a client registers: everything about a table except bookkeeping. The table lives
    in ``catalog`` (a :class:`~tms.domain.Catalog` id) as ``namespace.table_name``, or, for
    path-based formats (Hudi), at ``base_path``."""

    table_id: str
    format: str
    catalog: str = ""
    namespace: str = ""
    table_name: str = ""
    base_path: str = ""
    owner: str = ""
    queue: str = "default"
    priority: int = 0
    policy: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Table:
    """A registered table: what its owner set, plus TMS's own key for it.

    Identity: ``table_id`` is the name the owner chose (the API's ``tables/{table_id}``);
    ``pk`` is the row's surrogate key, used only inside TMS (operations and decisions point
    at it, shards are ``pk % NUM_SHARDS``) and never shown to clients.
    """

    pk: int
    table_id: str
    format: str
    catalog: str
    namespace: str
    table_name: str
    base_path: str
    owner: str
    queue: str
    priority: int
    policy: dict[str, str]
    state: TableState
    created_at: datetime
    updated_at: datetime
    # the real location as the catalog reported it and the checks accepted it ('' until
    # first checked); one location, one table
    location: str = ""
    discovered: bool = False  # registered by catalog discovery
    state_reason: str = ""  # why it is PAUSED (by whom, or what TMS found); '' when unknown

    @property
    def name(self) -> str:
        return f"tables/{self.table_id}"


@dataclass(frozen=True)
class TableStats:
    """What TMS observed about a table (never set by its owner): commits notified and when
    the scheduler looks at it next."""

    commit_count: int = 0
    last_commit_id: str | None = None
    last_commit_time: datetime | None = None
    next_check_at: datetime | None = None
    health_score: int | None = None  # from the last inspection (docs/health.md)
    last_decision: str | None = None  # "<action>: <reason>" of the last changed decision
    last_operation_id: int | None = None  # the newest operation and its state
    last_operation_state: str | None = None


@dataclass(frozen=True)
class TableView:
    """A table with its statistics, as the API's reads show it."""

    table: Table
    stats: TableStats


@dataclass(frozen=True)
class DueTable:
    """A table the scheduler is about to decide for, and whether new commits made it due
    (with the trace context of the commit that did)."""

    table: Table
    had_commits: bool
    traceparent: str | None = None


@dataclass(frozen=True)
class TableUpdate:
    """A field-mask update: None means "leave as is"."""

    owner: str | None = None
    queue: str | None = None
    priority: int | None = None
    policy: dict[str, str] | None = None


class CommitEvent(NamedTuple):
    """One commit notification (a tuple: built once per NotifyCommit, at the rate of gRPC)."""

    table_id: str
    commit_id: str
    commit_time: datetime | None = None
    files_added: int | None = None
    bytes_added: int | None = None
    operation_type: str = ""
    traceparent: str = ""  # W3C trace context of the notification, carried to the decision
    # the table formats whose plugin refuses commit_id (TableFormatPlugin.check_commit_id):
    # an event of a table of one of them is not recorded
    refused: tuple[str, ...] = ()
