"""Catalog discovery, run by the scheduler leader: TMS turned on for a whole catalog.

A pass claims the catalogs due for a listing (the claim moves each one's next listing one
interval ahead in the same statement, so two leaders in a handover never list one catalog at
once), lists each with its format plugin, and compares the listing with what is registered:

- a new table (matching the catalog's include/exclude patterns over ``namespace.table``) is
  located, its real location checked against the catalog's allowed locations and against
  every registered table's, and registered as discovered with the catalog's discovery owner,
  queue and priority and no policy of its own;
- a registered table the listing no longer holds, and that the catalog confirms gone, is
  marked MISSING with its queued operations cancelled; one found again is ACTIVE again;
- a listing that fails (catalog unreachable, a secret missing) is recorded and changes
  nothing. Tables not registered are counted in the catalog's status, with the first reasons.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from pathlib import Path

import structlog

from tms.catalogs import access
from tms.domain import Catalog, CatalogType
from tms.formats.base import DiscoveredTable, TableFormatPlugin
from tms.scheduler.discovery_ids import table_id_candidates
from tms.scheduler.discovery_tables import CatalogPass, DiscoveryReport, probe_table, scrubber
from tms.storage.roles import DiscoveredRegistration, DiscoveryStore

DISCOVERY_POLL_INTERVAL_S = 5.0  # how often the leader looks for catalogs due for a listing
DISCOVERY_CLAIM_BATCH = 10  # catalogs claimed per look
MAX_REGISTER_PER_PASS = 1000  # new tables located and registered per catalog per listing
# The formats a catalog type holds: a hadoop catalog holds Hudi base paths and Iceberg tables
# in HadoopCatalog layout; every other type holds Iceberg tables.
FORMATS_BY_TYPE = {CatalogType.HADOOP: ("hudi", "iceberg")}
DEFAULT_FORMATS = ("iceberg",)

log = structlog.get_logger("tms.scheduler.discovery")


def wanted(table: DiscoveredTable, include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    """Case-sensitive glob patterns over ``namespace.table``; an empty include takes all."""
    name = f"{table.namespace}.{table.table_name}" if table.namespace else table.table_name
    if include and not any(fnmatchcase(name, p) for p in include):
        return False
    return not any(fnmatchcase(name, p) for p in exclude)


class Discovery:
    """Lists catalogs due for discovery. Thread-safe enough for one runner thread."""

    def __init__(self, store: DiscoveryStore, formats: Mapping[str, TableFormatPlugin], *,
                 poll_interval_s: float = DISCOVERY_POLL_INTERVAL_S,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC),
                 environ: Mapping[str, str] | None = None,
                 secret_dir: Path | None = None) -> None:
        self.store = store
        self.formats = dict(formats)
        self.poll_interval_s = poll_interval_s
        self._now = now
        self._environ = environ
        self._secret_dir = secret_dir
        self.passed = threading.Event()  # set after each pass: a signal for tests

    def run(self, stop: threading.Event, leads: Callable[[], bool]) -> None:
        """Look for due catalogs every poll interval while this scheduler leads."""
        while not stop.is_set():
            if leads():
                try:
                    self.run_once()
                except Exception:
                    log.exception("discovery pass failed")
            stop.wait(self.poll_interval_s)

    def run_once(self) -> list[DiscoveryReport]:
        now = self._now()
        reports = [self.discover(c, now)
                   for c in self.store.catalog_claim_discovery(now, DISCOVERY_CLAIM_BATCH)]
        self.passed.set()
        return reports

    def discover(self, catalog: Catalog, now: datetime) -> DiscoveryReport:
        """List one (claimed) catalog and bring its registrations in line; record the
        outcome in its discovery status."""
        report = DiscoveryReport(catalog.catalog_id)
        fmts = FORMATS_BY_TYPE.get(catalog.spec.type, DEFAULT_FORMATS)
        bound = log.bind(catalog=catalog.catalog_id, formats=",".join(fmts))
        scrub: Callable[[str], str] = str
        passes: list[tuple[CatalogPass, list[DiscoveredTable]]] = []
        try:
            plugins = {f: self.formats[f] for f in fmts if f in self.formats}
            if not plugins:
                raise LookupError(f"no {' or '.join(map(repr, fmts))} format plugin is "
                                  "installed")
            cat = access(catalog, self._environ, self._secret_dir)
            scrub = scrubber(catalog, cat)
            # every format listed before anything changes: one failed listing changes nothing
            for fmt, plugin in plugins.items():
                passes.append((CatalogPass(self.store, catalog, cat, plugin, fmt, scrub),
                               plugin.discover(cat)))
        except Exception as e:  # unreachable, a secret missing, a listing too large ...
            report.error = scrub(f"listing failed: {type(e).__name__}: {e}")
            bound.warning("catalog listing failed", error=report.error)
        else:
            report.listed = sum(len(listed) for _, listed in passes)
            try:
                for p, listed in passes:
                    self._reconcile(p, listed, report, now)
            except Exception as e:  # the database, mostly: what is done stays done
                report.error = scrub(f"reconciling failed: {type(e).__name__}: {e}")
                bound.warning("catalog reconciling failed", error=report.error)
        self.store.catalog_finish_discovery(
            catalog.catalog_id, now, report.status_error(), len(report.registered),
            report.missing)
        bound.info("catalog listed", listed=report.listed, registered=len(report.registered),
                   missing=report.missing, found_again=report.found_again,
                   skipped=len(report.skipped), failed=report.error is not None)
        return report

    def _reconcile(self, p: CatalogPass, listed: list[DiscoveredTable],
                   report: DiscoveryReport, now: datetime) -> None:
        disc = p.catalog.spec.discovery
        known = p.known()
        seen: set[int] = set()
        new: list[DiscoveredTable] = []
        for found in listed:
            match = known.match(found)
            if match is not None:
                seen.add(match.table.pk)
                if p.found_again(match, report):
                    report.found_again += 1
            elif wanted(found, disc.include, disc.exclude):
                new.append(found)
        gone = p.confirm_gone(known.active_except(seen), report)
        if gone:
            report.missing, report.cancelled = self.store.table_mark_missing(
                p.catalog.catalog_id, gone, f"table no longer in catalog {p.catalog.catalog_id}")
        for found in new[:MAX_REGISTER_PER_PASS]:
            self._register(p, found, report, now)
        if len(new) > MAX_REGISTER_PER_PASS:
            report.skipped.append(f"{len(new) - MAX_REGISTER_PER_PASS} more new tables are "
                                  "left for the next listing")

    def _register(self, p: CatalogPass, found: DiscoveredTable, report: DiscoveryReport,
                  now: datetime) -> None:
        where = p.checked_location(probe_table(p.catalog.catalog_id, p.format, found, now),
                                   report)
        if where is None:
            return
        disc = p.catalog.spec.discovery
        for table_id in table_id_candidates(p.catalog.catalog_id, found.namespace,
                                            found.table_name, found.base_path):
            pk = self.store.table_insert_discovered(DiscoveredRegistration(
                table_id, p.format, p.catalog.catalog_id, found.namespace, found.table_name,
                found.base_path, where, disc.owner, disc.queue, disc.priority))
            if pk is not None:
                report.registered.append(table_id)
                return
        report.skipped.append(f"{p.name_of(found)}: its table id, identifier or location is "
                              "already registered")


__all__ = ["Discovery", "DiscoveryReport", "wanted"]
