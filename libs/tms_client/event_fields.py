"""Reading typed fields out of untrusted event JSON, with errors that name the field.

Anything a catalog (or an attacker) may send is checked here: wrong types, bad numbers and
times raise :class:`EventError` with the field's path, which the receiver returns as a 400.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

NAMESPACE_JOIN = "."
UNIT_SEPARATOR = "\x1f"  # Iceberg REST joins namespace levels with it in URLs and headers
MS_PER_S = 1000


class EventError(ValueError):
    """A malformed event; ``field`` is the path of the offending field ("" = the event)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem

    def within(self, prefix: str) -> EventError:
        """The same error with its field placed under ``prefix`` (e.g. ``events[3]``)."""
        return EventError(f"{prefix}.{self.field}" if self.field else prefix, self.problem)


def first_present(obj: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    return next((k for k in keys if obj.get(k) is not None), None)


def as_str(obj: Mapping[str, Any], key: str, prefix: str, required: bool = True) -> str:
    value = obj.get(key)
    if value is None or value == "":
        if required:
            raise EventError(prefix + key, "required")
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise EventError(prefix + key, f"expected a string, got {type(value).__name__}")
    return str(value)


def as_int(obj: Mapping[str, Any], key: str, prefix: str) -> int | None:
    """An optional non-negative integer; Iceberg summaries carry them as strings."""
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise EventError(prefix + key, f"expected a non-negative integer, got {value!r:.40}")
    return value


def as_time(obj: Mapping[str, Any], key: str, prefix: str) -> datetime | None:
    """Epoch milliseconds (a number) or an ISO 8601 string; naive times are UTC."""
    value = obj.get(key)
    if value is None:
        return None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(value / MS_PER_S, UTC)
        if isinstance(value, str):
            when = datetime.fromisoformat(value)
            return when if when.tzinfo else when.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        pass
    raise EventError(prefix + key, f"expected epoch milliseconds or an ISO 8601 time, "
                                   f"got {value!r:.40}")


def _namespace(value: Any, field: str) -> str:
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return NAMESPACE_JOIN.join(value)
    if isinstance(value, str) and value:
        return NAMESPACE_JOIN.join(value.split(UNIT_SEPARATOR))
    raise EventError(field, "expected a non-empty string or list of strings")


def table_identity(data: Mapping[str, Any], attributes: Mapping[str, Any],
                   prefix: str) -> dict[str, str]:
    """namespace, name, warehouse and prefix of the table an event is about.

    Looked up in the Iceberg REST ``identifier`` first, then ``namespace`` / ``name`` in the
    data, then the CloudEvent's extension attributes of those names (Lakekeeper sets both).
    """
    ident = data.get("identifier")
    if ident is not None:
        if not isinstance(ident, Mapping):
            raise EventError(prefix + "identifier", "expected {namespace, name}")
        source, where = ident, prefix + "identifier."
    elif data.get("name") is not None or data.get("table") is not None:
        source, where = data, prefix
    else:
        source, where = attributes, ""
    name_key = "name" if source.get("name") is not None else "table"
    if source.get(name_key) is None:
        raise EventError(prefix + "identifier", "no table: expected identifier {namespace, "
                         "name}, namespace + name, or the namespace / name extension "
                         "attributes")
    fields = {"name": as_str(source, name_key, where)}
    if source.get("namespace") is not None:
        fields["namespace"] = _namespace(source["namespace"], where + "namespace")
    for key, names in (("warehouse", ("warehouse-id", "warehouse", "warehouseid")),
                       ("prefix", ("prefix",))):
        for holder in (data, attributes):
            found = first_present(holder, names)
            if found is not None and key not in fields:
                fields[key] = as_str(holder, found, "" if holder is attributes else prefix)
    return fields
