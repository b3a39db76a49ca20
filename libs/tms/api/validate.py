"""Field validation for every request. Each check appends (field path, problem) to a list so
one response names every bad field at once."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from tms import locations, strict

MAX_STRING_LEN = 1024
MAX_PATH_LEN = 4096
MAX_OWNER_LEN = 256
MAX_COMMIT_ID_LEN = 256
MAX_MAP_ENTRIES = 64
MAX_MAP_KEY_LEN = 128
MAX_MAP_VALUE_LEN = 4096
MAX_OPERATION_TYPE_LEN = 64
MAX_PAGE_TOKEN_LEN = 512

TABLE_ID_RE = re.compile(r"^[a-z][a-z0-9_.-]{0,62}$")
QUEUE_RE = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
ACTION_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
OPERATION_ID_RE = re.compile(r"[1-9][0-9]{0,17}")  # ASCII only: int() also takes "²", "١"
TABLE_NAME_RE = re.compile(r"^tables/([^/]+)$")
OPERATION_NAME_RE = re.compile(r"^tables/([^/]+)/operations/([^/]+)$")
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")  # what a single-line string must not hold
# Whole-value forms of the checks above for the intake's fast path (tms.api.commits): a value
# that matches is one that table_name / string(..., required=True) accept; any other value
# goes through those functions, which say what is wrong with it.
TABLE_NAME_ID_RE = re.compile(r"tables/([a-z][a-z0-9_.-]{0,62})")
COMMIT_ID_RE = re.compile(rf"[^\x00-\x1f\x7f]{{1,{MAX_COMMIT_ID_LEN}}}")
OPERATION_TYPE_RE = re.compile(rf"[^\x00-\x1f\x7f]{{0,{MAX_OPERATION_TYPE_LEN}}}")

Problems = list[tuple[str, str]]


def string(p: Problems, field: str, value: str, max_len: int = MAX_STRING_LEN,
           required: bool = False, single_line: bool = True) -> None:
    if required and not value:
        p.append((field, "required"))
    elif len(value) > max_len:
        p.append((field, f"at most {max_len} characters, got {len(value)}"))
    elif "\x00" in value:
        p.append((field, "must not contain NUL characters"))
    elif single_line and CONTROL_RE.search(value):
        p.append((field, "must not contain control characters"))


def pattern(p: Problems, field: str, value: str, regex: re.Pattern[str], what: str,
            required: bool = True) -> None:
    if not value:
        if required:
            p.append((field, "required"))
        return
    if not regex.fullmatch(value):
        p.append((field, f"must be {what}, got {value[:80]!r}"))


def string_map(p: Problems, field: str, value: Mapping[str, str]) -> None:
    if len(value) > MAX_MAP_ENTRIES:
        p.append((field, f"at most {MAX_MAP_ENTRIES} entries, got {len(value)}"))
        return
    for k, v in value.items():
        if not k:
            p.append((field, "keys must not be empty"))
        string(p, f"{field}[{k[:MAX_MAP_KEY_LEN]}]", k, MAX_MAP_KEY_LEN)
        string(p, f"{field}[{k[:MAX_MAP_KEY_LEN]}]", v, MAX_MAP_VALUE_LEN)


def path(p: Problems, field: str, value: str) -> None:
    """A location, parsed by the one normaliser (tms.locations)."""
    string(p, field, value, MAX_PATH_LEN)
    if value:
        try:
            locations.parse(value)
        except locations.LocationError as e:
            p.append((field, str(e)))


def timestamp(p: Problems, field: str, ts: Timestamp) -> datetime | None:
    try:
        if not 0 <= ts.nanos < 1_000_000_000:
            raise ValueError
        return ts.ToDatetime(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        p.append((field, "not a valid timestamp (years 1-9999)"))
        return None


def recent_timestamp(p: Problems, field: str, ts: Timestamp) -> datetime | None:
    """A time a client states about its own work (a commit time): within the window of
    ``tms.strict.time_window`` (2000-01-01T00:00:00Z to one hour past the server's clock)."""
    value = timestamp(p, field, ts)
    if value is None:
        return None
    earliest, latest = strict.time_window(datetime.now(UTC))
    if not earliest <= value <= latest:
        p.append((field, f"must be from {strict.iso(earliest)} to one hour past the server's "
                         f"clock ({strict.iso(latest)})"))
        return None
    return value


def table_name(p: Problems, field: str, value: str) -> str:
    """Parse `tables/{table_id}`; returns the id ('' when invalid, with a problem recorded)."""
    m = TABLE_NAME_RE.fullmatch(value)
    if not value:
        p.append((field, "required"))
    elif not m or not TABLE_ID_RE.fullmatch(m.group(1)):
        p.append((field, f"must be tables/{{table_id}}, got {value[:80]!r}"))
    else:
        return m.group(1)
    return ""


def operation_name(p: Problems, field: str, value: str) -> tuple[str, int]:
    m = OPERATION_NAME_RE.fullmatch(value)
    if not value:
        p.append((field, "required"))
    elif (not m or not TABLE_ID_RE.fullmatch(m.group(1))
          or not OPERATION_ID_RE.fullmatch(m.group(2))):
        p.append((field, f"must be tables/{{table_id}}/operations/{{id}}, got {value[:80]!r}"))
    else:
        return m.group(1), int(m.group(2))
    return "", 0


def page_size(p: Problems, value: int, default: int, maximum: int) -> int:
    if value < 0:
        p.append(("page_size", "must not be negative"))
        return default
    return min(value or default, maximum)
