"""The table properties Iceberg itself reads while a maintenance action runs (commit retries,
manifest merging, snapshot expiry, metadata log, Spark's read and write conf), parsed strictly
before the action touches anything: a table owner sets them, so any value may arrive.

``table_props`` covers the writer's properties (``write.parquet.*`` sizes, target sizes,
levels); this module covers the rest, per action (``maintenance_keys``). Iceberg parses them
with ``Integer.parseInt`` / ``Long.parseLong`` (a sign, leading zeros and non-ASCII digits
pass), ``Boolean.parseBoolean`` (``"true"`` in any case is true, *anything else* silently
false: ``gc.enabled=yes`` disables expiry without a word), ``Enum.valueOf(name.toUpperCase())``
or ``equalsIgnoreCase`` (so Java takes ``"gzıp"`` for ``GZIP``: the dotless i upper-cases to
``I``; and ``"haſh"`` for ``hash``), and a bad metrics mode is ignored with a warning. Here an
integer is ASCII digits within a range that bounds what the table can make a job do
(``table_props.parse_int``), a boolean ASCII ``true``/``false`` in any case (what Iceberg reads
as such), an enum or metrics mode one of Iceberg's own names in ASCII, any case. Anything else
fails the operation, not retried, with ``PropertyRefused`` naming the property and what it may
be.

The bounds matter because the job holds an executor slot until Iceberg returns, and TMS sets no
run-time limit on an attempt: a commit that keeps failing (the owner's own writers can make it)
is retried ``commit.retry.num-retries`` times, sleeping up to ``commit.retry.max-wait-ms``
between attempts, until ``commit.retry.total-timeout-ms`` has passed (Iceberg's ``Tasks``);
an unknown commit outcome is checked the same way (``commit.status-check.*``). A huge
vectorized batch size is an executor's memory; a huge manifest target makes ``manifest_prep``
merge everything in the driver. Iceberg checks snapshot refs' own retention
(``min-snapshots-to-keep``, ``max-snapshot-age-ms``, ``max-ref-age-ms`` in the metadata's refs:
typed JSON, each required > 0) when it loads the table, before this runs.

Standard library only: shipped next to the maintenance job.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path

try:
    from tms.jobs import maintenance_keys as keys
    from tms.jobs.table_props import PropertyRefused, parse_int
except ImportError:  # shipped alone: the siblings are next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import maintenance_keys as keys  # type: ignore[no-redef]
    from table_props import PropertyRefused, parse_int  # type: ignore[no-redef]

KEYS_BY_ACTION, PREFIXES_BY_ACTION, GC_KEY = (keys.KEYS_BY_ACTION, keys.PREFIXES_BY_ACTION,
                                              keys.GC_KEY)
MAX_SHOWN_CHARS = 40  # of a refused value
_TRUNCATE_RE = re.compile(r"truncate\(([1-9][0-9]{0,9})\)", re.ASCII)
_FRACTION_RE = re.compile(r"0\.[0-9]{1,18}", re.ASCII)
_NAME = r"[A-Za-z_][A-Za-z0-9_.]{0,127}"
_NAMES_RE = re.compile(rf"{_NAME}( ?, ?{_NAME})*", re.ASCII)


def _refuse(key: str, raw: str, expected: str) -> PropertyRefused:
    return PropertyRefused(f"table property {key}={raw[:MAX_SHOWN_CHARS]!r}: expected {expected}")


def parse(key: str, raw: str, rule: keys.Rule) -> int | bool | str | float:
    """``raw`` parsed by ``rule``: an int, a bool, a probability, or a name in lower case."""
    kind, low, high, choices = rule
    if kind == "integer":
        return parse_int(key, raw, low, high)
    if kind == "unset":
        raise _refuse(key, raw, "it unset (TMS runs Iceberg's own location providers only)")
    if kind == "names":
        if len(raw) <= high and (raw == "" or _NAMES_RE.fullmatch(raw)):
            return raw
        raise _refuse(key, raw, f"column names separated by commas (letters, digits, _ and "
                                f"., at most {high} characters in all)")
    if kind == "fraction":
        if _FRACTION_RE.fullmatch(raw) and 0 < float(raw) < 1:
            return float(raw)
        raise _refuse(key, raw, "a probability written 0.<digits>, above 0 and below 1")
    value = raw.lower() if raw.isascii() else ""
    if value in choices:
        return value == "true" if kind == "boolean" else value
    truncate = _TRUNCATE_RE.fullmatch(value) if kind == "metrics" else None
    if truncate and low <= int(truncate.group(1)) <= high:
        return value
    extra = f", truncate(N) with N from {low} to {high}" if kind == "metrics" else ""
    raise _refuse(key, raw, f"one of {', '.join(choices)}{extra} (ASCII, any case, no space)")


def check(props: Mapping[str, str], action: str) -> dict[str, int | bool | str | float]:
    """Every property ``action`` reads that the table sets, parsed (key -> value);
    ``PropertyRefused`` for the first that is not valid. An action not listed reads none.

    ``gc.enabled=false`` is valid, but Iceberg then refuses to expire snapshots or remove
    orphan files (a ``ValidationException`` TMS would otherwise retry): refused here, named."""
    rules = KEYS_BY_ACTION.get(action, {})
    out = {key: parse(key, str(props[key]), rule) for key, rule in rules.items()
           if key in props}
    for prefix, rule in PREFIXES_BY_ACTION.get(action, {}).items():
        for key in sorted(k for k in props if k.startswith(prefix)):
            out[key] = parse(key, str(props[key]), rule)
    for prefix in ("write.", "write.delete."):
        _avro_level(props, out, prefix)
    if out.get(GC_KEY) is False:
        raise PropertyRefused(f"table property {GC_KEY}=false: Iceberg deletes no file of this "
                              f"table, so {action} cannot run (set it to true, or unset it, to "
                              f"let TMS remove unreferenced files)")
    return out


def _avro_level(props: Mapping[str, str], out: Mapping[str, object], prefix: str) -> None:
    """An Avro level within its codec's range (Iceberg's default codec: gzip; a delete
    writer's codec defaults to the data files')."""
    level = out.get(f"{prefix}avro.compression-level")
    if level is None:
        return
    codec = str(props.get(f"{prefix}avro.compression-codec")
                or props.get("write.avro.compression-codec") or "gzip").lower()
    low, high = keys.AVRO_LEVELS.get(codec, (0, keys.MAX_AVRO_LEVEL))
    if not low <= int(str(level)) <= high:
        raise _refuse(f"{prefix}avro.compression-level", str(level),
                      f"a level from {low} to {high} for the Avro codec {codec}")


def manifest_target_bytes(props: Mapping[str, str], default: int) -> int:
    """``commit.manifest.target-size-bytes`` as Iceberg's commit will use it, strictly."""
    key = "commit.manifest.target-size-bytes"
    raw = props.get(key)
    return default if raw is None else int(parse(key, str(raw), keys.COMMIT[key]))
