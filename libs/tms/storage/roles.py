"""The storage interface, split by who uses it. PostgreSQL is the one implementation
(:class:`tms.storage.postgres.PostgresStore` has every role); each service names only the
roles it uses, so what a service may change is visible in its constructor, and unit tests fake
just those.

=================  ==========================================================
role               used by
=================  ==========================================================
IntakeStore        the API's NotifyCommit(s): the one intake path for commits
CatalogStore       the API's catalog RPCs (admin): operator-owned catalog connections
TableStore         the API's table RPCs: registration, reads, request ids
OperationStore     the API's operation, explain and queue RPCs
ReportStore        the API's ReportJobResult: a running attempt's job reports its result
DecisionStore      the scheduler: due tables, operations queued, decisions
ExecutionStore     the executor: claim, lease, fenced ends of an attempt
MaintenanceStore   the scheduler's leader: reaper, retention, gauges
DiscoveryStore     the scheduler's leader: catalog discovery
HoldStore          the scheduler (judging and placing holds), the API (showing, releasing)
ReadStatsStore     the API's report intake and ExplainTable: how tables are read
=================  ==========================================================

Method names put the entity first (``operation_claim``, ``attempt_set_engine_handle``), as
the named queries in ``sql/queries/<entity>.sql`` do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from tms.domain import (
    Catalog,
    CatalogDeleteResult,
    CatalogSpec,
    CatalogUpdate,
    CommitEvent,
    Decision,
    DueTable,
    Explanation,
    LeaseStatus,
    Operation,
    OperationState,
    Outcome,
    QueueInfo,
    Table,
    TableSpec,
    TableState,
    TableUpdate,
    TableView,
)
from tms.domain.fleet import (
    DaySummary,
    FleetCounts,
    HistoryPoint,
    OperationMarker,
    ProcessBeat,
    ProcessStatus,
    StoredHealth,
)
from tms.domain.holds import ActionHold, Streak
from tms.health.figures import Inspection
from tms.reads.profile import ReadProfile, TableIncrement


class TableGone(LookupError):
    """The table was deregistered while something was being written for it."""


class DuplicateTable(Exception):
    """Another registration holds the same physical table: the same catalog and identifier
    (``what`` = "identifier"), or a location equal to, inside or containing this one's
    ("location")."""

    def __init__(self, table_id: str, what: str) -> None:
        super().__init__(f"tables/{table_id} is the same table ({what})")
        self.table_id = table_id
        self.what = what


# ListTables' orders: the named query each runs (keyset pagination on (key, table_id))
TABLE_ORDERS = {"name": "table_list", "health": "table_list_by_health",
                "-health": "table_list_by_health_desc",
                "last_commit_time": "table_list_by_commit",
                "-last_commit_time": "table_list_by_commit_desc"}


@dataclass(frozen=True)
class TableListParams:
    after: str = ""  # table_id to continue after (keyset pagination)
    limit: int = 50
    format: str | None = None
    state: TableState | None = None
    owner: str | None = None
    queue: str | None = None
    catalog: str | None = None
    namespace: str | None = None
    search: str | None = None  # literal text the id, namespace or name contains
    max_health: int | None = None
    min_health: int | None = None
    order_by: str = "name"  # one of TABLE_ORDERS
    after_key: int | datetime | str | None = None  # the order's key of the row continued after


OPERATION_ORDERS = ("-create_time", "create_time", "-end_time", "priority")


@dataclass(frozen=True)
class OperationListParams:
    table_id: str | None = None
    state: OperationState | None = None
    action: str | None = None
    before_id: int = 2**63 - 1  # newest first: continue below this id
    limit: int = 50
    created_after: datetime | None = None
    created_before: datetime | None = None
    queue: str | None = None
    order_by: str = "-create_time"  # one of OPERATION_ORDERS
    # the other orders' keyset: the id and key (end time or priority) of the last row
    after_id: int = 0
    after_time: datetime | str = "infinity"
    after_priority: int = 2**31 - 1


@dataclass(frozen=True)
class EnqueueParams:
    """A new operation for (table, action); refused while one is active for the pair."""

    table: Table
    action: str
    trigger: str  # policy | manual | retry
    reason: str
    max_attempts: int
    priority: int
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    retry_of: int | None = None
    traceparent: str | None = None
    benefit: float | None = None  # the decision's benefit per cost; None: not estimated
    waits_for: tuple[str, ...] = ()  # actions of the table it waits for while active


@dataclass(frozen=True)
class RequestRecord:
    """An earlier request with the same request_id: what it was and what it made."""

    method: str
    fingerprint: str
    resource: str  # empty while the first request is still in progress


@dataclass(frozen=True)
class ReportedTable:
    """A TMS table an engine's report named, by its catalog's identifier."""

    pk: int
    table_id: str
    owner: str
    namespace: str
    table_name: str


class ReadStatsStore(Protocol):
    """Read statistics from engines' scan reports (tms.reads)."""

    def read_resolve_tables(self, catalog: str, keys: Sequence[tuple[str, str]]
                            ) -> list[ReportedTable]:
        """The tables of ``catalog`` among (namespace, table name) keys."""

    def read_add(self, increments: dict[int, TableIncrement], now: datetime) -> None: ...

    def read_profile(self, table_pk: int, now: datetime) -> ReadProfile | None: ...


class IntakeStore(Protocol):
    def commits_notify(self, events: Sequence[CommitEvent]) -> list[bool | str | None]:
        """Per event, in order — True: newly recorded; False: a replay; None: unknown table;
        a format name: not recorded, the table is of that format and the event names it
        among the formats that refuse its commit id (``CommitEvent.refused``)."""

    def table_owners(self, table_ids: Sequence[str]) -> dict[str, str]: ...


class CatalogStore(Protocol):
    def catalog_create(self, spec: CatalogSpec) -> Catalog | None:
        """Insert; None when catalog_id is taken."""

    def catalog_get(self, catalog_id: str) -> Catalog | None: ...

    def catalog_list(self, after: str, limit: int) -> list[Catalog]:
        """Ordered by catalog_id, after ``after`` (keyset pagination)."""

    def catalog_update(self, catalog_id: str, update: CatalogUpdate) -> Catalog | None: ...

    def catalog_delete(self, catalog_id: str) -> CatalogDeleteResult:
        """IN_USE (nothing removed) while tables are registered in the catalog."""


class TableStore(Protocol):
    def table_register(self, spec: TableSpec, location: str = "",
                       discovered: bool = False) -> TableView | None:
        """Insert with its checked location; None when table_id is taken, DuplicateTable
        when another registration holds the same physical table."""

    def catalog_get(self, catalog_id: str) -> Catalog | None: ...

    def table_find_overlapping(self, location: str, except_pk: int = 0) -> str | None:
        """The id of a table whose location equals, contains or lies in ``location``."""

    def table_get(self, table_id: str) -> TableView | None: ...

    def table_list(self, params: TableListParams) -> list[TableView]: ...

    def table_owners(self, table_ids: Sequence[str]) -> dict[str, str]: ...

    def table_update(self, table_id: str, update: TableUpdate) -> TableView | None: ...

    def table_set_state(self, table_id: str, state: TableState, reason: str = ""
                        ) -> TableView | None:
        """Pause or resume with the reason; None when unknown or MISSING (only discovery
        brings a missing table back)."""

    def table_pause_outside(self, catalog_id: str,
                             outside: Sequence[tuple[int, str, str]]) -> list[str]:
        """Pause the catalog's ACTIVE tables given as (pk, checked location, reason) whose
        location is still that one, cancelling their QUEUED operations; their table ids."""

    def table_list_by_catalog(self, catalog_id: str) -> list[CatalogTable]: ...

    def table_delete(self, table_id: str, force: bool) -> bool:
        """False when unknown, or (without force) while an operation runs."""

    def request_claim(self, request_id: str, method: str, fingerprint: str
                      ) -> RequestRecord | None:
        """None when ``request_id`` is new (now reserved), else the earlier request."""

    def request_set_resource(self, request_id: str, resource: str) -> None: ...

    def request_forget(self, request_id: str) -> None: ...


class OperationStore(Protocol):
    def operation_get(self, table_id: str, op_id: int) -> Operation | None:
        """With its attempts, and (when QUEUED) what holds it back."""

    def operation_list(self, params: OperationListParams) -> list[Operation]:
        """With their attempts, and what holds the QUEUED ones back."""

    def operation_enqueue(self, params: EnqueueParams) -> int | None:
        """New operation id, or None when one is already active for (table, action)."""

    def operation_active(self, table_pk: int, action: str) -> int | None: ...

    def operation_cancel_queued(self, op_id: int, reason: str) -> bool: ...

    def operation_request_cancel(self, op_id: int) -> bool: ...

    def decision_explain(self, table_pk: int, actions: Sequence[str]) -> list[Explanation]: ...

    def queue_set_limit(self, name: str, max_running: int | None) -> None:
        """At most ``max_running`` operations of the queue RUNNING at once (None: no limit)."""

    def queue_list(self) -> list[QueueInfo]: ...


class HealthStore(Protocol):
    def health_record_batch(self, inspections: Sequence[Inspection], min_spacing_s: float,
                            keepalive_s: float) -> None:
        """A batch's inspections: health parts and partitions replaced, the table's score
        updated when it changed, a history point added when the figures changed (and the
        last point is older than ``min_spacing_s``) or the last point is older than
        ``keepalive_s``."""


class LivenessStore(Protocol):
    def heartbeat_record(self, beat: ProcessBeat) -> None: ...

    def heartbeat_forget(self, process_id: str) -> None: ...


class FleetStore(Protocol):
    """The API's reads of health, history, liveness and per-day summaries."""

    def health_get(self, table_pk: int) -> StoredHealth | None: ...

    def history_list(self, table_pk: int, start: datetime, end: datetime, limit: int
                     ) -> list[HistoryPoint]: ...

    def history_markers(self, table_pk: int, start: datetime, end: datetime, limit: int
                        ) -> list[OperationMarker]: ...

    def heartbeat_list(self, within_s: float, limit: int) -> list[ProcessStatus]: ...

    def fleet_counts(self) -> FleetCounts: ...

    def operation_summary_by_day(self, start: datetime, table_pk: int | None
                                 ) -> list[DaySummary]: ...


class DecisionStore(Protocol):
    def decision_begin_batch(self, shards: Sequence[int], num_shards: int, limit: int
                             ) -> list[DueTable]:
        """Up to ``limit`` due tables of the given shards, their "new commits" marks
        consumed."""

    def commits_mark_dirty(self, table_pk: int, traceparent: str | None = None) -> None:
        """Put the mark back (a decision failed before it could see the commits)."""

    def catalog_get(self, catalog_id: str) -> Catalog | None:
        """The catalog a due table lives in (its secrets as references)."""

    def table_set_location(self, table_pk: int, location: str) -> str | None:
        """Store the location read anew from the table's catalog; the id of another table
        whose location overlaps it (nothing stored then), else None."""

    def table_pause_refused(self, table_pk: int) -> bool:
        """Pause an ACTIVE table whose new location was refused; False when it was not
        ACTIVE (nothing changed)."""

    def table_set_locations(self, locations: Sequence[tuple[int, str]]) -> dict[int, str]:
        """Store a batch's locations read anew from their catalogs, (table pk, location) in
        the batch's order, in one statement; for each refused one, the id of the table whose
        location it overlaps: another table's stored location, or one earlier in the batch
        (nothing stored for the refused ones)."""

    def operation_last_succeeded(self, table_pks: Sequence[int]
                                 ) -> dict[int, dict[str, Operation]]:
        """For each table, the last operation of each action that ran its job to the end:
        SUCCEEDED, or SKIPPED with a result naming the job's "no plan" (``no_plan``)."""

    def operation_active_actions(self, table_pks: Sequence[int]) -> dict[int, set[str]]:
        """For each table, the actions with an operation QUEUED or RUNNING now (a table with
        none is absent)."""

    def operation_enqueue(self, params: EnqueueParams) -> int | None: ...

    def decision_finish_batch(self, scheduler_id: str,
                              decisions: Sequence[tuple[int, Decision, int | None]],
                              next_checks: Sequence[tuple[int, float]]) -> None:
        """Record a batch's decisions (table pk, decision, queued operation) and set each
        table's next check (table pk, seconds from now) in one statement."""


class ExecutionStore(Protocol):
    def operation_claim(self, owner: str, lease_s: float,
                        queues: Sequence[str] | None = None) -> Operation | None:
        """The next due operation (from ``queues`` only, when given) whose queue is under its
        limit, now RUNNING under this owner's lease as a new attempt; None if there is none."""

    def table_get_settings(self, table_pk: int) -> Table | None: ...

    def catalog_get(self, catalog_id: str) -> Catalog | None:
        """The catalog the operation's table lives in (its secrets as references)."""

    def operation_renew_lease(self, op: Operation, owner: str, lease_s: float
                              ) -> LeaseStatus: ...

    def attempt_set_engine_handle(self, op: Operation, owner: str, handle: str) -> bool: ...

    def attempt_set_progress(self, op: Operation, owner: str, progress: dict[str, Any]) -> bool:
        """The latest progress the engine reported for this RUNNING attempt (replacing the
        last); False when the attempt is no longer ours."""

    def operation_finish(self, op: Operation, owner: str, outcome: Outcome) -> bool:
        """Fenced terminal write; False when this attempt no longer owns the operation."""

    def operation_skip(self, op: Operation, owner: str, reason: str,
                       result: dict[str, Any] | None = None, log_tail: str | None = None,
                       exit_code: int | None = None) -> bool:
        """Fenced RUNNING -> SKIPPED: before anything ran (its decision no longer holds), or
        after a job that found nothing to plan (with its log tail and exit code), with the
        reason; False when this attempt no longer owns the operation."""

    def operation_retry_later(self, op: Operation, owner: str, outcome: Outcome,
                              delay_s: float) -> bool:
        """Fenced: record the failed attempt and queue the operation again after ``delay_s``.
        False when this attempt no longer owns it, attempts are spent or a cancel is pending."""

    def operation_release(self, op: Operation, owner: str, reason: str) -> bool:
        """Fenced hand-back to the queue (graceful shutdown); not counted as a failure."""

    def attempt_set_report_token(self, op: Operation, owner: str, digest: bytes) -> bool:
        """Fenced: the SHA-256 of the token this RUNNING attempt's job reports with."""

    def attempt_reported_result(self, op: Operation) -> dict[str, Any] | None:
        """What this attempt's job reported through ReportJobResult; None: nothing yet."""


class MaintenanceStore(Protocol):
    def operation_reap_expired(self) -> tuple[list[int], list[int]]:
        """(requeued ids, ended ids) of RUNNING operations whose lease expired."""

    def retention_prune(self, what: str, retention_s: float, batch: int) -> int:
        """One batch of retention pruning (commit_events, operations, requests); rows
        removed."""

    def queue_stats(self) -> list[dict[str, Any]]:
        """Per (queue, action): QUEUED count and the oldest one's age in seconds."""

    def table_count_overdue(self, grace_s: float) -> int:
        """Active tables whose check or commit mark has waited longer than ``grace_s``."""

    def history_downsample(self, after_pk: int, tables: int, raw_s: float, hourly_s: float,
                           keep_s: float) -> tuple[int | None, int]:
        """Downsample the history of the ``tables`` tables after ``after_pk``: (the last pk
        looked at, None past the last table; rows changed)."""

    def health_histogram(self) -> dict[int, int]:
        """Tables scoring at most ``le`` for le = 10, 20, ..., 100 (cumulative)."""

    def health_bands(self) -> dict[str, int]: ...

    def health_scores(self, limit: int) -> list[tuple[str, int]]:
        """(table_id, score) of inspected tables, lowest first, at most ``limit``."""


@dataclass(frozen=True)
class CatalogTable:
    """A table registered in a catalog, as discovery compares it with the catalog's listing
    (``location``: its checked location, '' until first resolved)."""

    table: Table
    location: str


@dataclass(frozen=True)
class DiscoveredRegistration:
    """A table discovery registers: identity and location from the catalog, the rest from
    the catalog's discovery settings; no policy of its own."""

    table_id: str
    format: str
    catalog: str
    namespace: str
    table_name: str
    base_path: str
    location: str
    owner: str
    queue: str
    priority: int


class DiscoveryStore(Protocol):
    def catalog_claim_discovery(self, now: datetime, limit: int) -> list[Catalog]:
        """Up to ``limit`` catalogs due for a listing at ``now``, each made due again one
        interval later in the same statement (the fence between two leaders)."""

    def catalog_finish_discovery(self, catalog_id: str, at: datetime, error: str | None,
                                 registered: int, missing: int) -> None: ...

    def table_list_by_catalog(self, catalog_id: str) -> list[CatalogTable]: ...

    def table_find_overlapping(self, location: str, except_pk: int = 0) -> str | None:
        """The id of a table whose location equals, contains or lies in ``location``."""

    def table_insert_discovered(self, reg: DiscoveredRegistration) -> int | None:
        """The new table's pk; None on any conflict (id taken, identifier or location
        already registered)."""

    def table_mark_missing(self, catalog_id: str, table_pks: Sequence[int], reason: str
                           ) -> tuple[int, int]:
        """ACTIVE -> MISSING with their QUEUED operations cancelled with ``reason``, in one
        statement: (tables marked, operations cancelled)."""

    def table_mark_found(self, table_pk: int, location: str) -> bool:
        """MISSING -> ACTIVE at its (checked) location; False when it was not MISSING."""


@dataclass(frozen=True)
class ReportTarget:
    """An attempt as ReportJobResult sees it before writing: its token's digest (None: the
    executor gave it none), whether it still runs, what it reported already."""

    token_sha256: bytes | None
    running: bool
    reported: dict[str, Any] | None


class ReportStore(Protocol):
    def attempt_report_lookup(self, table_id: str, op_id: int, attempt: int
                              ) -> ReportTarget | None:
        """The attempt of that table's operation; None when there is none."""

    def attempt_report_result(self, op_id: int, attempt: int, digest: bytes,
                              result: dict[str, Any]) -> bool:
        """Fenced write of the job's result: that attempt, still RUNNING, that token digest,
        nothing reported yet. False when any of it no longer holds."""


class HoldStore(Protocol):
    def hold_streaks(self, table_pks: Sequence[int]) -> dict[int, dict[str, Streak]]:
        """For each table, each action with failed operations in a row or a hold row."""

    def hold_place(self, streak: Streak, holds: int, reason: str, now: datetime,
                   held_until: datetime, policy_digest: str) -> bool:
        """Hold the streak's action, fenced by the version read; False if another write came
        first."""

    def hold_release(self, streak: Streak, released_by: str, now: datetime) -> bool:
        """Release the streak's hold, fenced by the version read."""

    def hold_release_table(self, table_pk: int) -> list[str]:
        """Release every held action of the table (ResumeTable); the actions released."""

    def hold_of_table(self, table_pk: int) -> list[ActionHold]:
        """The table's held actions."""

    def hold_list(self, table_id: str | None, action: str | None, after: tuple[str, str],
                  limit: int) -> list[ActionHold]:
        """Held actions by (table id, action) after ``after``, optionally of one table or
        action."""

    def hold_counts(self) -> dict[str, int]:
        """Held actions per action."""


class ApiStore(IntakeStore, CatalogStore, TableStore, OperationStore, ReportStore, HoldStore,
               FleetStore, ReadStatsStore, Protocol):
    """Everything the API nodes use."""


class SchedulerStore(DecisionStore, MaintenanceStore, HoldStore, HealthStore, LivenessStore,
                     Protocol):
    """Everything a scheduler uses (maintenance only while it leads)."""


__all__ = [
    "OPERATION_ORDERS", "TABLE_ORDERS", "ApiStore", "CatalogStore", "FleetStore",
    "HealthStore", "LivenessStore",
    "CatalogTable", "DecisionStore", "DiscoveredRegistration",
    "DiscoveryStore", "DuplicateTable", "EnqueueParams", "ExecutionStore", "HoldStore",
    "IntakeStore", "ReadStatsStore", "ReportedTable",
    "MaintenanceStore", "OperationListParams", "OperationStore", "ReportStore", "ReportTarget",
    "RequestRecord",
    "SchedulerStore", "TableGone", "TableListParams", "TableStore",
]
