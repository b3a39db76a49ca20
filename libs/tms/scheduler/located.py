"""A table's location as just read from its catalog and checked, waiting for its batch's one
statement that stores the new locations (``DecisionMaker.settle``): until then nothing is
queued for the table. Why one statement: at a first look at many tables, a transaction per
table (the location lock, the overlap check, the write) was a third of the scheduler's and
PostgreSQL's CPU per table."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import structlog

from tms.domain import Decision, Table
from tms.formats.base import TableFormatPlugin

log = structlog.get_logger("tms.scheduler")


def overlap_reason(where: str, other: str) -> str:
    return (f"location {where} overlaps tables/{other}'s: two registrations of one physical "
            "table; deregister one")


@dataclass
class NewLocation:
    """A table's location as just read and checked (symlinks resolved), not yet stored:
    the state it was read from, the raw location, the allowed locations it was checked
    against, the checked location and the one stored before."""

    state: str | None
    raw: str
    allowed: tuple[str, ...]
    where: str
    previous: str

    def stored(self, table: Table) -> None:
        log.info("table location checked", table=table.table_id, location=self.where,
                 previous=self.previous or None)


@dataclass
class Unsettled:
    """A decision for a table whose location is new: inspected and judged, nothing queued
    until the batch's new locations are stored and compared with every other table's."""

    table: Table  # with the new location
    plugin: TableFormatPlugin
    new: NewLocation
    judged: list[tuple[Decision, str]]
    next_s: float
    traceparent: str | None
    active: Collection[str] = ()
