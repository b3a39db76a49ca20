"""Parameters an Iceberg operation may carry, per action: what the trigger policies emit and
what TriggerOperation may give. They become the Iceberg procedure's arguments and options
(``rewrite_data_files``, ``rewrite_position_delete_files``, ...), so each is typed and bounded;
the Spark job (``tms.jobs.iceberg_maintenance``, standard library only) checks the same names and
ranges again before anything runs, and a unit test keeps the two in step.
"""

from __future__ import annotations

from tms.formats.iceberg.policy_keys import COLUMNS, FORMAT, GIB, KIB, SORT
from tms.jobs.partition_filter import MAX_PARTITIONS_CHARS, PARAM
from tms.jobs.procedures import MAX_FILE_BYTES
from tms.jobs.table_props import JAVA_INT_MAX
from tms.jobs.write_format import CODECS, MAX_LEVEL, OPTION_CODEC, OPTION_LEVEL
from tms.policy.bounds import Bound
from tms.policy.schema import PolicyKey, boolean, by_key, choice, integer, text, timestamp

TIB = 1024 * GIB


def _int(key: str, minimum: int, maximum: int, unit: str, doc: str) -> PolicyKey:
    return integer(key, None, minimum, maximum, unit, doc, FORMAT)


def _on(key: str, doc: str) -> PolicyKey:
    return boolean(key, None, doc, FORMAT)


_REWRITE = (
    _int("target-file-size-bytes", KIB, MAX_FILE_BYTES, "bytes", "size of the files written"),
    _int("min-file-size-bytes", 0, MAX_FILE_BYTES, "bytes", "files below this are rewritten"),
    _int("max-file-size-bytes", KIB, MAX_FILE_BYTES, "bytes", "files above this are rewritten"),
    _int("min-input-files", 1, 100_000, "count", "least files of a group worth rewriting"),
    _on("rewrite-all", "rewrite every file, whatever its size"),
    _int("max-file-group-size-bytes", KIB, TIB, "bytes", "most bytes one file group rewrites"),
    _int("max-concurrent-file-group-rewrites", 1, 1000, "count",
         "file groups rewritten at the same time"),
    _on("partial-progress.enabled", "commit file groups as they finish"),
    _int("partial-progress.max-commits", 1, 1000, "count", "most commits with partial progress"),
    # not procedure options: the job sets them as the write's codec (tms.jobs.write_format)
    choice(OPTION_CODEC, CODECS, None, "codec of the files written (absent: the codec the "
           "table's properties name, else the one its data files are in)", FORMAT),
    _int(OPTION_LEVEL, 0, MAX_LEVEL, "level",
         "compression level of the files written (absent: the table's, else the writer's)"),
    _on("manifests-first", "merge many small manifests before the rewrite (default true), "
        "so its commit does not rewrite each of them"),
)
_DATA_ONLY = (
    _int("delete-file-threshold", 1, JAVA_INT_MAX, "count",
         "a data file with this many deletes is rewritten"),
    _on("use-starting-sequence-number", "commit with the sequence number the rewrite began at"),
    _on("remove-dangling-deletes", "drop delete files no live data file needs after the rewrite"),
)
# JSON [[spec id, [values]], ...], ASCII (non-ASCII text as \u escapes); its structure is
# checked by tms.jobs.partition_filter (IcebergFormat.check_params and the job).
_PARTITIONS = text(PARAM, None, rf"\[[\x20-\x7e]{{1,{MAX_PARTITIONS_CHARS - 2}}}\]",
                   "a JSON list of [spec id, [partition values]] pairs, e.g. [[0,[20454]]]",
                   "only these partitions are rewritten (values as Iceberg stores them: a "
                   "day as days since 1970-01-01)", FORMAT)
_OLDER_THAN = timestamp("older-than", "only what is older than this UTC time", FORMAT)

PARAMS: dict[str, dict[str, PolicyKey]] = {
    "compaction": by_key((*_REWRITE, *_DATA_ONLY, _PARTITIONS)),
    "clustering": by_key((
        *_REWRITE, *_DATA_ONLY, _PARTITIONS,
        text("sort-order", None, SORT, "columns with optional ASC/DESC and NULLS FIRST/LAST",
             "sort order to cluster by", FORMAT),
        text("zorder-columns", None, COLUMNS, "comma-separated column names",
             "columns to z-order by", FORMAT))),
    "expire_snapshots": by_key((
        _OLDER_THAN,
        _int("retain-last", 1, JAVA_INT_MAX, "count", "snapshots kept whatever their age"))),
    "remove_orphan_files": by_key((
        _OLDER_THAN, _on("dry-run", "only list the orphan files, delete nothing"))),
    "rewrite_manifests": by_key((_on("use-caching", "let Spark cache while rewriting"),)),
    "rewrite_position_deletes": by_key((*_REWRITE, _PARTITIONS)),
}

# Iceberg's rewriters refuse these at run time (SizeBasedFileRewriter): refused at the door.
_SIZES = (
    Bound("min-file-size-bytes", "target-file-size-bytes", strict=True,
          why="every file written would be below the minimum"),
    Bound("target-file-size-bytes", "max-file-size-bytes", strict=True,
          why="every file written would be above the maximum"),
    Bound("min-file-size-bytes", "max-file-size-bytes", strict=True),
)
PARAM_BOUNDS: dict[str, tuple[Bound, ...]] = {
    action: _SIZES for action in ("compaction", "clustering", "rewrite_position_deletes")}
