"""Catalog commit events → TMS commits.

Two shapes are understood:

* a CloudEvent (a dict with ``specversion``) as Lakekeeper-style catalogs emit it: type
  ``updateTable`` (any type containing one of ``type_markers``), ``data`` the Iceberg REST
  CommitTableRequest (``identifier`` = namespace + name, ``updates`` holding ``add-snapshot``
  entries), ``namespace`` / ``name`` also as extension attributes;
* a plain dict a metaserver hook builds itself: ``table_id`` (or namespace + name) and
  ``commit_id`` / ``snapshot_id``, optionally ``commit_time``, ``files_added``,
  ``bytes_added``, ``operation``.

Every ``add-snapshot`` update becomes one commit (the snapshot id is the commit id), so a
catalog event records exactly what a writer notifying each snapshot itself would. An
``updateTable`` without a new snapshot (schema or property change) and event types that are
not commits are ignored, not errors: catalogs send everything to one sink.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tms_client.commits import Commit, check_commit
from tms_client.event_fields import (
    EventError,
    as_int,
    as_str,
    as_time,
    first_present,
    table_identity,
)

DEFAULT_TYPE_MARKERS = ("updatetable", "commit")  # case-insensitive parts of the event type
DEFAULT_TABLE_ID_TEMPLATE = "{namespace}.{name}"
TEMPLATE_FIELDS = frozenset({"namespace", "name", "warehouse", "prefix"})
ADD_SNAPSHOT = "add-snapshot"
COMMIT_ID_KEYS = ("commit_id", "commit-id", "snapshot_id", "snapshot-id")
SPEC_VERSION = "1.0"
REQUIRED_ATTRIBUTES = ("id", "source", "type")

__all__ = ["EventError", "EventMapping", "Mapped"]


@dataclass(frozen=True)
class Mapped:
    """The commits one event stands for, or why it stands for none."""

    commits: list[Commit]
    ignored: str | None = None


@dataclass(frozen=True)
class EventMapping:
    """Which events are commits and how a catalog's table becomes a TMS table id.

    ``table_id_template`` may use {namespace} (levels joined by ``.``), {name}, {warehouse}
    (the ``warehouse-id`` / ``warehouse`` attribute) and {prefix}; ``lowercase`` folds the
    result, as Spark and most catalogs treat identifiers case-insensitively.
    """

    type_markers: tuple[str, ...] = DEFAULT_TYPE_MARKERS
    table_id_template: str = DEFAULT_TABLE_ID_TEMPLATE
    lowercase: bool = True

    def __post_init__(self) -> None:
        used = {f for _, f, _, _ in string.Formatter().parse(self.table_id_template) if f}
        unknown = used - TEMPLATE_FIELDS
        if unknown or not used:
            raise ValueError(f"table id template {self.table_id_template!r}: use only "
                             f"{sorted(TEMPLATE_FIELDS)} (unknown: {sorted(unknown)})")

    def is_commit_type(self, event_type: str) -> bool:
        t = event_type.lower()
        return any(m.lower() in t for m in self.type_markers)

    def map(self, event: Mapping[str, Any]) -> Mapped:
        """The commits of one event; raises EventError naming the field for malformed input."""
        if not isinstance(event, Mapping):
            raise EventError("", "expected a JSON object")
        if "specversion" in event:
            check_attributes(event)
            event_type = str(event["type"])
            if not self.is_commit_type(event_type):
                return Mapped([], f"type {event_type!r} is not a commit")
            data = event.get("data")
            if not isinstance(data, Mapping):
                raise EventError("data", "expected a JSON object (the commit)")
            return self._commits(data, "data.", attributes=event)
        return self._commits(event, "", attributes={})

    def table_id(self, fields: Mapping[str, str], where: str) -> str:
        values = {k: fields.get(k, "") for k in TEMPLATE_FIELDS}
        for f in (f for _, f, _, _ in string.Formatter().parse(self.table_id_template) if f):
            if not values[f]:
                raise EventError(where, f"no {f} for table id template "
                                        f"{self.table_id_template!r}")
        tid = self.table_id_template.format(**values)
        return tid.lower() if self.lowercase else tid

    def _commits(self, data: Mapping[str, Any], p: str,
                 attributes: Mapping[str, Any]) -> Mapped:
        explicit = first_present(data, ("table_id", "table-id"))
        if explicit is not None:
            table_id = as_str(data, explicit, p)
        else:
            table_id = self.table_id(table_identity(data, attributes, p), p + "identifier")
        updates = data.get("updates")
        if updates is not None:
            commits = _snapshot_commits(table_id, updates, f"{p}updates")
            if not commits:
                return Mapped([], "no add-snapshot update (a metadata-only change)")
        else:
            key = first_present(data, COMMIT_ID_KEYS)
            if key is None:
                raise EventError(p + "commit_id", "no commit: expected updates[] with an "
                                 "add-snapshot, or commit_id / snapshot_id")
            commits = [Commit(table_id, as_str(data, key, p),
                              as_time(data, "commit_time", p), as_int(data, "files_added", p),
                              as_int(data, "bytes_added", p),
                              as_str(data, "operation", p, required=False))]
        for c in commits:
            problem = check_commit(c)
            if problem is not None:
                raise EventError(p.rstrip(".") or "event", problem)
        return Mapped(commits)


def check_attributes(event: Mapping[str, Any]) -> None:
    """The attributes CloudEvents 1.0 requires of every event."""
    if event.get("specversion") != SPEC_VERSION:
        raise EventError("specversion", f"expected {SPEC_VERSION!r}, "
                                        f"got {event.get('specversion')!r:.40}")
    for attribute in REQUIRED_ATTRIBUTES:
        if not isinstance(event.get(attribute), str) or not event[attribute]:
            raise EventError(attribute, "required (a non-empty string)")


def _snapshot_commits(table_id: str, updates: Any, where: str) -> list[Commit]:
    if not isinstance(updates, list):
        raise EventError(where, "expected a list of table updates")
    commits = []
    for i, update in enumerate(updates):
        if not isinstance(update, Mapping):
            raise EventError(f"{where}[{i}]", "expected an object")
        if update.get("action") != ADD_SNAPSHOT:
            continue
        snap = update.get("snapshot")
        sp = f"{where}[{i}].snapshot."
        if not isinstance(snap, Mapping):
            raise EventError(sp.rstrip("."), "expected an object with snapshot-id")
        summary = snap.get("summary") or {}
        if not isinstance(summary, Mapping):
            raise EventError(sp + "summary", "expected an object")
        commits.append(Commit(
            table_id, as_str(snap, "snapshot-id", sp), as_time(snap, "timestamp-ms", sp),
            as_int(summary, "added-data-files", sp + "summary."),
            as_int(summary, "added-files-size", sp + "summary."),
            as_str(summary, "operation", sp + "summary.", required=False)))
    return commits
