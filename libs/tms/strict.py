"""The one strict parser for values a table owner writes as text (policy keys, trigger
parameters, Spark tuning conf).

Python's own converters are lenient in ways an attacker can use: ``int()`` takes ``' 5'``,
``'+5'``, ``'1_000'``, Arabic-Indic digits and numbers of any size; ``bool`` words vary by
library. Here a number is ASCII digits only (a '-' only where the minimum is negative), with no
spaces, signs, underscores, leading zeros or exponents, and at most a few characters; a boolean
is exactly ``true`` or ``false``; a choice is one of its words exactly. Every number has a
minimum and a maximum. Errors are ValueError with a message that says what was expected.
Standard library only.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

# Times a client states (commit times, trigger parameters) must fall in this window: nothing
# TMS maintains is older than 2000, and a clock may run a little ahead of the server's.
EARLIEST_TIME = datetime(2000, 1, 1, tzinfo=UTC)
MAX_FUTURE_S = 3600
MAX_DIGITS = 19  # enough for any 64-bit value; longer numbers are refused before int()
MAX_TEXT_CHARS = 1000
_UNSIGNED = re.compile(r"0|[1-9][0-9]{0,18}")
_SIGNED = re.compile(r"-?(0|[1-9][0-9]{0,18})")
_DECIMAL = re.compile(r"(0|[1-9][0-9]{0,8})(\.[0-9]{1,6})?")
_MEMORY = re.compile(r"([1-9][0-9]{0,8})([kmgtKMGT])")
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z")
_MEMORY_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MIB = 1 << 20


def shown(raw: str) -> str:
    """The raw value for an error message: quoted, escaped, cut short."""
    return repr(raw[:40] + ("..." if len(raw) > 40 else ""))


def parse_int(raw: str, minimum: int, maximum: int) -> int:
    """A whole number from ``minimum`` to ``maximum``, written in ASCII digits."""
    regex = _SIGNED if minimum < 0 else _UNSIGNED
    expected = f"an integer from {minimum} to {maximum}"
    if not regex.fullmatch(raw):
        raise ValueError(f"must be {expected} (ASCII digits only), got {shown(raw)}")
    value = int(raw)
    if not minimum <= value <= maximum:
        raise ValueError(f"must be {expected}, got {value if len(raw) <= 24 else shown(raw)}")
    return value


def parse_decimal(raw: str, minimum: float, maximum: float) -> float:
    """A decimal fraction like ``0.6`` (digits, at most one '.', up to six decimals)."""
    expected = f"a decimal number from {minimum} to {maximum}"
    if not _DECIMAL.fullmatch(raw):
        raise ValueError(f"must be {expected} (like 0.6), got {shown(raw)}")
    value = float(raw)
    if not minimum <= value <= maximum:
        raise ValueError(f"must be {expected}, got {raw}")
    return value


def parse_bool(raw: str) -> bool:
    if raw == "true":
        return True
    if raw == "false":
        return False
    raise ValueError(f"must be true or false (lower case), got {shown(raw)}")


def parse_choice(raw: str, choices: tuple[str, ...]) -> str:
    if raw not in choices:
        raise ValueError(f"must be one of {', '.join(choices)}, got {shown(raw)}")
    return raw


def parse_memory(raw: str, minimum_bytes: int, maximum_bytes: int) -> int:
    """A JVM memory size with its unit (``512m``, ``4g``) as bytes; a bare number is refused
    because Spark reads it as MiB in some places and bytes in others."""
    expected = (f"a size with a unit k, m, g or t from {memory_text(minimum_bytes)} to "
                f"{memory_text(maximum_bytes)}")
    m = _MEMORY.fullmatch(raw)
    if not m:
        raise ValueError(f"must be {expected} (like 512m or 4g), got {shown(raw)}")
    value = int(m.group(1)) * _MEMORY_UNITS[m.group(2).lower()]
    if not minimum_bytes <= value <= maximum_bytes:
        raise ValueError(f"must be {expected}, got {raw}")
    return value


def memory_text(n_bytes: int) -> str:
    """Bytes as the largest exact JVM size: 8589934592 -> '8g'."""
    for unit in ("t", "g", "m", "k"):
        size = _MEMORY_UNITS[unit]
        if n_bytes and n_bytes % size == 0:
            return f"{n_bytes // size}{unit}"
    return f"{n_bytes}b"


def parse_text(raw: str, pattern: str, what: str, max_chars: int = MAX_TEXT_CHARS) -> str:
    """Text that must match ``pattern`` whole (ASCII patterns: ``re.ASCII``)."""
    if len(raw) > max_chars:
        raise ValueError(f"must be at most {max_chars} characters, got {len(raw)}")
    if not re.fullmatch(pattern, raw, re.ASCII):
        raise ValueError(f"must be {what}, got {shown(raw)}")
    return raw


def parse_timestamp(raw: str, earliest: datetime, latest: datetime) -> datetime:
    """An RFC 3339 UTC time ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` within [earliest, latest]."""
    expected = f"a UTC time like 2024-05-01T00:00:00Z from {iso(earliest)} to {iso(latest)}"
    if not _TIMESTAMP.fullmatch(raw):
        raise ValueError(f"must be {expected}, got {shown(raw)}")
    try:
        value = datetime.fromisoformat(raw[:-1]).replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"must be {expected}, got {shown(raw)}") from None
    if not earliest <= value <= latest:
        raise ValueError(f"must be {expected}, got {raw}")
    return value


def iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def time_window(now: datetime) -> tuple[datetime, datetime]:
    """(earliest, latest) accepted time: from 2000-01-01T00:00:00Z to one hour after ``now``."""
    return EARLIEST_TIME, now + timedelta(seconds=MAX_FUTURE_S)
