"""What the fleet answers are made of: a table's stored health and history, the processes'
heartbeats, and finished operations per day."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

RESOLUTIONS = ("inspection", "hour", "day")  # tms_table_history.resolution 0, 1, 2


@dataclass(frozen=True)
class StoredHealth:
    """A table's health as its last inspection left it."""

    inspected_at: datetime
    score: int
    parts: list[dict[str, Any]]
    partitions: list[dict[str, Any]]


@dataclass(frozen=True)
class HistoryPoint:
    at: datetime
    resolution: str
    data_files: int
    small_files: int
    mean_file_bytes: int
    total_bytes: int
    delete_files: int
    snapshots: int
    manifests: int
    health_score: int | None


@dataclass(frozen=True)
class OperationMarker:
    op_id: int
    action: str
    state: str
    finished_at: datetime


@dataclass(frozen=True)
class ProcessBeat:
    """What a process says of itself at each heartbeat."""

    process_id: str
    kind: str  # scheduler | executor
    host: str
    started_at: datetime
    interval_s: float
    leader: bool = False
    shards: tuple[int, ...] = ()
    running: tuple[str, ...] = ()  # operation names


@dataclass(frozen=True)
class ProcessStatus:
    process_id: str
    kind: str
    host: str
    started_at: datetime
    heartbeat_at: datetime
    alive: bool
    leader: bool
    shards: tuple[int, ...]
    running: tuple[str, ...]


@dataclass(frozen=True)
class FleetCounts:
    tables_by_state: dict[str, int]
    health_bands: dict[str, int]
    queued: int
    running: int
    ended_24h: dict[str, int]
    commits_1h: int
    db_now: datetime
    processes: list[ProcessStatus] = field(default_factory=list)


@dataclass(frozen=True)
class DaySummary:
    day: str  # YYYY-MM-DD (UTC)
    succeeded: int
    failed: int
    skipped: int
    cancelled: int
    data_files_before: int
    data_files_after: int
    bytes_rewritten: int
