"""PySpark application that runs one Iceberg maintenance action and writes the outcome as JSON.

Actions (``ACTIONS``), each one Iceberg Spark procedure: ``compaction`` and ``clustering``
(``rewrite_data_files`` binpack / sort or zorder), ``expire_snapshots``, ``remove_orphan_files``,
``rewrite_manifests``, ``rewrite_position_deletes`` (``rewrite_position_delete_files``). The result
is the procedure's result columns. A compaction, clustering or position-delete rewrite may carry
a ``partitions`` option: the rewrite is then restricted by a ``where`` built from the table's
own partition specs (``partition_filter.py``), and the result names the partitions and the
filter.

spark-submit runs this file directly (``spark-submit ... iceberg_maintenance.py --spec-b64 B``),
so it imports nothing but pyspark and the standard library (grpcio too, to report): it must
also work when shipped alone to a cluster, where the driver may run on any node (deploy mode
``cluster``). The spec therefore travels inline and carries secret *references*
(``catalog_secrets``) that the job resolves in the driver (``secret_refs.py``); the result goes
to the TMS API (``report.py``, the attempt's token in ``TMS_JOB_TOKEN``), or to ``--result``
when the spec names no API (local runs and tests). The spec names the catalog exactly as the
TMS side (pyiceberg) names it, because Iceberg's JDBC catalog keys its rows by catalog name: a
different name would see no tables.

Table names and options come from users, so they reach SQL only as validated identifiers or
escaped string literals. The result is always reported, success or not, so the caller never
has to scrape Spark's log output; exit status is 0 on success and 1 on failure. A failure says
whether another attempt could help (``retryable``: false for a bad spec, a missing table, a
missing class, a bad catalog configuration, a permission refusal, a table writer property out
of range: ``errors.py``, ``table_props.py``) and gives a hint of what to fix.

Before any action the table's real location, read from its metadata, is checked against the
spec's ``allowed_locations`` (``table_guard.py``); ``remove_orphan_files`` deletes only
candidates it checked, and a rewrite reads only files of the current snapshot that passed the
same check (``READS``, ``guard_reads``). The catalog's properties, credentials included,
reach Spark only as runtime conf set here: never on a command line.

The warm driver (``warm_driver.py``) runs the same specs through ``run_in_session`` in one
long-lived session. Sibling modules (``locations``, ``errors``, ``table_guard``) come from the
``tms.jobs`` package when installed, else from this file's directory (spark-submit ships them
with ``--py-files``).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import os
import re
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

try:
    from tms.jobs import (
        arrow_rewrite,
        errors,
        manifest_prep,
        outcome,
        partition_filter,
        read_guard,
        report,
        secret_refs,
        spark_catalogs,
        table_guard,
        table_props,
        write_format,
    )
    from tms.jobs.locations import LocationError, parse
except ImportError:  # shipped alone: the siblings are next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import arrow_rewrite  # type: ignore[no-redef]
    import errors  # type: ignore[no-redef]
    import manifest_prep  # type: ignore[no-redef]
    import outcome  # type: ignore[no-redef]
    import partition_filter  # type: ignore[no-redef]
    import read_guard  # type: ignore[no-redef]
    import report  # type: ignore[no-redef]
    import secret_refs  # type: ignore[no-redef]
    import spark_catalogs  # type: ignore[no-redef]
    import table_guard  # type: ignore[no-redef]
    import table_props  # type: ignore[no-redef]
    import write_format  # type: ignore[no-redef]
    from locations import LocationError, parse  # type: ignore[no-redef]

MAX_ERROR_CHARS = 4000
STALE_PLAN_RETRIES = 3  # a manifest rewrite planned again after concurrent commits
T = TypeVar("T")
SPARK_CATALOG_CLASS = spark_catalogs.SPARK_CATALOG_CLASS
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
JDBC_CATALOG_IMPL = spark_catalogs.JDBC_CATALOG_IMPL

_CATALOG_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_IDENT_PART_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-]{0,254}$")
_OPTION_KEY_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")
# Spark error classes that mean "the table is not there": no retry helps.
NOT_FOUND_ERROR_CLASSES = frozenset({"TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND"})
MAX_ALLOWED_LOCATIONS = 100
_SECRET_KEY_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}$")  # a property's name
MAX_SPEC_BYTES = 64 * 1024  # an inline spec is one argument: Linux allows 128 KiB
MAX_CAUSES = 8  # of a JVM exception, read for classification
DATA_PATHS = ("auto", "spark")  # a compaction's data path (arrow_rewrite)


class SpecError(ValueError):
    """The job spec is malformed or unsafe; nothing was run."""


@dataclass(frozen=True)
class MaintenanceRequest:
    """A validated spec inside the job: the engine's ``JobSpec.spec`` (plain JSON from TMS)
    after ``parse_spec`` checked every name and option, so only this reaches SQL."""

    catalog_name: str
    catalog_properties: dict[str, str]
    table: tuple[str, ...]  # namespace parts + table name
    action: str
    options: dict[str, str] = field(default_factory=dict)
    # None: the spec predates allowed locations and the job checks only what it can alone
    allowed_locations: tuple[str, ...] | None = None
    # property -> secret reference (env:TMS_SECRET_* / file:<name>), resolved in the driver
    catalog_secrets: dict[str, str] = field(default_factory=dict)
    report: dict[str, Any] | None = None  # where to report the result (else a result file)
    # the operator's choice of a compaction's data path: "auto" (arrow when eligible) or
    # "spark" (always Spark's); an executor or bench setting, never a table owner's option
    data_path: str = "auto"

    def resolved_properties(self) -> dict[str, str]:
        """The catalog's properties with its secrets resolved here, in the driver (the spec
        itself carries references only: it travels on a command line)."""
        return {**self.catalog_properties, **secret_refs.resolve_all(self.catalog_secrets)}

    @property
    def table_ref(self) -> str:
        """The table as a Spark multipart identifier inside this job's catalog."""
        return ".".join(quote_ident(p) for p in self.table)

    @property
    def qualified_table(self) -> str:
        return f"{quote_ident(self.catalog_name)}.{self.table_ref}"


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_string(value: str) -> str:
    """A Spark SQL string literal for ``value``.

    Spark's parser treats backslash as an escape and reads ``'a''b'`` as two adjacent literals
    (concatenated to ``ab``), so SQL-standard quote doubling would silently drop quotes; escaping
    backslashes and quotes with a backslash is what round-trips. The session pins
    ``spark.sql.parser.escapedStringLiterals=false`` so this stays true.
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _option_value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise SpecError(f"option {key!r}: expected a string or number, got {type(value).__name__}")


def parse_table(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, str):
        raise SpecError("table must be a string 'namespace.name'")
    parts = tuple(raw.split("."))
    if len(parts) < 2 or not all(_IDENT_PART_RE.fullmatch(p) for p in parts):
        raise SpecError(f"invalid table identifier {raw[:200]!r}: expected namespace.name")
    return parts


def parse_allowed_locations(raw: Any) -> tuple[str, ...] | None:
    """The spec's ``allowed_locations``: absent means no check (older producers); present, a
    list of locations the normaliser accepts (an empty list allows nothing)."""
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) > MAX_ALLOWED_LOCATIONS:
        raise SpecError(f"allowed_locations must be a list of at most {MAX_ALLOWED_LOCATIONS} "
                        "locations")
    for item in raw:
        if not isinstance(item, str):
            raise SpecError("allowed_locations must hold strings")
        try:
            parse(item)
        except LocationError as e:
            raise SpecError(f"allowed_locations: {e}") from None
    return tuple(raw)


def parse_data_path(raw: Any) -> str:
    if raw is None:
        return "auto"
    if raw not in DATA_PATHS:
        raise SpecError(f"{arrow_rewrite.SPEC_SWITCH} must be one of {', '.join(DATA_PATHS)}")
    return str(raw)


def parse_spec(data: Any) -> MaintenanceRequest:
    if not isinstance(data, dict):
        raise SpecError("spec must be a JSON object")
    catalog_name = data.get("catalog_name")
    if not isinstance(catalog_name, str) or not _CATALOG_NAME_RE.fullmatch(catalog_name):
        raise SpecError(f"invalid catalog_name {catalog_name!r}")
    props = data.get("catalog_properties", {})
    if not isinstance(props, dict):
        raise SpecError("catalog_properties must be an object")
    action = data.get("action")
    if not isinstance(action, str) or action not in ACTIONS:
        raise SpecError(f"unknown action {action!r}; known: {sorted(ACTIONS)}")
    options = data.get("options") or {}
    if not isinstance(options, dict):
        raise SpecError("options must be an object")
    for key in options:
        if not _OPTION_KEY_RE.fullmatch(key):
            raise SpecError(f"invalid option name {key[:200]!r}")
    secrets = data.get("catalog_secrets") or {}
    if not isinstance(secrets, dict):
        raise SpecError("catalog_secrets must be an object")
    for key, ref in secrets.items():
        if not _SECRET_KEY_RE.fullmatch(str(key)) or not isinstance(ref, str):
            raise SpecError(f"invalid catalog_secrets entry {str(key)[:200]!r}")
        try:
            secret_refs.parse_ref(ref)
        except secret_refs.SecretError as e:
            raise SpecError(f"catalog_secrets[{key}]: {e}") from None
    try:
        report_to = report.parse_report(data.get("report"))
    except ValueError as e:
        raise SpecError(str(e)) from None
    spec = MaintenanceRequest(
        catalog_name=catalog_name,
        catalog_properties={str(k): _option_value(str(k), v) for k, v in props.items()},
        table=parse_table(data.get("table")),
        action=action,
        options={k: _option_value(k, v) for k, v in options.items()},
        allowed_locations=parse_allowed_locations(data.get("allowed_locations")),
        catalog_secrets=dict(secrets),
        report=report_to,
        data_path=parse_data_path(data.get(arrow_rewrite.SPEC_SWITCH)),
    )
    ACTIONS[action](spec)  # validates the action's options before anything starts
    return spec


def catalog_conf(name: str, props: Mapping[str, str]) -> dict[str, str]:
    """Spark conf registering catalog ``name`` with the spec's (pyiceberg-style) catalog
    properties: Iceberg's catalog properties for its type and the storage's Hadoop conf, per
    catalog (``spark_catalogs``)."""
    try:
        return spark_catalogs.catalog_conf(name, props)
    except spark_catalogs.CatalogConfError as e:
        raise SpecError(str(e)) from None


def session_hadoop_conf(props: Mapping[str, str]) -> dict[str, str]:
    """The catalog's Hadoop conf for the whole session (``spark.hadoop.*``), set by the
    one-shot job, which serves one catalog: what Spark itself lists or opens outside the
    catalog's FileIO (``remove_orphan_files`` lists the table's directory) reaches the same
    store with the same keys. The warm driver, serving many catalogs, keeps them per catalog."""
    try:
        return {f"spark.hadoop.{k}": v for k, v in spark_catalogs.hadoop_conf(props).items()}
    except spark_catalogs.CatalogConfError as e:
        raise SpecError(str(e)) from None


def _row_dict(row: Any) -> dict[str, Any]:
    return dict(row.asDict(recursive=True))


# --- actions -----------------------------------------------------------------------------------
#
# Each action turns the spec's options into one ``CALL <catalog>.system.<procedure>(...)``. The
# plan is built (and every option validated) in ``parse_spec``, before Spark starts, so a bad spec
# fails in milliseconds with a clear message instead of after a cold Spark start. Argument values
# reach SQL only as escaped string literals, validated integers/booleans, or timestamps re-rendered
# from a parsed ``datetime``.

_COLUMN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}(\.[A-Za-z_][A-Za-z0-9_]{0,254})*$")
_UNSIGNED_RE = re.compile(r"0|[1-9][0-9]{0,18}")
_DIRECTIONS = ("ASC", "DESC")
_NULL_ORDERS = ("FIRST", "LAST")
MAX_INT = 2**31 - 1
# remove_orphan_files refuses an older_than less than 24 h ago (concurrent writers' files may
# not be committed yet); checked here too so the job fails before Spark starts.
MIN_ORPHAN_AGE_S = 24 * 3600


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
    return parse_int(key, raw, 1, MAX_INT)


# The options of the procedures that take an options map, with their ranges (None: a boolean).
# Kept in step with the API's schema (tms.formats.iceberg_params) by a unit test; repeated
# here because this file ships alone and must refuse a bad spec whoever wrote it.
KIB = 1024
GIB = 1024 ** 3
MAX_FILE_BYTES = 16 * GIB
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
    **REWRITE_OPTIONS, "delete-file-threshold": (1, MAX_INT),
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
    """Rewrite data files sorted (``sort-order``) or Z-ordered (``zorder-columns``).

    Every other option is a ``rewrite_data_files`` option (``rewrite-all``,
    ``target-file-size-bytes``, ...), checked against ``DATA_REWRITE_OPTIONS``.
    """
    options = dict(spec.options)
    sort_order, zorder = options.pop("sort-order", None), options.pop("zorder-columns", None)
    partitions = _partitions(options.pop(partition_filter.PARAM, None))
    extras = pop_rewrite_options(options)
    options = parse_options(spec.action, options, DATA_REWRITE_OPTIONS)
    if sort_order is not None and zorder is None:
        order = parse_sort_order(sort_order)
    elif zorder is not None and sort_order is None:
        order = parse_zorder(zorder)
    else:
        raise SpecError("clustering needs exactly one of the options 'sort-order' "
                        "(e.g. 'id DESC NULLS LAST, kind') or 'zorder-columns' (e.g. 'a,b')")
    args = (_table_arg(spec), "strategy => 'sort'", f"sort_order => {sql_string(order)}")
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


def replanning(spark: Any, spec: MaintenanceRequest, work: Callable[[], T]) -> tuple[T, int]:
    """``work()``, planned again from the table's new snapshot (at most
    ``STALE_PLAN_RETRIES`` times) when a concurrent commit made its manifest rewrite stale
    (``errors.stale_manifests``): a conflict with a writer, resolved in the job, not an
    attempt of the operation spent. Returns the result and how many times it was planned
    again; any other error, or the last stale one, is raised."""
    for replanned in range(STALE_PLAN_RETRIES + 1):
        try:
            return work(), replanned
        except Exception as exc:
            error_type, message = describe_error(exc)
            text = "\n".join([f"{error_type}: {message}", *java_causes(exc)])
            if replanned == STALE_PLAN_RETRIES or not errors.stale_manifests(text):
                raise
            print(f"[tms-job] a concurrent commit replaced manifests this rewrite planned to "
                  f"replace; planning again ({replanned + 1}/{STALE_PLAN_RETRIES})",
                  file=sys.stderr)
            spark.sql(f"REFRESH TABLE {spec.qualified_table}")
    raise AssertionError("unreachable")  # the loop returns or raises


# What a rewrite reads from the current snapshot besides its manifests: the metadata tables
# ``read_guard.check_current_files`` scans. A compaction's data files are its planned inputs,
# checked whatever path runs (``arrow_rewrite.check_inputs``); its delete files are read on
# Spark's path only, checked there (``spark_path_reads``).
READS: dict[str, tuple[tuple[str, str], ...]] = {
    "compaction": (),
    "clustering": read_guard.CURRENT_FILES,
    "rewrite_position_deletes": read_guard.CURRENT_FILES,
    "rewrite_manifests": read_guard.CURRENT_FILES,
}


def guard_reads(spark: Any, spec: MaintenanceRequest, table: table_guard.CheckedTable,
                tables: tuple[tuple[str, str], ...], refresh: bool = False) -> str | None:
    """The current snapshot's files the action reads checked against the spec's allowed
    locations (``read_guard.check_current_files``; nothing without them); the snapshot id.
    ``refresh``: the table was refreshed for a new plan, the handle is loaded again first."""
    if spec.allowed_locations is None:
        return None
    if refresh:
        table.handle.refresh()
    return read_guard.check_current_files(spark, spec.qualified_table, table.handle,
                                           spec.allowed_locations, spec.action, tables)


def spark_path_reads(tried: arrow_rewrite.Attempt) -> tuple[tuple[str, str], ...]:
    """What a compaction on Spark's path reads that no check saw: the delete files it applies,
    and the data files too when the arrow attempt stopped before checking its inputs."""
    return read_guard.CURRENT_DELETE_FILES if tried.inputs_checked else \
        read_guard.CURRENT_FILES


def run_action(spark: Any, spec: MaintenanceRequest, table: table_guard.CheckedTable
               ) -> dict[str, Any]:
    """Run the spec's procedure on the checked table; returns its result columns (plus the
    call's own info)."""
    call = ACTIONS[spec.action](spec)
    if call.partitions:
        call = restrict(call, partition_filter.specs_of(table.handle))
    if call.write is not None:
        return run_rewrite(spark, spec, table, call)

    planned: list[str | None] = []

    def once() -> dict[str, Any]:
        if spec.action in READS:  # rewrite_manifests: the snapshot planned (again) is checked
            planned.append(guard_reads(spark, spec, table, READS[spec.action],
                                       refresh=bool(planned)))
        df = spark.sql(call.sql(spec.catalog_name))
        if spec.action == "remove_orphan_files":
            return table_guard.remove_orphans(df, table, dry_run=bool(call.info["dry_run"]))
        return call.summarize(df)

    result, replanned = replanning(spark, spec, once)
    if replanned:
        result["replanned_after_conflict"] = replanned
    return {**result, **call.info}


def run_rewrite(spark: Any, spec: MaintenanceRequest, table: table_guard.CheckedTable,
                call: ProcedureCall) -> dict[str, Any]:
    """A rewrite written with the table's own codec (``write_format``): the session's codec
    set for this call only; the result says what was chosen, why, and what a file the
    rewrite added really holds (``write_format.written_codec``). Many small manifests are
    merged first, so the rewrite's commit does not rewrite each of them (``manifest_prep``)."""
    assert call.write is not None
    deletes = spec.action == "rewrite_position_deletes"
    checked = guard_reads(spark, spec, table, READS[spec.action])  # before manifests merge
    fmt = write_format.plan(table.handle, *call.write, deletes=deletes)
    # the owner's writer properties, before anything is written (manifests included)
    table_props.check({str(k): str(v) for k, v in table.handle.properties().items()},
                      fmt.codec, deletes)
    table_props.check_level(fmt.codec, fmt.level)  # the policy's level for the codec chosen
    manifests, _ = replanning(spark, spec, lambda: manifest_prep.consolidate(
        spark, _table_arg(spec), quote_ident(spec.catalog_name), table.handle,
        enabled=call.manifests_first))
    before = outcome.current_snapshot(table.handle)
    if before != checked:  # manifests merged (or a writer's commit): the new snapshot too
        guard_reads(spark, spec, table, READS[spec.action])
    path: dict[str, Any] = {}
    result = None
    if spec.action == "compaction":  # bin-pack: pyarrow in Spark tasks when eligible
        tried = arrow_rewrite.attempt(spark, table.handle, spec.qualified_table, call.options,
                                      call.where, fmt.codec, fmt.level,
                                      spec.allowed_locations, spec.data_path,
                                      spec.resolved_properties())
        result = tried.result
        path = {"data_path": "arrow"} if result is not None else {
            "data_path": "spark", "arrow_refused": tried.refused}
        if result is None:
            guard_reads(spark, spec, table, spark_path_reads(tried))
    if result is None:
        with write_format.session_conf(spark, fmt.session):
            result = call.summarize(spark.sql(call.sql(spec.catalog_name)))
    info = fmt.info()
    table.handle.refresh()
    if outcome.current_snapshot(table.handle) != before:
        info["codec_written"] = write_format.written_codec(table.handle, deletes)
    return {**result, **call.info, **path, "write_format": info,
            "manifests_first": manifests}


def session_builder(app_name: str) -> Any:
    """A SparkSession builder with Iceberg's SQL extensions and the string-literal mode that
    ``sql_string`` relies on; shared by the one-shot job and the warm driver."""
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.appName(app_name)
        .config("spark.sql.extensions", ICEBERG_EXTENSIONS)
        .config("spark.sql.parser.escapedStringLiterals", "false")
    )


def build_session(spec: MaintenanceRequest) -> Any:
    builder = session_builder(f"tms-{spec.action}-{'.'.join(spec.table)}")
    props = spec.resolved_properties()  # references resolved here, in the driver
    conf = {**session_hadoop_conf(props), **catalog_conf(spec.catalog_name, props)}
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def run_in_session(spark: Any, spec: MaintenanceRequest) -> dict[str, Any]:
    """Run one spec in a session whose catalog is already registered; the success payload.

    ``REFRESH TABLE`` first: the catalog caches loaded tables, and a session that outlives one
    operation (the warm driver) would otherwise plan against a snapshot writers have moved past.
    Then the table's real locations are checked, before any action touches its files.
    """
    spark.sql(f"REFRESH TABLE {spec.qualified_table}")
    table = table_guard.check_table(spark, spec.qualified_table, spec.allowed_locations)
    if spec.action == "expire_snapshots" and spec.allowed_locations is not None:
        read_guard.check_referenced_files(spark, spec.qualified_table, spec.allowed_locations)
    before = outcome.current_snapshot(table.handle)
    result = run_action(spark, spec, table)
    try:  # what it did, in one shape for every action (the scheduler's no-op hold reads it)
        result["outcome"] = outcome.measure(table.handle, spec.action, result, before)
        if "write_format" in result:  # which codec the rewrite wrote
            result["outcome"]["codec_written"] = result["write_format"].get("codec_written")
    except Exception as e:  # the work is done: a failed reading must not fail it
        print(f"[tms-job] outcome not measured: {type(e).__name__}: {e}", file=sys.stderr)
    return {"ok": True, "action": spec.action, "result": result,
            "spark_app_id": spark.sparkContext.applicationId}


def run(spec: MaintenanceRequest) -> dict[str, Any]:
    spark = build_session(spec)
    try:
        return run_in_session(spark, spec)
    finally:
        spark.stop()


def describe_error(exc: BaseException) -> tuple[str, str]:
    """(type, message) for the result file, preferring the JVM exception behind a Py4J error."""
    java_exc = getattr(exc, "java_exception", None)
    if java_exc is not None:
        try:
            return str(java_exc.getClass().getName()), str(java_exc.toString())
        except Exception:  # the JVM may already be gone
            pass
    message = str(exc) or traceback.format_exception_only(type(exc), exc)[-1].strip()
    return type(exc).__name__, message


def java_causes(exc: BaseException) -> list[str]:
    """The causes of the JVM exception behind a Py4J error (a missing class is often two
    levels down), for classification."""
    out: list[str] = []
    java_exc = getattr(exc, "java_exception", None)
    try:
        cause = java_exc.getCause() if java_exc is not None else None
        while cause is not None and len(out) < MAX_CAUSES:
            out.append(str(cause.toString()))
            cause = cause.getCause()
    except Exception:  # the JVM may already be gone
        pass
    return out


def error_class(exc: BaseException, error_type: str, message: str) -> errors.ErrorClass:
    """What kind of failure this is: refused specs and locations, missing tables, classes,
    permissions and bad catalog configurations cannot pass on another attempt; everything
    else (lost executors, commit conflicts, an unreachable catalog) may."""
    if isinstance(exc, SpecError):
        return errors.ErrorClass(errors.INVALID_SPEC)
    if isinstance(exc, table_guard.LocationRefused):
        return errors.ErrorClass(errors.LOCATION_REFUSED)
    if isinstance(exc, table_props.PropertyRefused):
        return errors.ErrorClass(errors.INVALID_TABLE_PROPERTY)
    if isinstance(exc, secret_refs.SecretError):
        return errors.ErrorClass(errors.SECRET_UNAVAILABLE)
    get_error_class = getattr(exc, "getErrorClass", None)
    if callable(get_error_class):
        try:
            if get_error_class() in NOT_FOUND_ERROR_CLASSES:
                return errors.ErrorClass(errors.NOT_FOUND)
        except Exception:  # the JVM may already be gone
            pass
    return errors.classify("\n".join([f"{error_type}: {message}", *java_causes(exc)]))


def is_retryable(exc: BaseException, error_type: str, message: str) -> bool:
    return error_class(exc, error_type, message).retryable


def failure_payload(exc: BaseException) -> dict[str, Any]:
    """The result file's content for a failed run; ``hint`` says what kind of error it is and
    what to fix (absent for errors another attempt may fix)."""
    error_type, message = describe_error(exc)
    kind = error_class(exc, error_type, message)
    payload = {"ok": False, "error_type": error_type, "error": message[:MAX_ERROR_CHARS],
               "retryable": kind.retryable}
    if kind.kind is not None:
        payload["error_class"] = kind.kind
        payload["hint"] = kind.hint
    return payload


def write_result(path: Path, payload: dict[str, Any]) -> None:
    """Write atomically so a reader never sees half a result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(payload, f, default=str)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def read_spec(args: argparse.Namespace) -> Any:
    """The spec from ``--spec-b64`` (inline: no file on the executor's disk, so the driver may
    run anywhere) or ``--spec`` (a file, for local runs and tests)."""
    if args.spec_b64 is not None:
        raw = args.spec_b64.encode()
        if len(raw) > MAX_SPEC_BYTES * 2:
            raise SpecError(f"the inline spec is larger than {MAX_SPEC_BYTES} bytes")
        try:
            return json.loads(base64.b64decode(raw, validate=True))
        except (ValueError, binascii.Error) as e:
            raise SpecError(f"--spec-b64 is not base64 of a JSON object: {e}") from None
    return json.loads(args.spec.read_text())


def report_of(raw: Any) -> dict[str, Any] | None:
    """The spec's report target even when the rest of the spec is refused, so a bad spec is
    reported like any other failure; None when absent or itself malformed."""
    try:
        return report.parse_report(raw.get("report")) if isinstance(raw, dict) else None
    except ValueError:
        return None


def deliver(report_to: dict[str, Any] | None, payload: dict[str, Any],
            result_path: Path | None) -> bool:
    """Report through the API when the spec says where, else write the result file. False
    when the result could not be delivered (the log then says why)."""
    if report_to is not None:
        try:
            return report.send(report_to, payload)
        except (report.ReportError, OSError) as e:
            print(f"[tms-job] ReportError: {e}", file=sys.stderr)
            return False
    if result_path is None:
        print("[tms-job] ReportError: no --result file and no report target: the job "
              "cannot report its result", file=sys.stderr)
        return False
    write_result(result_path, payload)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run one Iceberg maintenance action.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--spec", type=Path, help="job spec JSON file")
    source.add_argument("--spec-b64", help="job spec JSON, base64 (references, no secrets)")
    parser.add_argument("--result", type=Path,
                        help="where to write result JSON when the spec has no report target")
    args = parser.parse_args(argv)
    report_to = None
    try:
        raw = read_spec(args)
        report_to = report_of(raw)
        payload = run(parse_spec(raw))
    except Exception as exc:
        payload = failure_payload(exc)
        print(f"[tms-job] {payload['error_type']}: {payload['error']}", file=sys.stderr)
    if not deliver(report_to, payload, args.result):
        return 1
    return 0 if payload["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
