"""The actions a maintenance job runs (``ACTIONS``): each turns the spec's options into one
``CALL <catalog>.system.<procedure>(...)``. The plan is built (and every option validated) in
``parse_spec``, before Spark starts, so a bad spec fails in milliseconds with a clear message
instead of after a cold Spark start. Argument values reach SQL only as escaped string literals,
validated integers/booleans, or timestamps re-rendered from a parsed ``datetime``.

Imports only the standard library and the job's package.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from tms.jobs import partition_filter, write_format
from tms.jobs.job_spec import (
    MaintenanceRequest,
    SpecError,
    parse_fields,
    quote_ident,
    sql_string,
)
from tms.jobs.table_props import JAVA_INT_MAX

_COLUMN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}(\.[A-Za-z_][A-Za-z0-9_]{0,254})*$")
_UNSIGNED_RE = re.compile(r"0|[1-9][0-9]{0,18}")
_DIRECTIONS = ("ASC", "DESC")
_NULL_ORDERS = ("FIRST", "LAST")
# remove_orphan_files refuses an older_than less than 24 h ago (concurrent writers' files may
# not be committed yet); checked here too so the job fails before Spark starts.
MIN_ORPHAN_AGE_S = 24 * 3600


def _row_dict(row: Any) -> dict[str, Any]:
    return dict(row.asDict(recursive=True))


def _first_row(df: Any) -> dict[str, Any]:
    rows = df.collect()
    return _row_dict(rows[0]) if rows else {}


@dataclass(frozen=True)
class ProcedureCall:
    """One Iceberg procedure call; ``args`` are ``name => <SQL literal>`` fragments, ``options``
    the validated options map (rendered last). ``partitions`` (a data rewrite's ``partitions``
    parameter) restricts the call once the table's specs are known (``restrict``)."""

    procedure: str
    args: tuple[str, ...]
    summarize: Callable[[Any], dict[str, Any]] = _first_row
    info: dict[str, Any] = field(default_factory=dict)  # added to the result (e.g. dry_run)
    options: dict[str, str] = field(default_factory=dict)
    partitions: tuple[Any, ...] = ()  # partition_filter.PartitionRef
    # a rewrite writes files: (codec, level) the policy asked for, each None when it did not
    # (write_format chooses then); None for actions that write no data or delete files
    write: tuple[str | None, str | None] | None = None
    manifests_first: bool = True  # a rewrite merges many small manifests first (manifest_prep)
    where: str | None = None  # the partitions' filter (``restrict``), as the call's ``where``

    def sql(self, catalog_name: str) -> str:
        args = [*self.args, _options_map(self.options)] if self.options else list(self.args)
        return (f"CALL {quote_ident(catalog_name)}.system.{self.procedure}"
                f"({', '.join(args)})")


def _options_map(options: Mapping[str, str]) -> str:
    pairs = ", ".join(f"{sql_string(k)}, {sql_string(v)}" for k, v in options.items())
    return f"options => map({pairs})"


def _table_arg(spec: MaintenanceRequest) -> str:
    # catalog-qualified: unqualified, a namespace named like a catalog would be read as one
    return f"table => {sql_string(spec.qualified_table)}"


def _only_options(spec: MaintenanceRequest, allowed: tuple[str, ...]) -> None:
    """Actions without an options map take only the named options: a typo must not be ignored."""
    unknown = sorted(set(spec.options) - set(allowed))
    if unknown:
        raise SpecError(f"{spec.action}: unknown option(s) {unknown}; "
                        f"accepted: {sorted(allowed) or 'none'}")


def parse_bool(key: str, raw: str) -> bool:
    """Exactly ``true`` or ``false``: the same strict rule as the API's (tms.strict)."""
    if raw not in ("true", "false"):
        raise SpecError(f"option {key!r}: expected 'true' or 'false', got {raw[:50]!r}")
    return raw == "true"


def parse_int(key: str, raw: str, minimum: int, maximum: int) -> int:
    """ASCII digits only (no sign, spaces, '_' or leading zeros), within the range."""
    if not _UNSIGNED_RE.fullmatch(raw) or not minimum <= int(raw) <= maximum:
        raise SpecError(f"option {key!r}: expected an integer from {minimum} to {maximum}, "
                        f"got {raw[:50]!r}")
    return int(raw)


def parse_positive_int(key: str, raw: str) -> int:
    return parse_int(key, raw, 1, JAVA_INT_MAX)


# The options of the procedures that take an options map, with their ranges (None: a boolean).
# The job refuses a bad spec whoever wrote it. The API's schema (tms.formats.iceberg.params)
# and the policy's keys take the file-size bound from here; a unit test keeps the rest in step.
KIB = 1024
GIB = 1024 ** 3
MAX_FILE_BYTES = 16 * GIB  # a rewrite's target, minimum and maximum file size
REWRITE_OPTIONS: dict[str, tuple[int, int] | None] = {
    "target-file-size-bytes": (KIB, MAX_FILE_BYTES),
    "min-file-size-bytes": (0, MAX_FILE_BYTES),
    "max-file-size-bytes": (KIB, MAX_FILE_BYTES),
    "min-input-files": (1, 100_000),
    "rewrite-all": None,
    "max-file-group-size-bytes": (KIB, 1024 * GIB),
    "max-concurrent-file-group-rewrites": (1, 1000),
    "partial-progress.enabled": None,
    "partial-progress.max-commits": (1, 1000),
}
DATA_REWRITE_OPTIONS: dict[str, tuple[int, int] | None] = {
    **REWRITE_OPTIONS, "delete-file-threshold": (1, JAVA_INT_MAX),
    "use-starting-sequence-number": None, "remove-dangling-deletes": None}


# Not procedure options: the job writes them as the session's codec for the call (write_format).
WRITE_CODEC, WRITE_LEVEL = write_format.OPTION_CODEC, write_format.OPTION_LEVEL
MAX_COMPRESSION_LEVEL = write_format.MAX_LEVEL


MANIFESTS_FIRST = "manifests-first"  # false: the rewrite's commit rewrites them as they are


def pop_rewrite_options(options: dict[str, str]) -> dict[str, Any]:
    """The rewrite's own options (not the procedure's), removed from ``options``, checked:
    ``ProcedureCall`` fields."""
    first = parse_bool(MANIFESTS_FIRST, options.pop(MANIFESTS_FIRST, "true"))
    return {"write": pop_write_options(options), "manifests_first": first}


def pop_write_options(options: dict[str, str]) -> tuple[str | None, str | None]:
    """The policy's codec and level for a rewrite, removed from ``options``, checked."""
    codec, level = options.pop(WRITE_CODEC, None), options.pop(WRITE_LEVEL, None)
    if codec is not None and codec not in write_format.CODECS:
        raise SpecError(f"option {WRITE_CODEC!r}: expected one of "
                        f"{', '.join(write_format.CODECS)}, got {codec[:50]!r}")
    if level is not None:
        level = str(parse_int(WRITE_LEVEL, level, 0, MAX_COMPRESSION_LEVEL))
    return codec, level


def parse_options(action: str, options: Mapping[str, str],
                  allowed: Mapping[str, tuple[int, int] | None]) -> dict[str, str]:
    """The options map of a procedure: known names only, each value typed and in range,
    re-rendered from the parsed value."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise SpecError(f"{action}: unknown option(s) {unknown}; accepted: {sorted(allowed)}")
    out = {}
    for key, raw in options.items():
        bounds = allowed[key]
        if bounds is None:
            out[key] = "true" if parse_bool(key, raw) else "false"
        else:
            out[key] = str(parse_int(key, raw, *bounds))
    return out


def parse_timestamp(key: str, raw: str) -> datetime:
    """An ISO-8601 timestamp as an aware UTC datetime; one without an offset is taken as UTC."""
    try:
        parsed = datetime.fromisoformat(raw.strip())
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        raise SpecError(f"option {key!r}: expected an ISO-8601 timestamp such as "
                        f"2024-05-01T00:00:00Z, got {raw[:50]!r}") from None


def timestamp_literal(value: datetime) -> str:
    """A Spark ``TIMESTAMP`` literal with an explicit UTC offset (independent of session zone)."""
    return f"TIMESTAMP '{value.astimezone(UTC).isoformat(sep=' ', timespec='microseconds')}'"


def _column(key: str, raw: str) -> str:
    name = raw.strip()
    if not _COLUMN_RE.fullmatch(name):
        raise SpecError(f"option {key!r}: invalid column name {raw[:100]!r} (expected letters, "
                        "digits and _, dot-separated for nested fields)")
    return ".".join(quote_ident(part) for part in name.split("."))


def parse_sort_order(raw: str) -> str:
    """``"id DESC NULLS LAST, kind"`` → Iceberg's sort order string, every word validated."""
    terms = []
    for term in raw.split(","):
        words = term.split()
        if not words:
            raise SpecError(f"option 'sort-order': empty sort term in {raw[:200]!r}")
        out = [_column("sort-order", words[0])]
        rest = [w.upper() for w in words[1:]]
        if rest and rest[0] in _DIRECTIONS:
            out.append(rest.pop(0))
        if len(rest) == 2 and rest[0] == "NULLS" and rest[1] in _NULL_ORDERS:
            out += rest
            rest = []
        if rest:
            raise SpecError(f"option 'sort-order': bad sort term {term.strip()[:100]!r}; "
                            "expected 'column [ASC|DESC] [NULLS FIRST|NULLS LAST]'")
        terms.append(" ".join(out))
    return ", ".join(terms)


def parse_zorder(raw: str) -> str:
    columns = [_column("zorder-columns", c) for c in raw.split(",")]
    return f"zorder({', '.join(columns)})"


def _partitions(raw: str | None) -> tuple[Any, ...]:
    """The ``partitions`` option, parsed strictly (``partition_filter``); () when absent."""
    if raw is None:
        return ()
    try:
        return partition_filter.parse_partitions(raw)
    except partition_filter.PartitionFilterError as e:
        raise SpecError(str(e)) from None


def restrict(call: ProcedureCall, specs: Mapping[int, Any]) -> ProcedureCall:
    """The call limited to its partitions: a ``where`` of typed literals built from the
    table's own partition specs, or, when some partition's transform no filter can express,
    the whole table with at least two input files per group (a rewrite of one file merges
    nothing). The result shows the partitions and the filter used."""
    if not call.partitions:
        return call
    try:
        where = partition_filter.build_where(call.partitions, specs)
    except partition_filter.PartitionFilterError as e:
        raise SpecError(str(e)) from None
    info = {**call.info, "partitions": [[p.spec, list(p.values)] for p in call.partitions]}
    if where is None:
        least = max(2, int(call.options.get("min-input-files", "2")))
        return replace(call, options={**call.options, "min-input-files": str(least)},
                       info={**info, "partition_filter": "whole table (a partition no filter "
                                                         "can select)"})
    return replace(call, args=(*call.args, f"where => {sql_string(where)}"), where=where,
                   info={**info, "partition_filter": where})


def plan_compaction(spec: MaintenanceRequest) -> ProcedureCall:
    """Bin-pack small data files (``rewrite_data_files``, strategy binpack)."""
    options = dict(spec.options)
    partitions = _partitions(options.pop(partition_filter.PARAM, None))
    extras = pop_rewrite_options(options)
    options = parse_options(spec.action, options, DATA_REWRITE_OPTIONS)
    return ProcedureCall("rewrite_data_files", (_table_arg(spec), "strategy => 'binpack'"),
                         options=options, partitions=partitions, **extras)


def plan_clustering(spec: MaintenanceRequest) -> ProcedureCall:
    """Rewrite data files sorted (``sort-order``), Z-ordered (``zorder-columns``), or, with
    neither, by the table's own sort order.

    Every other option is a ``rewrite_data_files`` option (``rewrite-all``,
    ``target-file-size-bytes``, ...), checked against ``DATA_REWRITE_OPTIONS``.
    """
    options = dict(spec.options)
    sort_order, zorder = options.pop("sort-order", None), options.pop("zorder-columns", None)
    partitions = _partitions(options.pop(partition_filter.PARAM, None))
    extras = pop_rewrite_options(options)
    options = parse_options(spec.action, options, DATA_REWRITE_OPTIONS)
    if sort_order is not None and zorder is not None:
        raise SpecError("clustering takes one of the options 'sort-order' "
                        "(e.g. 'id DESC NULLS LAST, kind') or 'zorder-columns' (e.g. 'a,b')")
    args: tuple[str, ...] = (_table_arg(spec), "strategy => 'sort'")
    if sort_order is not None:
        args = (*args, f"sort_order => {sql_string(parse_sort_order(sort_order))}")
    elif zorder is not None:
        args = (*args, f"sort_order => {sql_string(parse_zorder(zorder))}")
    # neither: Iceberg sorts by the table's own sort order (TriggerOperation queued it only
    # when the table has one; Iceberg refuses an unsorted table by itself)
    return ProcedureCall("rewrite_data_files", args, options=options, partitions=partitions,
                         **extras)


def plan_expire_snapshots(spec: MaintenanceRequest) -> ProcedureCall:
    """Expire snapshots older than ``older-than`` (ISO-8601), keeping at least ``retain-last``.

    Without ``older-than`` Iceberg uses the table's ``history.expire.max-snapshot-age-ms``
    (default five days).
    """
    _only_options(spec, ("older-than", "retain-last"))
    args = [_table_arg(spec)]
    if "older-than" in spec.options:
        older_than = parse_timestamp("older-than", spec.options["older-than"])
        args.append(f"older_than => {timestamp_literal(older_than)}")
    if "retain-last" in spec.options:
        retain_last = parse_positive_int("retain-last", spec.options["retain-last"])
        args.append(f"retain_last => {retain_last}")
    return ProcedureCall("expire_snapshots", tuple(args))


def plan_remove_orphan_files(spec: MaintenanceRequest) -> ProcedureCall:
    """List files no snapshot references (the procedure always runs as a dry run); unless
    ``dry-run=true`` the job then deletes them itself, once each passed the location check
    (``table_guard.remove_orphans``).

    Only files last modified before ``older-than`` are candidates (Iceberg's default: three days
    ago); Iceberg refuses a value less than 24 hours ago.
    """
    _only_options(spec, ("older-than", "dry-run"))
    args = [_table_arg(spec)]
    if "older-than" in spec.options:
        older_than = parse_timestamp("older-than", spec.options["older-than"])
        if (datetime.now(UTC) - older_than).total_seconds() < MIN_ORPHAN_AGE_S:
            raise SpecError("option 'older-than': remove_orphan_files needs a time at least 24 "
                            "hours ago (newer files may belong to commits still in progress)")
        args.append(f"older_than => {timestamp_literal(older_than)}")
    dry_run = parse_bool("dry-run", spec.options.get("dry-run", "false"))
    args.append("dry_run => true")
    return ProcedureCall("remove_orphan_files", tuple(args), info={"dry_run": dry_run})


def plan_rewrite_manifests(spec: MaintenanceRequest) -> ProcedureCall:
    """Regroup manifests (``rewrite_manifests``); ``use-caching`` toggles Spark caching."""
    _only_options(spec, ("use-caching",))
    args = [_table_arg(spec)]
    if "use-caching" in spec.options:
        use_caching = parse_bool("use-caching", spec.options["use-caching"])
        args.append(f"use_caching => {'true' if use_caching else 'false'}")
    return ProcedureCall("rewrite_manifests", tuple(args))


def plan_rewrite_position_deletes(spec: MaintenanceRequest) -> ProcedureCall:
    """Compact position delete files, dropping dangling deletes (``rewrite_position_delete_files``).

    Options (``rewrite-all``, ...) are checked against ``REWRITE_OPTIONS``; ``partitions``
    restricts it like a compaction (Iceberg groups delete files by partition, and the
    procedure's ``where`` filters the partitions by the table's columns).
    """
    options = dict(spec.options)
    partitions = _partitions(options.pop(partition_filter.PARAM, None))
    extras = pop_rewrite_options(options)
    options = parse_options(spec.action, options, REWRITE_OPTIONS)
    return ProcedureCall("rewrite_position_delete_files", (_table_arg(spec),), options=options,
                         partitions=partitions, **extras)


Planner = Callable[[MaintenanceRequest], ProcedureCall]
ACTIONS: dict[str, Planner] = {
    "compaction": plan_compaction,
    "clustering": plan_clustering,
    "expire_snapshots": plan_expire_snapshots,
    "remove_orphan_files": plan_remove_orphan_files,
    "rewrite_manifests": plan_rewrite_manifests,
    "rewrite_position_deletes": plan_rewrite_position_deletes,
}


def parse_spec(data: Any) -> MaintenanceRequest:
    """The spec checked: its fields (``job_spec``), then its action's options, by building the
    action's plan before anything starts."""
    spec = parse_fields(data, ACTIONS)
    ACTIONS[spec.action](spec)
    return spec
