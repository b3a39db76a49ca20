"""A table's read profile: what its readers filter on and read, and how well scans prune.

The intake folds a batch of scan observations into per-table increments
(:func:`increments`), which the store adds to decayed weights (an observation weighs 1 when it
arrives and half as much every ``READ_HALF_LIFE_S``), so the profile follows a workload that
changes without keeping any raw report. :class:`ReadProfile` is what ExplainTable, the CLI and
layout decisions read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from tms.reads.reports import ScanObservation

READ_HALF_LIFE_S = 7 * 24 * 3600.0
# Per table: at most this many (column, operator) keys and column sets are kept; a new key
# beyond the cap is dropped (existing ones keep counting), so an engine sending endless
# invented column names cannot grow a table's statistics.
MAX_PREDICATE_KEYS = 256
MAX_COLUMN_SETS = 64
PROJECTED = "projected"
# chr(31), the ASCII unit separator, joins a column set for the query (no column name holds a
# control character: tms.reads.reports refuses them).
SET_SEPARATOR = "\x1f"


@dataclass
class TableIncrement:
    """What one batch adds to one table's statistics."""

    predicates: Counter[tuple[str, str]] = field(default_factory=Counter)
    column_sets: Counter[tuple[str, ...]] = field(default_factory=Counter)
    scans: int = 0
    filtered_scans: int = 0
    result_files: int = 0
    skipped_files: int = 0
    result_bytes: int = 0


def increments(scans: Iterable[tuple[int, ScanObservation]]) -> dict[int, TableIncrement]:
    """Fold (table pk, scan) pairs into one increment per table."""
    out: dict[int, TableIncrement] = {}
    for table_pk, scan in scans:
        inc = out.setdefault(table_pk, TableIncrement())
        inc.scans += 1
        inc.result_files += scan.result_data_files
        inc.skipped_files += scan.skipped_data_files
        inc.result_bytes += scan.result_bytes
        for key in scan.predicates:
            inc.predicates[key] += 1
        for column in scan.projected:
            inc.predicates[(column, PROJECTED)] += 1
        if scan.filter_columns:
            inc.filtered_scans += 1
            inc.column_sets[scan.filter_columns] += 1
    return out


@dataclass(frozen=True)
class ColumnUse:
    column: str
    operator: str
    weight: float


@dataclass(frozen=True)
class ReadProfile:
    """A table's decayed read statistics (weights are "recent scans", decayed)."""

    scans: float
    filtered_scans: float
    result_files: float
    skipped_files: float
    result_bytes: float
    reports: int
    predicates: tuple[ColumnUse, ...]
    column_sets: tuple[tuple[tuple[str, ...], float], ...]

    @property
    def kept_share(self) -> float | None:
        """Of the data files the planner looked at after manifest pruning, the share scans
        kept (1.0: nothing pruned by file statistics); None before any scan."""
        seen = self.result_files + self.skipped_files
        return self.result_files / seen if seen > 0 else None

    def filter_share(self, column: str) -> float:
        """The share of (decayed) scans whose filter used ``column``."""
        if self.scans <= 0:
            return 0.0
        used = sum(u.weight for u in self.predicates
                   if u.column == column and u.operator != PROJECTED)
        return min(1.0, used / self.scans)

    def summary(self, limit: int = 3) -> str:
        """One line a person reads: "1,240 scans; 78 % filter on event_time (range), ..."."""
        if self.reports == 0:
            return "no scan reports"
        by_column: dict[str, dict[str, float]] = {}
        for use in self.predicates:
            if use.operator != PROJECTED:
                by_column.setdefault(use.column, {})[use.operator] = use.weight
        ranked = sorted(by_column.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
        parts = []
        for column, ops in ranked[:limit]:
            share = min(1.0, sum(ops.values()) / self.scans) if self.scans else 0.0
            main = max(ops.items(), key=lambda kv: kv[1])[0]
            parts.append(f"{share:.0%} filter on {column} ({main})")
        kept = self.kept_share
        pruning = "" if kept is None else f"; scans keep {kept:.0%} of the files planned"
        return f"{self.reports:,} scans reported ({self.scans:,.0f} recent)" + (
            "; " + ", ".join(parts) if parts else "; no filters") + pruning
