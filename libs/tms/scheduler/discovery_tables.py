"""One catalog's listing compared with its registrations: matching listed tables to
registered ones, locating and checking a table's real location, confirming a table gone.

Every location is checked with :mod:`tms.locations` (the normaliser the API and the job
use too) against the catalog's allowed locations, against the table's boundary
(:mod:`tms.table_boundary`: no warehouse or namespace root, no other table's files,
registered or not) and against every registered table's, so discovery never registers a
table outside the catalog or on another table's files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import quote

import structlog

from tms import table_boundary
from tms.catalogs import CatalogAccess
from tms.domain import Catalog, Table, TableState
from tms.formats.base import DiscoveredTable, TableFormatPlugin, TableNotInCatalog
from tms.locations import LocationError, check, parse, resolve
from tms.storage.roles import CatalogTable, DiscoveryStore

MAX_NAME_IN_STATUS_CHARS = 200
MAX_REPORTED_SKIPS = 5  # reasons kept in the catalog's status (all are counted)
MAX_STATUS_ERROR_CHARS = 2000
SECRET_MASK = "***"

log = structlog.get_logger("tms.scheduler.discovery")


@dataclass
class DiscoveryReport:
    """What one listing of one catalog did."""

    catalog_id: str
    listed: int = 0
    registered: list[str] = field(default_factory=list)  # table ids
    missing: int = 0
    cancelled: int = 0
    found_again: int = 0
    skipped: list[str] = field(default_factory=list)  # one reason per table not registered
    error: str | None = None  # the listing failed

    def status_error(self) -> str | None:
        """The catalog's ``discovery_last_error``: the failure, or the tables skipped."""
        if self.error is not None:
            return self.error[:MAX_STATUS_ERROR_CHARS]
        if not self.skipped:
            return None
        shown = "; ".join(self.skipped[:MAX_REPORTED_SKIPS])
        more = len(self.skipped) - MAX_REPORTED_SKIPS
        text = f"{len(self.skipped)} table(s) not registered: {shown}"
        return (text + (f"; and {more} more" if more > 0 else ""))[:MAX_STATUS_ERROR_CHARS]


def scrubber(catalog: Catalog, cat: CatalogAccess) -> Callable[[str], str]:
    """A filter taking the catalog's secret values (as given and percent-quoted, as they sit
    in a URI) out of a message: drivers quote connection strings in their errors."""
    values: set[str] = set()
    for key in catalog.spec.secrets:
        value = cat.properties.get(key) or cat.storage_options.get(key)
        if value:
            values |= {value, quote(value, safe="")}

    def scrub(text: str) -> str:
        for value in sorted(values, key=len, reverse=True):
            text = text.replace(value, SECRET_MASK)
        return text
    return scrub


def probe_table(catalog_id: str, fmt: str, found: DiscoveredTable, now: datetime) -> Table:
    """A not-yet-registered table as the plugins' ``locate`` takes it (identity only)."""
    return Table(pk=0, table_id="", format=fmt, catalog=catalog_id, namespace=found.namespace,
                 table_name=found.table_name, base_path=found.base_path,
                 owner="", queue="", priority=0, policy={},
                 state=TableState.ACTIVE, created_at=now, updated_at=now)


def path_key(raw: str) -> str | None:
    """A base path as one normalised, resolved string (None when it does not parse)."""
    try:
        return str(resolve(parse(raw)))
    except LocationError:
        return None


class Known:
    """The catalog's registered tables of the listed format, by identifier and base path."""

    def __init__(self, tables: list[CatalogTable]) -> None:
        self.tables = tables
        self._by_ident = {(t.table.namespace, t.table.table_name): t for t in tables}
        self._by_path: dict[str, CatalogTable] = {}
        for t in tables:
            for key in (t.location, path_key(t.table.base_path) if t.table.base_path else ""):
                if key:
                    self._by_path.setdefault(key, t)

    def match(self, found: DiscoveredTable) -> CatalogTable | None:
        """Path-based tables (Hudi) are known by base path, the rest by identifier."""
        if found.base_path:
            key = path_key(found.base_path)
            return self._by_path.get(key) if key else None
        return self._by_ident.get((found.namespace, found.table_name))

    def active_except(self, seen: set[int]) -> list[CatalogTable]:
        return [t for t in self.tables
                if t.table.pk not in seen and t.table.state is TableState.ACTIVE]


@dataclass(frozen=True)
class CatalogPass:
    """One listing of one catalog: what it needs to locate, check and register tables."""

    store: DiscoveryStore
    catalog: Catalog
    access: CatalogAccess
    plugin: TableFormatPlugin
    format: str
    scrub: Callable[[str], str]

    def known(self) -> Known:
        return Known([t for t in self.store.table_list_by_catalog(self.catalog.catalog_id)
                      if t.table.format == self.format])

    def name_of(self, t: DiscoveredTable | Table) -> str:
        name = f"{t.namespace}.{t.table_name}" if t.namespace else t.table_name
        return repr(name[:MAX_NAME_IN_STATUS_CHARS])

    def checked_location(self, table: Table, report: DiscoveryReport, except_pk: int = 0
                         ) -> str | None:
        """The table's real location once it passed every check; None (the reason added to
        the report) when it did not."""
        name = self.name_of(table)
        try:
            where = str(check(self.plugin.locate(table, self.access),
                              self.catalog.spec.allowed_locations))
            # no further than the table: no warehouse or namespace root, no other table's
            # files (tms.table_boundary; BoundaryRefused is a LocationError)
            table_boundary.check(self.plugin, table, self.access, where)
        except TableNotInCatalog:
            report.skipped.append(f"{name}: gone from the catalog while it was listed")
            return None
        except LocationError as e:
            report.skipped.append(f"{name}: {e}")
            return None
        except Exception as e:  # unreadable metadata, a storage error ...
            report.skipped.append(self.scrub(f"{name}: cannot be located: "
                                             f"{type(e).__name__}: {e}"))
            return None
        other = self.store.table_find_overlapping(where, except_pk)
        if other is not None:
            report.skipped.append(f"{name}: its location overlaps tables/{other}")
            return None
        return where

    def found_again(self, known: CatalogTable, report: DiscoveryReport) -> bool:
        """A MISSING table listed again becomes ACTIVE, once its location passes again."""
        if known.table.state is not TableState.MISSING:
            return False
        where = self.checked_location(known.table, report, known.table.pk)
        return where is not None and self.store.table_mark_found(known.table.pk, where)

    def confirm_gone(self, unlisted: Iterable[CatalogTable], report: DiscoveryReport) -> list[int]:
        """The pks of unlisted tables the catalog confirms gone: a listing that missed a
        table (too deep, filtered by the catalog) never marks it."""
        gone: list[int] = []
        for t in unlisted:
            try:
                self.plugin.locate(t.table, self.access)
            except TableNotInCatalog:
                gone.append(t.table.pk)
            except Exception as e:
                log.warning("cannot tell whether a table is gone", catalog=self.catalog.catalog_id,
                            table=t.table.table_id, error=self.scrub(str(e))[:500])
        return gone
