"""Typed reading of per-table policy overrides (string maps, Amoro-style dotted keys)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


@dataclass(frozen=True)
class PolicyKey:
    """One overridable setting: its key, its type and its documented default."""

    key: str
    kind: type
    default: int | bool | str
    minimum: int = 0
    pattern: str = ""  # for str keys: a regular expression the whole value must match
    what: str = ""  # for str keys: what the pattern means, for the error message

    def parse(self, raw: str) -> int | bool | str:
        """Parse a string value; ValueError says what was expected."""
        if self.kind is str:
            value = raw.strip()
            if self.pattern and value and not re.fullmatch(self.pattern, value):
                raise ValueError(f"{self.key} must be {self.what or self.pattern}, got {raw!r}")
            return value
        if self.kind is bool:
            low = raw.strip().lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise ValueError(f"{self.key} must be true or false, got {raw!r}")
        try:
            number = int(raw.strip())
        except ValueError:
            raise ValueError(f"{self.key} must be an integer, got {raw!r}") from None
        if number < self.minimum:
            raise ValueError(f"{self.key} must be >= {self.minimum}, got {number}")
        return number

    def get(self, overrides: Mapping[str, str]) -> int | bool | str:
        raw = overrides.get(self.key)
        return self.default if raw is None else self.parse(raw)

    def as_int(self, overrides: Mapping[str, str]) -> int:
        return int(self.get(overrides))

    def as_bool(self, overrides: Mapping[str, str]) -> bool:
        return bool(self.get(overrides))

    def as_str(self, overrides: Mapping[str, str]) -> str:
        return str(self.get(overrides))


# Keys every table takes whatever its format: they steer the scheduler, not the format.
DEFAULT_PULL_INTERVAL_S = 600  # inspect a table at least this often, commits or not
MIN_PULL_INTERVAL_S = 1
PULL_INTERVAL_KEY = PolicyKey("scheduler.pull-interval-s", int, DEFAULT_PULL_INTERVAL_S,
                              MIN_PULL_INTERVAL_S)
COMMON_KEYS: dict[str, PolicyKey] = {PULL_INTERVAL_KEY.key: PULL_INTERVAL_KEY}


def validate_policy(keys: Mapping[str, PolicyKey], overrides: Mapping[str, str],
                    field: str = "table.policy") -> list[tuple[str, str]]:
    """Problems with a policy map: unknown keys and unparsable values, each with its field.
    The common scheduler keys are always accepted."""
    keys = {**COMMON_KEYS, **keys}
    problems = []
    for k, v in overrides.items():
        spec = keys.get(k)
        if spec is None:
            known = ", ".join(sorted(keys))
            problems.append((f"{field}[{k}]", f"unknown policy key; known: {known}"))
            continue
        try:
            spec.parse(v)
        except ValueError as e:
            problems.append((f"{field}[{k}]", str(e)))
    return problems
