"""The Iceberg trigger policy's keys and what the rules share: each key's type, range,
default and documentation (the schema a table owner's policy is parsed against), the metrics
one evaluation works out once, and the rewrite's codec and level as the policy names them.
The rules themselves: ``policy``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from tms.domain import Decision, Operation
from tms.formats.iceberg import tiers as iceberg_tiers
from tms.jobs import table_props, write_format
from tms.jobs.procedures import MAX_FILE_BYTES
from tms.policy.bounds import Bound
from tms.policy.schema import Kind, PolicyKey, boolean, by_key, choice, decimal, integer, text

KIB = 1024
MIB = 1024 * 1024
GIB = 1024 * MIB
DAY_S = 86_400
MAX_INTERVAL_S = 30 * DAY_S
MAX_RUN_BYTES = 1024 * 1024 * GIB  # 1 PiB
MAX_COUNT = 1_000_000
FORMAT = ("iceberg",)
# Column names only, separated by ", " (spaces, not tabs or newlines): they reach Spark SQL
_COLUMN = r"[A-Za-z_][A-Za-z0-9_]{0,127}"
COLUMNS = rf"{_COLUMN}( ?, ?{_COLUMN}){{0,31}}"
_TERM = rf"{_COLUMN}( (ASC|DESC))?( NULLS (FIRST|LAST))?"
SORT = rf"{_TERM}( ?, ?{_TERM}){{0,31}}"


def _int(key: str, default: int, minimum: int, maximum: int, unit: str, doc: str
         ) -> PolicyKey:
    return integer(key, default, minimum, maximum, unit, doc, FORMAT)


def _on(key: str, default: bool, doc: str) -> PolicyKey:
    return boolean(key, default, doc, FORMAT)


K = by_key((
    _on("compaction.enabled", True, "bin-pack small data files"),
    _int("compaction.target-file-size-bytes", 128 * MIB, KIB, MAX_FILE_BYTES, "bytes",
         "size of the files compaction and clustering write; unset, the table's own "
         "write.target-file-size-bytes when it sets one"),
    _int("compaction.small-file-bytes", 16 * MIB, KIB, MAX_FILE_BYTES, "bytes",
         "a data file below this size counts as small; unset while the target comes from "
         "the table's write.target-file-size-bytes, 3/4 of that target (at most the default)"),
    _int("compaction.min-small-files", 12, 2, MAX_COUNT, "count",
         "small files that trigger a compaction; a partition's smaller files are merged once "
         "they fill a size tier (compaction.tier-fanout, at most this many), or from twice "
         "this many"),
    _int("compaction.min-interval-s", 60, 0, MAX_INTERVAL_S, "s",
         "least time between two compactions"),
    _int("compaction.quiet-s", 3600, 0, MAX_INTERVAL_S, "s",
         "a table without commits this long is compacted from 2 small files (0: off)"),
    decimal("compaction.min-file-ratio", 0.75, 0.05, 1.0,
            "a data file of at least this share of the target size is not rewritten by a "
            "merge (only deletes call for it)", FORMAT),
    PolicyKey("compaction.tier-fanout", Kind.DECIMAL, iceberg_tiers.TIER_FANOUT,
              "size tiers: a merge takes a partition's smaller files only once they add up to "
              "this many times the mean size of the largest power-of-two size class taken (at "
              "most min-small-files); larger files wait, so a byte is rewritten about "
              "log-base-this of (target / written size) times",
              "times", 1.1, 1000.0, formats=FORMAT),
    decimal("compaction.delete-ratio", 0.1, 0.001, 1.0,
            "share of a partition's rows hidden by deletes (equality deletes: one row per "
            "key) that calls for applying them; min-small-files delete files always do "
            "(position delete files only with position-deletes.enabled false: else that "
            "rewrite merges them)", FORMAT),
    _int("compaction.max-bytes-per-run", 10 * GIB, MIB, MAX_RUN_BYTES, "bytes",
         "most bytes one compaction or clustering plans to rewrite (partitions of most "
         "benefit first)"),
    choice("compaction.compression-codec", write_format.CODECS, None,
           "codec of the files compaction, clustering and position-delete rewrites write "
           "(not set: the table's write.parquet.compression-codec, else the codec its data "
           "files are in)", FORMAT),
    integer("compaction.compression-level", None, 0, write_format.MAX_LEVEL, "level",
            "compression level of those files (not set: the table's, else the data files' "
            "writer's default)", FORMAT),
    _on("clustering.enabled", False, "sort or z-order data files (needs a sort order)"),
    text("clustering.sort-order", "", SORT, "columns with optional ASC/DESC and NULLS "
         "FIRST/LAST, comma-separated", "sort order of clustering", FORMAT),
    text("clustering.zorder-columns", "", COLUMNS, "comma-separated column names",
         "columns to z-order by (instead of a sort order)", FORMAT),
    _int("clustering.min-new-snapshots", 10, 1, MAX_COUNT, "count",
         "new snapshots since the last clustering that trigger the next"),
    _int("clustering.min-interval-s", DAY_S, 0, MAX_INTERVAL_S, "s",
         "least time between two clusterings"),
    _on("expire-snapshots.enabled", True, "expire old snapshots"),
    _int("expire-snapshots.max-age-s", 5 * DAY_S, 0, 3650 * DAY_S, "s",
         "snapshots older than this may expire"),
    _int("expire-snapshots.retain-last", 1, 1, 100_000, "count",
         "snapshots always kept, whatever their age"),
    _int("expire-snapshots.min-interval-s", 3600, 0, MAX_INTERVAL_S, "s",
         "least time between two expiries"),
    _on("orphan-files.enabled", False, "delete files no snapshot references"),
    _int("orphan-files.older-than-s", 3 * DAY_S, DAY_S, 365 * DAY_S, "s",
         "only files older than this are orphan candidates"),
    _int("orphan-files.interval-s", DAY_S, 0, MAX_INTERVAL_S, "s",
         "least time between two orphan-file removals"),
    _on("manifests.enabled", True, "rewrite manifests when there are many"),
    _int("manifests.max-count", 100, 2, MAX_COUNT, "count",
         "manifests in the current snapshot that trigger a rewrite"),
    _int("manifests.min-interval-s", 3600, 0, MAX_INTERVAL_S, "s",
         "least time between two manifest rewrites"),
    _on("position-deletes.enabled", True, "compact position delete files"),
    _int("position-deletes.max-files", 20, 1, MAX_COUNT, "count",
         "position delete files that trigger a rewrite, counted in partitions where a rewrite "
         "removes some: two or more delete files with partition granularity, more delete "
         "files than data files with file granularity (Iceberg's default)"),
    _int("position-deletes.min-interval-s", 600, 0, MAX_INTERVAL_S, "s",
         "least time between two position-delete rewrites"),
))

POLICY_BOUNDS = (
    Bound("compaction.small-file-bytes", "compaction.target-file-size-bytes",
          why="a file compaction writes would count as small, and be rewritten again"),
)

WRITE_KEYS = (("compaction.compression-codec", write_format.OPTION_CODEC),
              ("compaction.compression-level", write_format.OPTION_LEVEL))
QUIET_MIN_SMALL_FILES = 2  # a quiet table is worth a rewrite from two small files on
Rule = Callable[[Mapping[str, str], Mapping[str, Any], Operation | None, datetime],
                Decision]


class Measured(dict[str, Any]):
    """Metrics whose public part is worked out once for all the rules of one evaluation
    (six rules each took a copy without the "_" keys)."""

    def __init__(self, m: Mapping[str, Any], public: Mapping[str, Any] | None = None) -> None:
        """``public``: that part already worked out (an unchanged table's, kept with its
        metrics); never changed here, the rules take copies."""
        super().__init__(m)
        self.public = public if public is not None else {
            k: v for k, v in m.items() if not k.startswith("_")}


def public(m: Mapping[str, Any]) -> dict[str, Any]:
    """The metrics worth storing with a decision: "_" keys are bulky inputs (e.g. every
    snapshot's time) that would bloat each stored decision. A copy: a rule may add to it."""
    if isinstance(m, Measured):
        return dict(m.public)
    return {k: v for k, v in m.items() if not k.startswith("_")}


def write_params(pol: Mapping[str, str]) -> dict[str, str]:
    """The rewrite's codec and level when the policy names them (else the job keeps the
    table's own: ``tms.jobs.write_format``)."""
    return {param: K[key].text(K[key].get(pol)) for key, param in WRITE_KEYS if key in pol}


def write_codec(pol: Mapping[str, str], props: Mapping[str, str]) -> str:
    """The codec rewrites will write, as far as policy and metadata tell (a metric, shown by
    ExplainTable); the job reads the data files' own when neither names one, and its result
    says which it wrote (``tms.jobs.write_format``)."""
    if pol.get("compaction.compression-codec"):
        return f"{pol['compaction.compression-codec']} (policy compaction.compression-codec)"
    prop = props.get(write_format.DATA_CODEC)
    if prop:
        return f"{prop.lower()} (table property {write_format.DATA_CODEC})"
    return "the data files' own (read from their Parquet footers when a rewrite runs)"


def level_problems(codec: str | None, level: str | None, field: str, codec_key: str
                   ) -> list[tuple[str, str]]:
    """A codec and a level set together (a policy, a trigger's parameters) that its writer
    does not take (gzip 1-9, brotli 0-11): refused when set, not when the rewrite runs (the
    job checks the level against the codec it chose too, for a codec not named here)."""
    bounds = table_props.LEVELS.get((codec or "").lower())
    if bounds is None or level is None or not level.isascii() or not level.isdigit():
        return []  # a malformed level is the schema's to refuse
    if bounds[0] <= int(level) <= bounds[1]:
        return []
    return [(field, f"{level} does not fit {codec_key} {codec}: expected {bounds[0]} to "
                    f"{bounds[1]}")]


TARGET_KEY = "compaction.target-file-size-bytes"
SMALL_KEY = "compaction.small-file-bytes"
# Iceberg's own planner calls a file too small below 3/4 of the target (its
# min-file-size-bytes default): with a target taken from the table, so does TMS unless its
# policy names a small-file size.
SMALL_SHARE_OF_TARGET = 0.75
# The table's own write.target-file-size-bytes, as inspection read it (a metric: ExplainTable
# shows it, evaluation takes it as the target when no TMS policy sets one).
TABLE_TARGET_METRIC = "table_target_file_size_bytes"


def table_target(props: Mapping[str, str]) -> int | None:
    """The table's ``write.target-file-size-bytes`` when it sets one TMS can write to (within
    the policy key's range, parsed strictly); None otherwise (unset, or a value the owner set
    that no writer takes: the rewrite itself refuses such a table, naming the property)."""
    raw = props.get(table_props.DATA_TARGET)
    if raw is None:
        return None
    bounds = K[TARGET_KEY]
    try:
        return table_props.parse_int(table_props.DATA_TARGET, raw, int(bounds.minimum or 1),
                                     int(bounds.maximum or table_props.JAVA_LONG_MAX))
    except table_props.PropertyRefused:
        return None


def with_table_target(pol: Mapping[str, str], target: int | None) -> Mapping[str, str]:
    """The policy in force, with the table's own target file size as the compaction target
    when neither the table's TMS policy nor its catalog's sets one; the small-file size then
    follows it (3/4 of the target, never above the policy's default) unless set too. What
    the table's owner wrote into its properties is honoured; an explicit TMS policy wins."""
    if target is None or TARGET_KEY in pol:
        return pol
    out = {**pol, TARGET_KEY: str(target)}
    if SMALL_KEY not in pol:
        small = min(K[SMALL_KEY].as_int({}), int(target * SMALL_SHARE_OF_TARGET))
        out[SMALL_KEY] = str(max(small, int(K[SMALL_KEY].minimum or 1)))
    return out
