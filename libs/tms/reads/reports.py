"""Iceberg's scan and commit reports, as the TMS reporter sends them, parsed strictly.

An engine that loads tables through an Iceberg catalog reports a ``ScanReport`` after planning
each scan and a ``CommitReport`` after each commit. ``tms-reporter.jar`` (the catalog's
``metrics-reporter-impl``) posts them in batches, each report in the JSON form of Iceberg's
REST ``ReportMetricsRequest``::

    {"catalog": "<TMS catalog id>", "reports": [
      {"report-type": "scan-report", "table-name": "lake.db.events", "snapshot-id": 1,
       "filter": {"type": "and", "left": {"type": "eq", "term": "user_id",
                  "value": "(hash-1a2b3c4d)"}, ...},
       "projected-field-names": ["user_id", "ts"],
       "metrics": {"result-data-files": {"unit": "count", "value": 3}, ...}},
      {"report-type": "commit-report", "table-name": "lake.db.events", "snapshot-id": 2,
       "sequence-number": 2, "operation": "append",
       "metrics": {"added-data-files": {"unit": "count", "value": 1}, ...}}]}

The filter's literals arrive already hashed by Iceberg: TMS learns which columns are filtered
and how, never the values. The sender is an engine run by a table's reader or writer, so
nothing here is trusted: every size is bounded (bytes, reports, filter depth and nodes, names,
projected fields), anything malformed is refused with the reason, and a report only ever
names a table in the catalog the batch names (the caller maps it, and checks the token's
scope, per table).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

MAX_BATCH_BYTES = 4 * 1024 * 1024
MAX_BATCH_REPORTS = 1000
MAX_TABLE_NAME_LEN = 1024
MAX_COLUMN_NAME_LEN = 256
MAX_PROJECTED_FIELDS = 1000
MAX_FILTER_DEPTH = 32
MAX_FILTER_NODES = 512
# A scan's filtered columns are kept as a set for "which columns go together"; wider
# conjunctions are rare and their exact sets teach little, so a set is cut to its first few.
MAX_COLUMN_SET = 4
MAX_COUNT = 1 << 62
CATALOG_ID_RE = re.compile(r"[a-z][a-z0-9_]{0,62}")
# What a filter term may be: printable, no control characters (names are shown to people).
_NAME_RE = re.compile("[^\x00-\x1f\x7f]{1,%s}" % MAX_COLUMN_NAME_LEN)  # noqa: UP031

# Iceberg's expression operations, grouped the way layout decisions use them.
EQUALITY = "eq"
RANGE = "range"
IN = "in"
NULL = "null"
OTHER = "other"
_OPERATOR_CLASS = {
    "eq": EQUALITY, "not-eq": OTHER,
    "lt": RANGE, "lt-eq": RANGE, "gt": RANGE, "gt-eq": RANGE,
    "starts-with": RANGE, "not-starts-with": OTHER,
    "in": IN, "not-in": OTHER,
    "is-null": NULL, "not-null": NULL, "is-nan": NULL, "not-nan": NULL,
}
_LOGICAL = {"and", "or", "not"}
_CONSTANT = {"true", "false"}
OPERATOR_CLASSES = (EQUALITY, RANGE, IN, NULL, OTHER)


class ReportError(ValueError):
    """A batch or report the intake refuses; the message names what is wrong."""


@dataclass(frozen=True)
class ScanObservation:
    """What one scan teaches: the columns its filter used (with the operator class of each
    use), the columns it read, and how much the planner kept."""

    table_name: str
    snapshot_id: int | None
    predicates: tuple[tuple[str, str], ...]
    filter_columns: tuple[str, ...]
    projected: tuple[str, ...]
    result_data_files: int
    skipped_data_files: int
    result_bytes: int
    total_data_manifests: int
    skipped_data_manifests: int


@dataclass(frozen=True)
class CommitObservation:
    table_name: str
    snapshot_id: int
    sequence_number: int | None
    operation: str
    added_data_files: int | None
    added_bytes: int | None


@dataclass(frozen=True)
class Batch:
    catalog: str
    scans: tuple[ScanObservation, ...]
    commits: tuple[CommitObservation, ...]
    # reports refused one by one, with the reason (a batch is not refused for one bad report)
    refused: tuple[str, ...]


def parse_batch(body: bytes) -> Batch:
    """Parse a batch; ReportError when the batch itself is unusable."""
    if len(body) > MAX_BATCH_BYTES:
        raise ReportError(f"batch of {len(body)} bytes exceeds {MAX_BATCH_BYTES}")
    try:
        data = json.loads(body, parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:
        raise ReportError(f"batch is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise ReportError("batch must be a JSON object with 'catalog' and 'reports'")
    catalog = data.get("catalog")
    if not isinstance(catalog, str) or not CATALOG_ID_RE.fullmatch(catalog):
        raise ReportError("'catalog' must be a TMS catalog id (^[a-z][a-z0-9_]{0,62}$)")
    reports = data.get("reports")
    if not isinstance(reports, list) or not 1 <= len(reports) <= MAX_BATCH_REPORTS:
        raise ReportError(f"'reports' must be a list of 1 to {MAX_BATCH_REPORTS} reports")
    scans: list[ScanObservation] = []
    commits: list[CommitObservation] = []
    refused: list[str] = []
    for i, report in enumerate(reports):
        try:
            parsed = parse_report(report)
        except ReportError as e:
            refused.append(f"reports[{i}]: {e}")
            continue
        (scans if isinstance(parsed, ScanObservation) else commits).append(parsed)  # type: ignore[arg-type]
    return Batch(catalog, tuple(scans), tuple(commits), tuple(refused))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_report(report: Any) -> ScanObservation | CommitObservation:
    if not isinstance(report, dict):
        raise ReportError("a report must be a JSON object")
    kind = report.get("report-type")
    name = report.get("table-name")
    if not isinstance(name, str) or not 0 < len(name) <= MAX_TABLE_NAME_LEN \
            or not _NAME_RE.fullmatch(name[:MAX_COLUMN_NAME_LEN]):
        raise ReportError(f"'table-name' must be a printable name of 1 to "
                          f"{MAX_TABLE_NAME_LEN} characters")
    metrics = report.get("metrics", {})
    if not isinstance(metrics, dict):
        raise ReportError("'metrics' must be an object")
    if kind == "scan-report":
        return _scan(name, report, metrics)
    if kind == "commit-report":
        return _commit(name, report, metrics)
    raise ReportError("'report-type' must be scan-report or commit-report")


def _scan(name: str, report: Mapping[str, Any], metrics: Mapping[str, Any]) -> ScanObservation:
    predicates = _predicates(report.get("filter", {"type": "true"}))
    projected = report.get("projected-field-names", [])
    if not isinstance(projected, list) or len(projected) > MAX_PROJECTED_FIELDS:
        raise ReportError(f"'projected-field-names' must be a list of at most "
                          f"{MAX_PROJECTED_FIELDS} names")
    columns = tuple(dict.fromkeys(_column(p) for p in projected))
    filtered = tuple(sorted({c for c, _ in predicates}))
    return ScanObservation(
        name, _optional_int(report, "snapshot-id"), tuple(sorted(set(predicates))),
        filtered[:MAX_COLUMN_SET], columns,
        _metric(metrics, "result-data-files"), _metric(metrics, "skipped-data-files"),
        _metric(metrics, "total-file-size-in-bytes"), _metric(metrics, "total-data-manifests"),
        _metric(metrics, "skipped-data-manifests"))


def _commit(name: str, report: Mapping[str, Any], metrics: Mapping[str, Any]
            ) -> CommitObservation:
    snapshot = _optional_int(report, "snapshot-id")
    if snapshot is None:
        raise ReportError("a commit report needs 'snapshot-id'")
    operation = report.get("operation", "")
    if not isinstance(operation, str) or not re.fullmatch(r"[a-z][a-z0-9_-]{0,31}|", operation):
        raise ReportError("'operation' must be an Iceberg operation name")
    return CommitObservation(
        name, snapshot, _optional_int(report, "sequence-number"), operation,
        _metric(metrics, "added-data-files", None), _metric(metrics, "added-files-size-bytes",
                                                            None))


def _optional_int(report: Mapping[str, Any], key: str) -> int | None:
    value = report.get(key)
    if value is None:
        return None
    if type(value) is not int or not -(1 << 63) <= value < (1 << 63):
        raise ReportError(f"'{key}' must be a 64-bit integer")
    return value


def _metric(metrics: Mapping[str, Any], key: str, default: int | None = 0) -> Any:
    entry = metrics.get(key)
    if entry is None:
        return default
    value = entry.get("value") if isinstance(entry, dict) else None
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        raise ReportError(f"metric '{key}' must hold a non-negative integer 'value'")
    return value


def _column(term: Any) -> str:
    if not isinstance(term, str) or not _NAME_RE.fullmatch(term):
        raise ReportError(f"a column name must be printable and 1 to {MAX_COLUMN_NAME_LEN} "
                          "characters")
    return term


def _predicates(expr: Any) -> list[tuple[str, str]]:
    """(column, operator class) for every predicate in a filter expression, bounded."""
    out: list[tuple[str, str]] = []
    for node in _walk(expr):
        kind = node["type"]
        term = node.get("term")
        if isinstance(term, dict):  # a transform: {"type": "transform", "term": "ts", ...}
            inner = term.get("term")
            term = inner if isinstance(inner, str) else None
            if term is None:
                raise ReportError("a transform term must name its column")
        out.append((_column(term), _OPERATOR_CLASS[kind]))
    return out


def _walk(expr: Any, depth: int = 0, seen: list[int] | None = None) -> Iterator[dict[str, Any]]:
    """The predicate nodes of an expression tree, refusing trees too deep or too large."""
    seen = seen if seen is not None else [0]
    seen[0] += 1
    if seen[0] > MAX_FILTER_NODES:
        raise ReportError(f"filter has more than {MAX_FILTER_NODES} nodes")
    if depth > MAX_FILTER_DEPTH:
        raise ReportError(f"filter is nested deeper than {MAX_FILTER_DEPTH}")
    if isinstance(expr, bool):  # Iceberg writes the constants as JSON booleans
        return
    if not isinstance(expr, dict) or not isinstance(expr.get("type"), str):
        raise ReportError("a filter node must be an object with a 'type'")
    kind = expr["type"]
    if kind in _CONSTANT:
        return
    if kind in _LOGICAL:
        children = [expr.get("child")] if kind == "not" else [expr.get("left"),
                                                               expr.get("right")]
        for child in children:
            yield from _walk(child, depth + 1, seen)
        return
    if kind not in _OPERATOR_CLASS:
        raise ReportError(f"unknown filter operation {kind[:40]!r}")
    yield expr
