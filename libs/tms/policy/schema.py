"""The types of the policy schema: every key a table owner may set (a policy key, a trigger
parameter, a Spark tuning key) is one ``PolicyKey`` with its type, unit, range, default, one line
of doc and the formats it applies to. Parsing goes through ``tms.strict`` only.

The core declares the keys every format shares (``tms.policy.common``); a format plugin declares its
own with the same types (``TableFormatPlugin.policy_keys`` and ``action_params``). The schema
generates docs/policy.md, the CLI's list of keys and what ExplainTable shows.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tms import strict

Value = int | bool | float | str
_ZONE_RE = r"[A-Za-z][A-Za-z0-9_+\-]{0,31}(/[A-Za-z0-9_+\-]{1,32}){0,2}"


class Kind(StrEnum):
    INT = "integer"
    DECIMAL = "decimal"
    MEMORY = "memory size"
    BOOL = "boolean"
    CHOICE = "choice"
    TEXT = "text"
    ZONE = "time zone"
    TIMESTAMP = "UTC time"


_NUMERIC = (Kind.INT, Kind.DECIMAL, Kind.MEMORY)


@dataclass(frozen=True)
class PolicyKey:
    """One key: ``parse`` is the only way a raw value of it is read. A ``default`` of None
    means "not set": the operator's (or Spark's) own setting applies."""

    key: str
    kind: Kind
    default: Value | None
    doc: str
    unit: str = ""
    minimum: int | float | None = None
    maximum: int | float | None = None
    choices: tuple[str, ...] = ()
    pattern: str = ""
    what: str = ""  # TEXT: what the pattern means, for the error message
    formats: tuple[str, ...] = ()  # empty: every format

    def __post_init__(self) -> None:
        """The schema checks itself: every number has both bounds and a default in range."""
        if self.kind in _NUMERIC and (self.minimum is None or self.maximum is None
                                      or self.minimum > self.maximum):
            raise ValueError(f"{self.key}: a number needs a minimum and a maximum")
        if self.kind is Kind.CHOICE and not self.choices:
            raise ValueError(f"{self.key}: a choice needs its choices")
        if self.kind is Kind.TEXT and not self.pattern:
            raise ValueError(f"{self.key}: text needs a pattern")
        if not self.doc:
            raise ValueError(f"{self.key}: one line of doc is required")
        if self.default is not None and self.default != "":
            self.parse(self.text(self.default))

    def parse(self, raw: str) -> Value:
        """The typed value of ``raw``; ValueError says what was expected."""
        k = self.kind
        if k is Kind.INT:
            return strict.parse_int(raw, int(self.minimum or 0), int(self.maximum or 0))
        if k is Kind.DECIMAL:
            return strict.parse_decimal(raw, float(self.minimum or 0), float(self.maximum or 0))
        if k is Kind.MEMORY:
            strict.parse_memory(raw, int(self.minimum or 0), int(self.maximum or 0))
            return raw
        if k is Kind.BOOL:
            return strict.parse_bool(raw)
        if k is Kind.CHOICE:
            return strict.parse_choice(raw, self.choices)
        if k is Kind.TEXT:
            if raw == "" and self.default == "":
                return raw
            return strict.parse_text(raw, self.pattern, self.what or self.pattern)
        if k is Kind.ZONE:
            zone_of(strict.parse_text(raw, _ZONE_RE, "an IANA time zone such as UTC or "
                                                     "Europe/Berlin", 100))
            return raw
        earliest, latest = strict.time_window(datetime.now(UTC))
        strict.parse_timestamp(raw, earliest, latest)
        return raw

    def get(self, values: Mapping[str, str]) -> Value:
        """The key's value in ``values``, else its default; ValueError on a bad value (or
        when the key has no default and is not set)."""
        raw = values.get(self.key)
        if raw is not None:
            try:
                return self.parse(raw)
            except ValueError as e:
                raise ValueError(f"{self.key} {e}") from None
        if self.default is None:
            raise ValueError(f"{self.key} is not set")
        return self.default

    def as_int(self, values: Mapping[str, str]) -> int:
        return int(self.get(values))

    def as_bool(self, values: Mapping[str, str]) -> bool:
        return bool(self.get(values))

    def as_str(self, values: Mapping[str, str]) -> str:
        return str(self.get(values))

    @staticmethod
    def text(value: Value | None) -> str:
        """A value as a table owner would write it."""
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float) and value.is_integer():
            return str(int(value))  # 8, not 8.0: a count-like decimal reads as the owner wrote it
        return str(value)

    def describe(self) -> str:
        """The type and range in a few words, e.g. ``integer 1..2592000 s``."""
        if self.kind is Kind.MEMORY:
            lo, hi = strict.memory_text(int(self.minimum or 0)), strict.memory_text(
                int(self.maximum or 0))
            return f"memory size {lo}..{hi}"
        if self.kind in _NUMERIC:
            return f"{self.kind.value} {self.minimum}..{self.maximum}" + (
                f" {self.unit}" if self.unit else "")
        if self.kind is Kind.CHOICE:
            return "one of " + ", ".join(self.choices)
        if self.kind is Kind.TEXT:
            return f"text: {self.what}"
        return self.kind.value


def zone_of(name: str) -> tzinfo:
    """The tzinfo of an IANA zone name (``UTC`` exactly, or a zoneinfo name)."""
    if name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError("must be an IANA time zone such as UTC or Europe/Berlin, got "
                         f"{strict.shown(name)}") from None


# Constructors that read like the schema they declare -------------------------------------------
def integer(key: str, default: int | None, minimum: int, maximum: int, unit: str, doc: str,
            formats: tuple[str, ...] = ()) -> PolicyKey:
    return PolicyKey(key, Kind.INT, default, doc, unit, minimum, maximum, formats=formats)


def decimal(key: str, default: float | None, minimum: float, maximum: float, doc: str,
            formats: tuple[str, ...] = ()) -> PolicyKey:
    return PolicyKey(key, Kind.DECIMAL, default, doc, "fraction", minimum, maximum,
                     formats=formats)


def memory(key: str, minimum_bytes: int, maximum_bytes: int, doc: str,
           formats: tuple[str, ...] = ()) -> PolicyKey:
    return PolicyKey(key, Kind.MEMORY, None, doc, "bytes", minimum_bytes, maximum_bytes,
                     formats=formats)


def boolean(key: str, default: bool | None, doc: str, formats: tuple[str, ...] = ()
            ) -> PolicyKey:
    return PolicyKey(key, Kind.BOOL, default, doc, formats=formats)


def choice(key: str, choices: tuple[str, ...], default: str | None, doc: str,
           formats: tuple[str, ...] = ()) -> PolicyKey:
    return PolicyKey(key, Kind.CHOICE, default, doc, choices=choices, formats=formats)


def text(key: str, default: str | None, pattern: str, what: str, doc: str,
         formats: tuple[str, ...] = ()) -> PolicyKey:
    return PolicyKey(key, Kind.TEXT, default, doc, pattern=pattern, what=what, formats=formats)


def zone(key: str, default: str, doc: str, formats: tuple[str, ...] = ()) -> PolicyKey:
    return PolicyKey(key, Kind.ZONE, default, doc, formats=formats)


def timestamp(key: str, doc: str, formats: tuple[str, ...] = ()) -> PolicyKey:
    return PolicyKey(key, Kind.TIMESTAMP, None, doc, formats=formats)


def by_key(keys: Iterable[PolicyKey]) -> dict[str, PolicyKey]:
    """A schema dict; a key declared twice is a bug in the declaration."""
    out: dict[str, PolicyKey] = {}
    for k in keys:
        if k.key in out:
            raise ValueError(f"policy key {k.key} declared twice")
        out[k.key] = k
    return out


# An unknown key's description stays within this many characters: the known keys that fit
# whole, then how many more there are and where the full list is. The API cuts a violation's
# description at 300 characters (tms.api.errors.MAX_VIOLATION_CHARS), mid-list otherwise.
UNKNOWN_KEY_TEXT_CHARS = 280
MIN_KNOWN_LIST_CHARS = 60  # a few names are listed even after a long key or suggestion
SUGGESTIONS = 2  # "did you mean" names at most this many keys
SUGGESTION_CUTOFF = 0.6  # difflib's similarity ratio a key must reach to be suggested


def unknown_key_text(name: str, keys: Iterable[str], unknown: str = "unknown key",
                     known: Sequence[str] = (), full_list: str = "") -> str:
    """``unknown policy key; did you mean a.b?; known: a.b, c.d, ... (31 more: <full_list>)``:
    the closest known names first (difflib), then as many known names as fit whole."""
    names = sorted(keys)
    close = difflib.get_close_matches(name, names, n=SUGGESTIONS, cutoff=SUGGESTION_CUTOFF)
    text = unknown
    if close:
        text += f"; did you mean {' or '.join(close)}?"
    listed = list(known) or names
    most_tail = len(f", ... ({len(listed)} more: {full_list})")
    budget = max(MIN_KNOWN_LIST_CHARS,
                 UNKNOWN_KEY_TEXT_CHARS - len(text) - len("; known: ") - most_tail)
    shown: list[str] = []
    used = 0
    for k in listed:
        if shown and used + len(k) + 2 > budget:
            break
        shown.append(k)
        used += len(k) + 2
    rest = len(listed) - len(shown)
    tail = ""
    if rest:
        tail = f", ... ({rest} more" + (f": {full_list})" if full_list else ")")
    elif full_list:
        tail = f" ({full_list})"
    return f"{text}; known: {', '.join(shown) or 'none'}{tail}"


def check_values(keys: Mapping[str, PolicyKey], values: Mapping[str, str], field: str,
                 unknown: str = "unknown key", known: Sequence[str] = (),
                 full_list: str = "") -> list[tuple[str, str]]:
    """(``field[key]``, problem) for every unknown key and every bad value; ``known`` names
    the keys for the message (default: all of them), ``full_list`` where to read them all."""
    problems = []
    for k, raw in values.items():
        spec = keys.get(k)
        if spec is None:
            problems.append((f"{field}[{k[:128]}]",
                             unknown_key_text(k[:128], keys, unknown, known, full_list)))
            continue
        try:
            spec.parse(raw)
        except ValueError as e:
            problems.append((f"{field}[{k}]", f"{k} {e}"))
    return problems
