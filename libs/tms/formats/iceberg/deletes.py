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

What a rewrite of a partition merges depends on the table's delete granularity
(``write.delete.granularity``; the rewrite writes at the table's granularity). ``partition``:
the partition's delete files become one, so two files merge. ``file`` (Iceberg's default since
1.8, what Spark's merge-on-read DELETE writes): the rewrite writes one delete file per data
file its deletes name, so a partition holding no more delete files than data files may merge
nothing at all (each data file named by one delete file: N files rewritten into the same N).
A partition is then planned only when its delete files outnumber its data files by
``MIN_INPUT_FILES - 1`` or more: some data file is named by two delete files, or a delete file
names a file a compaction removed (dangling deletes are dropped), so at least that many files
go. A file-scoped rewrite of a data file's deletes is repeated at the next DELETE of that
file, so the bound also tiers: a data file's merged delete file is rewritten again only with
another delete file for it, never on its own.

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

from tms.formats.iceberg import stats as iceberg_stats
from tms.formats.iceberg.plan import Candidate, Plan, select, specs_of
from tms.jobs import partition_filter

MIN_INPUT_FILES = 2  # the job's min-input-files: a partition's files are merged from two on
GRANULARITY_KEY = "write.delete.granularity"
FILE, PARTITION = "file", "partition"
DEFAULT_GRANULARITY = FILE  # Iceberg's default since 1.8


def granularity(properties: Mapping[str, str]) -> str:
    """The table's delete granularity as the rewrite applies it (unknown values: ``file``,
    the cautious reading: it plans fewer rewrites)."""
    raw = str(properties.get(GRANULARITY_KEY, DEFAULT_GRANULARITY)).strip().lower()
    return PARTITION if raw == PARTITION else FILE


def removed(st: iceberg_stats.PartitionStats, grain: str = FILE) -> int:
    """Delete files a rewrite of the partition removes at least: all but one with partition
    granularity; with file granularity, those beyond one per data file (fewer than that may
    remain: a data file named by none needs none)."""
    n = st.position_delete_files
    return n - 1 if grain == PARTITION else n - st.data_files


def candidate(key: iceberg_stats.PartitionKey, st: iceberg_stats.PartitionStats,
              grain: str = FILE) -> Candidate | None:
    """The partition's position-delete rewrite, if it surely removes a delete file."""
    n, gone = st.position_delete_files, removed(st, grain)
    if n < MIN_INPUT_FILES or gone < MIN_INPUT_FILES - 1:
        return None
    only = replace(st, equality_delete_files=0, equality_deleted_rows=0)
    return Candidate(key, only, False, True, st.position_delete_bytes, gone, 0)


def plan(rows: Sequence[Mapping[str, Any]], raw_specs: Mapping[Any, Sequence[Sequence[str]]],
         max_bytes: int, grain: str = FILE) -> tuple[Plan, int]:
    """The partitions worth a position-delete rewrite, within the byte cap, and the position
    delete files of every partition worth one (chosen or waiting): what the threshold counts."""
    parts = iceberg_stats.decode(rows)
    cands = [c for k, st in parts.items() if (c := candidate(k, st, grain)) is not None]
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
