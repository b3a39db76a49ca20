"""Parsing what a person typed into filters and action forms, strictly, before any call.

Each parser returns the value or records a problem under the field's name, so the page shows
it next to that field and keeps what was typed.
"""

from __future__ import annotations

import datetime as dt
import re

from google.protobuf.timestamp_pb2 import Timestamp

Problems = dict[str, str]

MAX_PAGE_SIZE = 200  # rows one page of the console shows at most
DEFAULT_PAGE_SIZE = 50
MAX_PARAMS = 64  # the API's own bound on a trigger's params
PARAM_LINE_RE = re.compile(r"^([A-Za-z0-9_.\-]{1,128})=(.{0,4096})$")
TABLE_ID_RE = re.compile(r"^[a-z][a-z0-9_.-]{0,62}$")
QUEUE_RE = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
ACTION_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
CATALOG_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
MAX_FILTER_CHARS = 1024
MAX_QUEUE_LIMIT = 10_000


def integer(p: Problems, field: str, raw: str | None, lo: int, hi: int) -> int | None:
    raw = (raw or "").strip()
    if not raw:
        return None
    if not raw.isascii() or not raw.lstrip("-").isdigit():
        p[field] = f"a whole number from {lo} to {hi}"
        return None
    value = int(raw)
    if not lo <= value <= hi:
        p[field] = f"a whole number from {lo} to {hi}"
        return None
    return value


def text(p: Problems, field: str, raw: str | None, limit: int = MAX_FILTER_CHARS) -> str:
    value = (raw or "").strip()
    if len(value) > limit:
        p[field] = f"at most {limit} characters"
        return ""
    return value


def pattern(p: Problems, field: str, raw: str | None, rx: re.Pattern[str], what: str) -> str:
    value = (raw or "").strip()
    if value and not rx.fullmatch(value):
        p[field] = f"not {what}"
        return ""
    return value


def choice(p: Problems, field: str, raw: str | None, allowed: tuple[str, ...]) -> str:
    value = (raw or "").strip()
    if value and value not in allowed:
        p[field] = "one of " + ", ".join(a or "(default)" for a in allowed)
        return ""
    return value


def time(p: Problems, field: str, raw: str | None) -> Timestamp | None:
    """``2026-11-28T03:00`` (a browser's datetime-local, UTC) or any ISO 8601 time."""
    value = (raw or "").strip()
    if not value:
        return None
    try:
        t = dt.datetime.fromisoformat(value)
    except ValueError:
        p[field] = "a time like 2026-11-28T03:00 (UTC)"
        return None
    ts = Timestamp()
    ts.FromDatetime(t if t.tzinfo else t.replace(tzinfo=dt.UTC))
    return ts


def params(p: Problems, field: str, raw: str | None) -> dict[str, str]:
    """``key=value`` lines (blank lines ignored) into a map; a bad line names its number."""
    out: dict[str, str] = {}
    for n, line in enumerate((raw or "").splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        m = PARAM_LINE_RE.fullmatch(line)
        if m is None:
            p[field] = f"line {n}: expected key=value"
            return {}
        if m.group(1) in out:
            p[field] = f"line {n}: {m.group(1)} given twice"
            return {}
        out[m.group(1)] = m.group(2)
    if len(out) > MAX_PARAMS:
        p[field] = f"at most {MAX_PARAMS} parameters"
        return {}
    return out


def violation_field(api_field: str) -> str:
    """The form field an API field violation belongs next to: ``params[target-file-size]``
    → ``params``."""
    return api_field.split("[", 1)[0].split(".", 1)[0]
