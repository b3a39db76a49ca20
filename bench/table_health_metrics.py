"""The partitioned table-health bench's arithmetic, as pure functions (unit-tested by hand).

* files against the ideal per partition: a partition holding ``b`` bytes of data ideally has
  ``ceil(b / target)`` files (at least 1);
* write amplification: bytes maintenance rewrote over bytes writers wrote, both read from the
  table's snapshot summaries (``replace`` snapshots are maintenance's, every other one a
  writer's), which exist whatever the service reports;
* operations that changed nothing, read from each operation's result: the ``outcome`` block
  when the service writes one, else the engine's own counters (``*_count``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

MAINTENANCE_OPERATIONS = frozenset({"replace"})  # Iceberg's snapshot operation of a rewrite


@dataclass(frozen=True)
class PartitionFiles:
    """What one partition holds now: data files, their bytes, delete files."""

    data_files: int
    data_bytes: int
    delete_files: int = 0


def ideal_files(data_bytes: int, target_bytes: int) -> int:
    """Files a partition of ``data_bytes`` would have if every file were target-sized."""
    if target_bytes <= 0:
        raise ValueError("target_bytes must be positive")
    return max(1, math.ceil(data_bytes / target_bytes))


@dataclass(frozen=True)
class FilesVsIdeal:
    """Data files against the ideal, summed over partitions and the worst partition."""

    files: int
    ideal: int
    worst: float  # the largest files / ideal of one partition
    partitions: int
    delete_files: int

    @property
    def ratio(self) -> float:
        return self.files / self.ideal if self.ideal else math.nan


def files_vs_ideal(partitions: Mapping[Any, PartitionFiles], target_bytes: int) -> FilesVsIdeal:
    """Partitions without data files (only deletes, or emptied) do not count."""
    files = ideal = deletes = 0
    worst = 0.0
    counted = 0
    for p in partitions.values():
        deletes += p.delete_files
        if p.data_files == 0:
            continue
        counted += 1
        best = ideal_files(p.data_bytes, target_bytes)
        files += p.data_files
        ideal += best
        worst = max(worst, p.data_files / best)
    return FilesVsIdeal(files, ideal, worst, counted, deletes)


@dataclass
class SnapshotLedger:
    """Bytes written by writers and rewritten / added by maintenance, from snapshot summaries.

    ``observe`` is called with the table's snapshots whenever the bench has fresh metadata;
    each snapshot counts once (expired ones were counted while they were still listed)."""

    seen: set[int] = field(default_factory=set)
    writer_bytes: int = 0
    writer_snapshots: int = 0
    rewritten_bytes: int = 0
    maintenance_added_bytes: int = 0
    maintenance_snapshots: int = 0

    def observe(self, snapshots: Iterable[tuple[int, str, Mapping[str, str]]]) -> None:
        """``snapshots``: (snapshot id, operation, summary properties)."""
        for sid, operation, summary in snapshots:
            if sid in self.seen:
                continue
            self.seen.add(sid)
            added = int(summary.get("added-files-size", 0))
            if operation in MAINTENANCE_OPERATIONS:
                self.maintenance_snapshots += 1
                self.rewritten_bytes += int(summary.get("removed-files-size", 0))
                self.maintenance_added_bytes += added
            else:
                self.writer_snapshots += 1
                self.writer_bytes += added


def write_amplification(rewritten_bytes: int, writer_bytes: int) -> float:
    """Bytes maintenance rewrote per byte writers wrote (0 when nothing was written)."""
    return rewritten_bytes / writer_bytes if writer_bytes else 0.0


@dataclass(frozen=True)
class Outcome:
    """What one finished operation did, as far as its result says."""

    changed_nothing: bool | None  # None: the result does not say
    bytes_rewritten: int | None
    source: str  # "outcome" (the service's block), "result" (engine counters) or "none"


# The service's outcome block (tms.jobs.outcome) first, then the engine's own counters.
OUTCOME_BYTES_KEYS = ("data_bytes_rewritten", "rewritten_bytes_count")
OUTCOME_FILE_KEYS = ("data_files_rewritten", "data_files_removed", "data_files_added",
                     "delete_files_removed", "rewritten_data_files_count",
                     "removed_delete_files_count")


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _first_int(block: Mapping[str, Any], keys: Iterable[str]) -> int | None:
    for key in keys:
        value = _int(block.get(key))
        if value is not None:
            return value
    return None


def _change_counts(block: Mapping[str, Any]) -> list[int]:
    """The counters that say something changed: every numeric ``*_count`` except failures and
    byte counts (bytes move only when files do)."""
    counts = []
    for key, value in block.items():
        n = _int(value)
        if n is None or not key.endswith("_count") or "failed" in key or "bytes" in key:
            continue
        counts.append(n)
    return counts


def operation_outcome(result: Mapping[str, Any] | None) -> Outcome:
    """Read an operation's result (the engine's summary, numbers possibly as floats)."""
    result = result or {}
    block = result.get("outcome")
    if isinstance(block, Mapping):
        nothing = block.get("changed_nothing")
        if not isinstance(nothing, bool):
            files = [n for n in (_int(block.get(k)) for k in OUTCOME_FILE_KEYS) if n is not None]
            nothing = all(n == 0 for n in files) if files else None
        return Outcome(nothing, _first_int(block, OUTCOME_BYTES_KEYS), "outcome")
    counts = _change_counts(result)
    if not counts:
        return Outcome(None, _first_int(result, OUTCOME_BYTES_KEYS), "none")
    return Outcome(all(n == 0 for n in counts), _first_int(result, OUTCOME_BYTES_KEYS), "result")
