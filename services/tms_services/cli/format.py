"""How the ``tms`` CLI prints: aligned tables and key/value blocks for people, JSON for scripts.

JSON is the API's own messages through ``MessageToDict`` with the proto field names kept
(``next_attempt_time``, not ``nextAttemptTime``) and every scalar field printed even when it
holds its default, so a script finds ``"attempt": 0`` instead of a missing key. That makes the
proto file the schema of the JSON output; int64 fields (``commit_count``) are strings there, as
the proto3 JSON mapping says. Numbers inside Struct fields (metrics, results) are doubles on the
wire; whole ones print as integers (``3``, not ``3.0``), in JSON as in tables.

Times are shown in UTC (``2026-11-22 14:03:07 UTC``) because operators compare them with
server logs from machines in any zone; durations read like ``1m 05s``. In the text views a
metric reads as a person would say it (:func:`readable`): ``1,234,567``, ``128.0 MiB``, a
``*_ms`` epoch as a UTC time, nothing as ``-``; JSON keeps the API's numbers.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from tms.v1 import tms_pb2

NONE = "-"  # what an empty cell shows
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
CLOCK_FORMAT = "%H:%M:%S"
CELL_MAX_CHARS = 72  # list views cut long reasons / errors; `show` prints them whole
COLUMN_GAP = "  "
JSON_INDENT = 2
SECONDS_PER_MINUTE = 60
SECONDS_PER_HOUR = 3600
SECONDS_PER_DAY = 86400
MS_PER_S = 1000
# A ``*_ms`` metric at least this large is a point in time (ms since the epoch: this is
# 2001-09-09), below it a span: no metric measures a span of 31 years in milliseconds.
EPOCH_MS_FLOOR = 1_000_000_000_000
BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
BYTES_PER_UNIT = 1024


def whole(value: Any) -> Any:
    """``value`` with every integral float made an int, in nested dicts and lists too.

    google.protobuf.Struct (metrics, results) holds every number as a double, so a count of 3
    files comes back as ``3.0``; people and scripts expect ``3``.
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole(v) for v in value]
    return value


def to_dict(msg: Message) -> dict[str, Any]:
    doc: dict[str, Any] = whole(MessageToDict(msg, preserving_proto_field_name=True,
                                              always_print_fields_with_no_presence=True))
    return doc


def dumps(doc: Any, compact: bool = False) -> str:
    """One JSON document; ``compact`` puts it on one line (a line per refresh in `watch`)."""
    if compact:
        return json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return json.dumps(doc, indent=JSON_INDENT, sort_keys=True)


def utc(ts: Timestamp | None) -> dt.datetime | None:
    """A set Timestamp as an aware UTC datetime; None for an unset one (epoch 0 means unset in
    proto3 messages read from the wire, where has-presence is not always kept)."""
    if ts is None or (ts.seconds == 0 and ts.nanos == 0):
        return None
    return ts.ToDatetime(tzinfo=dt.UTC)


def when(ts: Timestamp | None, zone: bool = True) -> str:
    t = utc(ts)
    if t is None:
        return NONE
    return t.strftime(TIME_FORMAT) + (" UTC" if zone else "")


def duration(seconds: float) -> str:
    """``7s``, ``1m 05s``, ``2h 03m 10s``, ``3d 04h 05m``: exact enough to compare attempts,
    short enough for a column. Negative spans (clock skew) show as 0s."""
    s = max(0, int(seconds))
    if s < SECONDS_PER_MINUTE:
        return f"{s}s"
    if s < SECONDS_PER_HOUR:
        return f"{s // SECONDS_PER_MINUTE}m {s % SECONDS_PER_MINUTE:02d}s"
    if s < SECONDS_PER_DAY:
        h, rest = divmod(s, SECONDS_PER_HOUR)
        return f"{h}h {rest // SECONDS_PER_MINUTE:02d}m {rest % SECONDS_PER_MINUTE:02d}s"
    d, rest = divmod(s, SECONDS_PER_DAY)
    h, rest = divmod(rest, SECONDS_PER_HOUR)
    return f"{d}d {h:02d}h {rest // SECONDS_PER_MINUTE:02d}m"


def span(start: Timestamp | None, end: Timestamp | None, now: dt.datetime) -> str:
    """Time from start to end, or to ``now`` while not ended; ``-`` if never started."""
    a = utc(start)
    if a is None:
        return NONE
    b = utc(end) or now
    return duration((b - a).total_seconds())


def until(ts: Timestamp | None, now: dt.datetime, compact: bool = False) -> str:
    """A future time with how far off it is: ``2026-11-22 14:03:07 UTC (in 59m 58s)``, or for a
    table column ``in 59m 58s (14:03:07)`` (the column header says UTC)."""
    t = utc(ts)
    if t is None:
        return NONE
    left = (t - now).total_seconds()
    rel = f"in {duration(left)}" if left > 0 else "due"
    if compact:
        return f"{rel} ({t.strftime(CLOCK_FORMAT)})"
    return f"{t.strftime(TIME_FORMAT)} UTC ({rel})"


def cut(text: str, limit: int = CELL_MAX_CHARS) -> str:
    """One line of at most ``limit`` characters, so one long reason cannot wrap a table."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def cell(value: object) -> str:
    if value is None or value == "":
        return NONE
    return str(whole(value))


def table(headers: Sequence[str], rows: Iterable[Sequence[object]],
          right: Iterable[int] = ()) -> str:
    """Columns padded to their widest cell; ``right`` names numeric columns to right-align.
    The last column is not padded, so lines carry no trailing blanks."""
    cells = [[cell(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    right_set = set(right)
    lines = []
    for r in [list(headers), *cells]:
        parts = [c.rjust(w) if i in right_set else c.ljust(w)
                 for i, (c, w) in enumerate(zip(r, widths, strict=True))]
        lines.append(COLUMN_GAP.join(parts).rstrip())
    return "\n".join(lines)


def block(pairs: Sequence[tuple[str, object]]) -> str:
    """``key:  value`` lines with the values aligned (the `show` views)."""
    width = max((len(k) for k, _ in pairs), default=0) + 1
    return "\n".join(f"{(k + ':').ljust(width)}  {cell(v)}" for k, v in pairs)


def size(n: float) -> str:
    """Bytes in the largest binary unit that keeps the number at least 1: ``128.0 MiB``."""
    value = float(n)
    for unit in BYTE_UNITS:
        if abs(value) < BYTES_PER_UNIT or unit == BYTE_UNITS[-1]:
            return f"{int(value)} {unit}" if unit == BYTE_UNITS[0] else f"{value:.1f} {unit}"
        value /= BYTES_PER_UNIT
    raise AssertionError("unreachable")


def number(value: float) -> str:
    """``1,234,567`` for a whole number, three significant digits (``0.333``) otherwise."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def readable(key: str, value: Any) -> str:
    """One metric's value as a person reads it; the key's unit suffix says what it is:
    ``*_ms`` an epoch time (UTC) or a span, ``*_bytes`` a size, ``*_s`` seconds, ``*_id`` a
    name printed as it is."""
    if value is None or value == "":
        return NONE
    if isinstance(value, bool):
        return "true" if value else "false"
    if key == "id" or key.endswith("_id"):  # a snapshot id is a name, not a quantity
        return str(whole(value))
    if isinstance(value, int | float):
        if key.endswith("_ms"):
            if value >= EPOCH_MS_FLOOR:
                t = dt.datetime.fromtimestamp(value / MS_PER_S, dt.UTC)
                return t.strftime(TIME_FORMAT) + " UTC"
            return duration(value / MS_PER_S)
        if key.endswith("_bytes"):
            return f"{number(value)} ({size(value)})" if abs(value) >= BYTES_PER_UNIT \
                else f"{number(value)} B"
        if key.endswith("_s"):
            long = value >= SECONDS_PER_MINUTE
            return f"{number(value)}s" + (f" ({duration(value)})" if long else "")
        return number(value)
    if isinstance(value, dict | list):
        return json.dumps(whole(value), sort_keys=True, separators=(",", ":"))
    return str(value)


def pairs(mapping: Mapping[str, Any]) -> str:
    """A map as ``k=v, k=v`` in key order, each value :func:`readable`; ``-`` when empty."""
    return ", ".join(f"{k}={readable(k, mapping[k])}" for k in sorted(mapping)) or NONE


def metrics_text(msg: Message) -> str:
    """A google.protobuf.Struct of metrics as ``k=v`` pairs a person reads; ``-`` if empty."""
    return pairs(whole(MessageToDict(msg)))


def struct_text(msg: Message) -> str:
    """A google.protobuf.Struct as compact JSON (metrics, results); ``-`` when empty."""
    data = whole(MessageToDict(msg))
    return json.dumps(data, sort_keys=True, separators=(", ", ": ")) if data else NONE


def benefit_text(m: tms_pb2.ActionExplanation | tms_pb2.Operation) -> str:
    """An operation's or a decision's expected benefit per cost (``benefit``, optional), or
    ``-`` when its plugin does not estimate it."""
    return f"{m.benefit:.3g}" if m.HasField("benefit") else NONE
