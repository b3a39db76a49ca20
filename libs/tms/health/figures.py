"""What a scheduler keeps of an inspection for the health score, the trends and the files
per partition: the format plugin's metrics read into :class:`~tms.health.score.Figures` (one
shape for Iceberg and Hudi), the worst partitions, and how long the most overdue due action
has waited.

The metrics are what ``inspect`` returned, unchanged; the policy is the one in force. A
policy value that does not parse is read as its default here: the score must never fail a
decision (the decision itself reports a bad policy)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from tms.domain import Decision, Operation, Table
from tms.health.score import DAY_S, Figures, Health, score

MAX_PARTITIONS = 100  # partitions kept per table for ExplainTable (the worst first)
MAX_PARTITION_NAME = 300
# the defaults of the policy keys the score reads (as the Iceberg plugin documents them)
DEFAULT_SNAPSHOT_MAX_AGE_S = 5 * DAY_S
DEFAULT_RETAIN_LAST = 1
DEFAULT_MANIFESTS_MAX = 100
_EPOCH = date(1970, 1, 1)
_EPOCH_DT = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Inspection:
    """What one decision's inspection leaves for the health and history rows."""

    table_pk: int
    figures: Figures
    health: Health
    partitions: tuple[dict[str, Any], ...]


def _int(value: Any, default: int = 0) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError):
        return default
    return out if out >= 0 else default


def _policy_int(policy: Mapping[str, str], key: str, default: int) -> int:
    raw = policy.get(key)
    if raw is None or not str(raw).strip().isdigit():
        return default
    return int(str(raw).strip())


def expired_snapshots(times_ms: Sequence[Any], now: datetime, max_age_s: int,
                      retain_last: int) -> int:
    """Snapshots older than ``max_age_s`` beyond the ``retain_last`` newest ones."""
    times = sorted((_int(t) for t in times_ms), reverse=True)
    cutoff_ms = (now.timestamp() - max_age_s) * 1000
    return sum(1 for t in times[retain_last:] if t < cutoff_ms)


def figures_of(fmt: str, metrics: Mapping[str, Any], policy: Mapping[str, str],
               now: datetime) -> Figures:
    if fmt == "hudi":
        return Figures(
            data_files=_int(metrics.get("base_files")),
            small_files=_int(metrics.get("small_base_files")),
            small_file_bytes=_int(metrics.get("small_file_limit_bytes")),
            total_bytes=_int(metrics.get("base_bytes")) + _int(metrics.get("log_bytes")),
            delete_files=_int(metrics.get("log_files")),
            snapshots=_int(metrics.get("hudi_delta_commits")))
    small = metrics.get("small_files")
    times = metrics.get("_snapshot_times_ms") or ()
    return Figures(
        data_files=_int(metrics.get("data_files")),
        small_files=None if small is None else _int(small),
        small_file_bytes=_int(metrics.get("small_file_bytes")),
        total_bytes=_int(metrics.get("total_bytes")),
        delete_files=_int(metrics.get("delete_files")),
        snapshots=_int(metrics.get("snapshots")),
        expired_snapshots=expired_snapshots(
            times if isinstance(times, list | tuple) else (), now,
            _policy_int(policy, "expire-snapshots.max-age-s", DEFAULT_SNAPSHOT_MAX_AGE_S),
            max(1, _policy_int(policy, "expire-snapshots.retain-last", DEFAULT_RETAIN_LAST))),
        manifests=_int(metrics.get("manifests")),
        manifests_limit=_policy_int(policy, "manifests.max-count", DEFAULT_MANIFESTS_MAX))


def overdue(table: Table, decisions: Sequence[Decision],
            last_runs: Mapping[str, Operation], now: datetime) -> tuple[float, str]:
    """(seconds, action): the due action that has waited longest since it last succeeded
    (since the table was registered, if it never has); (0, "") when nothing is due."""
    worst, which = 0.0, ""
    for d in decisions:
        if not d.should_run:
            continue
        last = last_runs.get(d.action)
        since = (last.outcome.finished_at if last is not None else None) or table.created_at
        if since is None:
            continue
        waited = (now - since).total_seconds()
        if waited > worst or not which:
            worst, which = max(waited, 0.0), d.action
    return worst, which


def _value(transform: str, kind: str, value: Any) -> str:
    """A partition value as a person reads it: days, months, years and hours since the
    epoch (Iceberg's transforms) and dates and timestamps as ISO text."""
    if value is None:
        return "null"
    try:
        if isinstance(value, int) and not isinstance(value, bool):
            if transform == "day" or (transform == "identity" and kind == "date"):
                return (_EPOCH + timedelta(days=value)).isoformat()
            if transform == "month":
                return f"{1970 + value // 12:04d}-{value % 12 + 1:02d}"
            if transform == "year":
                return f"{1970 + value:04d}"
            if transform == "hour":
                return (_EPOCH_DT + timedelta(hours=value)).strftime("%Y-%m-%d-%H")
            if transform == "identity" and kind.startswith("timestamp"):
                return (_EPOCH_DT + timedelta(microseconds=value)).isoformat()
    except (OverflowError, ValueError):
        pass
    return str(value)


def partition_name(spec: Sequence[Sequence[str]] | None, values: Sequence[Any]) -> str:
    if not values:
        return "(unpartitioned)"
    out = []
    for i, value in enumerate(values):
        column, transform, kind = (list(spec[i]) + ["", "", ""])[:3] if spec and i < len(
            spec) else (f"#{i}", "identity", "")
        label = column if transform == "identity" else f"{column}_{transform}"
        out.append(f"{label}={_value(transform, kind, value)}")
    return "/".join(out)[:MAX_PARTITION_NAME]


def worst_partitions(metrics: Mapping[str, Any], limit: int = MAX_PARTITIONS
                     ) -> tuple[dict[str, Any], ...]:
    """The partitions with the most small files (then delete files, then data files), at
    most ``limit``; empty when the inspection did not read per-partition statistics."""
    rows = metrics.get("_partitions")
    if not isinstance(rows, list):
        return ()
    raw_specs = metrics.get("_specs")
    specs: Mapping[Any, Any] = raw_specs if isinstance(raw_specs, Mapping) else {}
    found: list[dict[str, Any]] = []
    for r in rows:
        if not isinstance(r, Mapping):
            continue
        deletes = _int(r.get("position_delete_files")) + _int(r.get("equality_delete_files"))
        spec = specs.get(r.get("spec")) or specs.get(str(r.get("spec")))
        found.append({"partition": partition_name(spec, list(r.get("values") or ())),
                      "data_files": _int(r.get("data_files")),
                      "small_files": _int(r.get("small_files")),
                      "bytes": _int(r.get("bytes")), "delete_files": deletes})
    found.sort(key=lambda p: (-int(p["small_files"]), -int(p["delete_files"]),
                              -int(p["data_files"]), str(p["partition"])))
    return tuple(found[:limit])


def inspection(table: Table, metrics: Mapping[str, Any], decisions: Sequence[Decision],
               last_runs: Mapping[str, Operation], now: datetime) -> Inspection:
    figures = figures_of(table.format, metrics, table.policy, now)
    waited, action = overdue(table, decisions, last_runs, now)
    return Inspection(table.pk, figures, score(figures, waited, action),
                      worst_partitions(metrics))
