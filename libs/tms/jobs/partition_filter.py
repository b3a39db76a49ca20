"""The ``partitions`` parameter of a compaction or clustering: which partitions the rewrite may
touch, and the ``where`` filter the job gives ``rewrite_data_files`` for them.

The parameter is compact JSON, ``[[spec id, [value, ...]], ...]``: one entry per partition, its
values in the order of that spec's fields, in Iceberg's own representation (a ``day`` value is
days since 1970-01-01, ``month`` months, ``year`` years, ``hour`` hours; an identity ``date``
days). A table owner can give it through TriggerOperation, so it is parsed strictly here, by the
API (params validation) and again by the job: JSON scalars of bounded size only, integers in
range, no floats, no control characters. The job takes each field's column, transform and type
from the table's own metadata, never from the parameter, and renders every value as a typed
literal (string values through ``string_literal``); a spec id the table does not have is
refused. A partition of a transform no filter can select exactly (bucket, truncate, ...) makes
the job rewrite the whole table instead, with at least two input files per group.

Standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

PARAM = "partitions"
MAX_PARTITIONS = 100
MAX_PARTITIONS_CHARS = 1000  # what the API accepts for a text parameter (tms.strict)
MAX_FIELDS = 32
MAX_VALUE_CHARS = 200
MAX_SPEC_ID = 2**31 - 1
MIN_LONG, MAX_LONG = -(2**63), 2**63 - 1
RANGE_TRANSFORMS = ("year", "month", "day", "hour")
IDENTITY_TYPES = ("string", "int", "long", "boolean", "date")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Scalar = int | str | bool | None


class PartitionFilterError(ValueError):
    """The parameter is malformed, or names what the table does not have."""


@dataclass(frozen=True)
class PartitionRef:
    spec: int
    values: tuple[Scalar, ...]


@dataclass(frozen=True)
class FieldInfo:
    """One partition field as the table's metadata describes it."""

    column: str  # the source column's full name (dotted for nested fields)
    transform: str  # identity, day, bucket[16], ...
    type: str  # the source column's Iceberg type: string, long, date, timestamptz, ...


def _reject_constant(name: str) -> Any:
    raise PartitionFilterError(f"{PARAM}: {name} is not allowed")


def _reject_float(raw: str) -> Any:
    raise PartitionFilterError(f"{PARAM}: decimal numbers are not allowed, got {raw[:40]!r}")


def _value(raw: Any) -> Scalar:
    if raw is None or isinstance(raw, bool):
        return raw
    if isinstance(raw, int):
        if not MIN_LONG <= raw <= MAX_LONG:
            raise PartitionFilterError(f"{PARAM}: integer out of range")
        return raw
    if isinstance(raw, str):
        if len(raw) > MAX_VALUE_CHARS:
            raise PartitionFilterError(f"{PARAM}: a value is longer than {MAX_VALUE_CHARS} "
                                       "characters")
        if _CONTROL.search(raw):
            raise PartitionFilterError(f"{PARAM}: control characters are not allowed")
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError:
            raise PartitionFilterError(f"{PARAM}: not valid unicode text") from None
        return raw
    raise PartitionFilterError(f"{PARAM}: a value must be a string, integer, boolean or null")


def parse_partitions(raw: str) -> tuple[PartitionRef, ...]:
    """The parameter's partitions; PartitionFilterError says what is wrong."""
    if not isinstance(raw, str) or len(raw) > MAX_PARTITIONS_CHARS:
        raise PartitionFilterError(f"{PARAM}: at most {MAX_PARTITIONS_CHARS} characters of JSON")
    try:
        data = json.loads(raw, parse_float=_reject_float, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:
        if isinstance(e, PartitionFilterError):
            raise
        raise PartitionFilterError(f"{PARAM}: not JSON: {str(e)[:100]}") from None
    if not isinstance(data, list) or not 1 <= len(data) <= MAX_PARTITIONS:
        raise PartitionFilterError(f"{PARAM}: a JSON list of 1 to {MAX_PARTITIONS} "
                                   "[spec id, [values]] pairs")
    out: list[PartitionRef] = []
    for item in data:
        if (not isinstance(item, list) or len(item) != 2 or isinstance(item[0], bool)
                or not isinstance(item[0], int) or not isinstance(item[1], list)):
            raise PartitionFilterError(f"{PARAM}: each partition is [spec id, [values]]")
        if not 0 <= item[0] <= MAX_SPEC_ID or len(item[1]) > MAX_FIELDS:
            raise PartitionFilterError(f"{PARAM}: spec id out of range or too many values")
        ref = PartitionRef(item[0], tuple(_value(v) for v in item[1]))
        if ref in out:
            raise PartitionFilterError(f"{PARAM}: a partition is listed twice")
        out.append(ref)
    return tuple(out)


def encode_partitions(refs: Sequence[PartitionRef]) -> str:
    """The parameter's text (compact JSON, ASCII)."""
    return json.dumps([[r.spec, list(r.values)] for r in refs], separators=(",", ":"))


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def string_literal(value: str) -> str:
    """A Spark SQL string literal (backslash escapes, as ``job_spec.sql_string``)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _column(name: str) -> str:
    return ".".join(quote_ident(p) for p in name.split("."))


def _int(value: Scalar, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PartitionFilterError(f"{PARAM}: {what} needs an integer value")
    return value


def _bounds(transform: str, n: int) -> tuple[datetime, datetime]:
    """[start, end) in UTC of the ``transform`` value ``n``."""
    try:
        if transform == "year":
            return datetime(1970 + n, 1, 1, tzinfo=UTC), datetime(1971 + n, 1, 1, tzinfo=UTC)
        if transform == "month":
            y, m = divmod(n, 12)
            ny, nm = divmod(n + 1, 12)
            return (datetime(1970 + y, m + 1, 1, tzinfo=UTC),
                    datetime(1970 + ny, nm + 1, 1, tzinfo=UTC))
        step = timedelta(days=1) if transform == "day" else timedelta(hours=1)
        return _EPOCH + n * step, _EPOCH + (n + 1) * step
    except (ValueError, OverflowError):
        raise PartitionFilterError(f"{PARAM}: {transform} value {n} is out of range") from None


def _time_literal(t: datetime, kind: str) -> str:
    if kind == "date":
        return f"DATE '{t.date().isoformat()}'"
    if kind == "timestamptz":
        return f"TIMESTAMP '{t.strftime('%Y-%m-%d %H:%M:%S')}+00:00'"
    return f"TIMESTAMP_NTZ '{t.strftime('%Y-%m-%d %H:%M:%S')}'"


def predicate(f: FieldInfo, value: Scalar) -> str | None:
    """The predicate selecting ``value`` of field ``f``; None when no filter expresses it."""
    col = _column(f.column)
    if f.transform == "identity" and f.type in IDENTITY_TYPES:
        if value is None:
            return f"{col} IS NULL"
        if f.type == "string":
            if not isinstance(value, str):
                raise PartitionFilterError(f"{PARAM}: {f.column} needs a string value")
            return f"{col} = {string_literal(value)}"
        if f.type == "boolean":
            if not isinstance(value, bool):
                raise PartitionFilterError(f"{PARAM}: {f.column} needs a boolean value")
            return f"{col} = {'true' if value else 'false'}"
        n = _int(value, f.column)
        if f.type == "date":
            start, _ = _bounds("day", n)
            return f"{col} = {_time_literal(start, 'date')}"
        return f"{col} = {n}"
    time_types = ("date",) if f.transform != "hour" else ()
    if f.transform in RANGE_TRANSFORMS and f.type in (*time_types, "timestamptz", "timestamp"):
        if value is None:
            return f"{col} IS NULL"
        start, end = _bounds(f.transform, _int(value, f.column))
        return (f"({col} >= {_time_literal(start, f.type)} AND "
                f"{col} < {_time_literal(end, f.type)})")
    return None


def build_where(refs: Sequence[PartitionRef], specs: Mapping[int, Sequence[FieldInfo]]
                ) -> str | None:
    """The ``where`` selecting exactly ``refs``; None when some partition cannot be selected
    by a filter (the caller rewrites the whole table). Unknown spec ids and values that do not
    fit their fields raise PartitionFilterError."""
    terms: list[str] = []
    exact = True
    for ref in refs:
        fields = specs.get(ref.spec)
        if fields is None:
            raise PartitionFilterError(f"{PARAM}: the table has no partition spec {ref.spec}")
        if len(fields) != len(ref.values):
            raise PartitionFilterError(f"{PARAM}: spec {ref.spec} has {len(fields)} fields, "
                                       f"got {len(ref.values)} values")
        preds = [predicate(f, v) for f, v in zip(fields, ref.values, strict=True)]
        if not preds or any(p is None for p in preds):
            exact = False  # unpartitioned, or a transform a filter cannot express
            continue
        terms.append("(" + " AND ".join(p for p in preds if p) + ")")
    return " OR ".join(terms) if exact and terms else None


def specs_of(table: Any) -> dict[int, list[FieldInfo]]:
    """Every partition spec of an Iceberg ``Table`` (a Py4J object) as ``FieldInfo`` rows."""
    schema = table.schema()
    out: dict[int, list[FieldInfo]] = {}
    for spec_id, spec in dict(table.specs()).items():
        rows = []
        for f in spec.fields():
            source = f.sourceId()
            name = schema.findColumnName(source)
            kind = schema.findType(source)
            rows.append(FieldInfo(str(name) if name is not None else f"#{source}",
                                  str(f.transform().toString()),
                                  str(kind.toString()) if kind is not None else "unknown"))
        out[int(spec_id)] = rows
    return out


def days_of(d: date) -> int:
    """Days since 1970-01-01 (Iceberg's ``day`` / ``date`` value)."""
    return (d - _EPOCH.date()).days
