"""Position-delete rewrites planned per partition, the way Iceberg's
``rewrite_position_delete_files`` works.

Iceberg groups a table's position delete files by partition and rewrites a group only when it
holds at least ``min-input-files`` files (default five; or more content than the target size):
counted table-wide, twenty delete files spread one per partition call for a rewrite that
rewrites nothing. So a partition is planned only when it holds at least ``MIN_INPUT_FILES``
position delete files (one file rewritten alone merges nothing), the operation is due when
those partitions together hold ``position-deletes.max-files`` or more, and the job gets the same
minimum (``min-input-files``) and only those partitions (``partitions``: a ``where`` filter),
most delete files removed per byte rewritten first.

Not modelled: a delete file of at least 3/4 of the table's delete target size
(``write.delete.target-file-size-bytes``, 64 MiB: millions of positions) is left alone by
Iceberg; a partition of two such files would be planned and rewrite nothing (the no-op hold
then keeps it from repeating). Equality deletes are no business of this action (a compaction
applies them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from tms.formats import iceberg_stats
from tms.formats.iceberg_plan import Candidate, Plan, select, specs_of
from tms.jobs import partition_filter

MIN_INPUT_FILES = 2  # the job's min-input-files: a partition's files are merged from two on


def candidate(key: iceberg_stats.PartitionKey, st: iceberg_stats.PartitionStats
              ) -> Candidate | None:
    """The partition's position-delete rewrite: its delete files become one."""
    n = st.position_delete_files
    if n < MIN_INPUT_FILES:
        return None
    only = replace(st, equality_delete_files=0, equality_deleted_rows=0)
    return Candidate(key, only, False, True, st.position_delete_bytes, n - 1, 0)


def plan(rows: Sequence[Mapping[str, Any]], raw_specs: Mapping[Any, Sequence[Sequence[str]]],
         max_bytes: int) -> tuple[Plan, int]:
    """The partitions worth a position-delete rewrite, within the byte cap, and the position
    delete files of every partition worth one (chosen or waiting): what the threshold counts."""
    parts = iceberg_stats.decode(rows)
    cands = [c for k, st in parts.items() if (c := candidate(k, st)) is not None]
    p = select(cands, specs_of(raw_specs), any(k[1] for k in parts), max_bytes,
               sum(1 for p in parts.values() if p.data_files or p.delete_files))
    return p, sum(c.stats.position_delete_files for c in cands)


def params(p: Plan) -> dict[str, str]:
    """``rewrite_position_delete_files`` options: the planner's minimum per partition, and
    the chosen partitions (an unpartitioned table: the whole table)."""
    out = {"min-input-files": str(MIN_INPUT_FILES)}
    raw, _ = p.restriction()
    if raw is not None:
        out[partition_filter.PARAM] = raw
    return out
