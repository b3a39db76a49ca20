"""The report intake: a batch of an engine's Iceberg reports into TMS's own terms.

Reports name tables as the engine's catalog does (``<engine catalog>.<namespace>.<table>``,
or ``<uri>/<namespace>.<table>`` for a catalog named by a URI); the batch names the TMS
catalog the reporter was configured with. A report is taken for a TMS table only when that
table is registered in that catalog under that namespace and name, and the caller's token may
report for it (role ``reporter``, or ``admin``; a scoped token only for the tables in its
scope). Anything else is counted as unmatched, never trusted for another table.

Commit reports become commit notifications through the store's one intake path (the same
statement NotifyCommits uses, idempotent on the snapshot id), so a writer whose catalog
carries the reporter needs no TMS client. Scan reports become read statistics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Protocol

from opentelemetry import metrics

from tms.api.auth import Principal, Role
from tms.domain import CommitEvent
from tms.reads.profile import increments
from tms.reads.reports import Batch, CommitObservation, ScanObservation
from tms.storage.roles import IntakeStore, ReadStatsStore, ReportedTable


class _Store(IntakeStore, ReadStatsStore, Protocol):
    """The two roles the intake uses."""


@dataclass(frozen=True)
class IntakeResult:
    scans: int
    commits_new: int
    commits_duplicate: int
    unmatched: int
    denied: int
    refused: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        return {"scans": self.scans, "commits_new": self.commits_new,
                "commits_duplicate": self.commits_duplicate, "unmatched": self.unmatched,
                "denied": self.denied, "refused": list(self.refused[:20])}


@cache
def _counter() -> metrics.Counter:
    return metrics.get_meter("tms").create_counter(
        "tms_reports_received",
        description="engine reports received by the report intake, by kind (scan, commit) and "
                    "result: accepted, unmatched (no such table in the catalog), denied (out of "
                    "the token's scope), refused (malformed)")


def identifier_candidates(name: str) -> list[tuple[str, str]]:
    """(namespace, table) pairs a reported table name may mean, the engine's catalog name
    dropped first: ``lake.db.t`` -> [("db", "t"), ("lake.db", "t")]."""
    if "/" in name:  # a catalog named by a URI: "thrift://host:9083/db.t"
        name = name.rsplit("/", 1)[1]
        parts = name.split(".")
        return [(".".join(parts[:-1]), parts[-1])] if len(parts) >= 2 else []
    parts = name.split(".")
    out = []
    if len(parts) >= 3:
        out.append((".".join(parts[1:-1]), parts[-1]))
    if len(parts) >= 2:
        out.append((".".join(parts[:-1]), parts[-1]))
    return out


class ReportIntake:
    def __init__(self, store: _Store, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
                 ) -> None:
        self._store = store
        self._clock = clock

    def take(self, principal: Principal, batch: Batch) -> IntakeResult:
        observations: list[ScanObservation | CommitObservation] = [*batch.scans,
                                                                   *batch.commits]
        names = {o.table_name for o in observations}
        tables = self._resolve(batch.catalog, names)
        allowed: dict[str, ReportedTable] = {}
        denied_names = set()
        for name, table in tables.items():
            if principal.allows(table.table_id, table.owner):
                allowed[name] = table
            else:
                denied_names.add(name)
        scans = [(allowed[s.table_name].pk, s) for s in batch.scans if s.table_name in allowed]
        commits = [c for c in batch.commits if c.table_name in allowed]
        if scans:
            self._store.read_add(increments(scans), self._clock())
        new = dup = 0
        if commits:
            outcomes = self._store.commits_notify(_events(commits, allowed))
            new, dup = outcomes.count(True), outcomes.count(False)
        unmatched = [o for o in observations if o.table_name not in tables]
        denied = [o for o in observations if o.table_name in denied_names]
        _count(scans, commits, unmatched, denied, batch.refused)
        return IntakeResult(len(scans), new, dup, len(unmatched), len(denied), batch.refused)

    def _resolve(self, catalog: str, names: set[str]) -> dict[str, ReportedTable]:
        """Each reported name's TMS table, when exactly one of its readings is registered."""
        readings = {n: identifier_candidates(n) for n in names}
        keys = sorted({k for ks in readings.values() for k in ks})
        found = {(t.namespace, t.table_name): t
                 for t in self._store.read_resolve_tables(catalog, keys)}
        out = {}
        for name, ks in readings.items():
            hits = {found[k].pk: found[k] for k in ks if k in found}
            if len(hits) == 1:  # two registered readings: ambiguous, taken for neither
                out[name] = next(iter(hits.values()))
        return out


def may_report(principal: Principal) -> bool:
    return principal.may(Role.REPORTER)


def _events(commits: Sequence[CommitObservation], tables: dict[str, ReportedTable]
            ) -> list[CommitEvent]:
    seen: dict[tuple[str, str], CommitEvent] = {}
    for c in commits:
        table_id = tables[c.table_name].table_id
        seen.setdefault((table_id, str(c.snapshot_id)), CommitEvent(
            table_id, str(c.snapshot_id), None, c.added_data_files, c.added_bytes,
            c.operation))
    return list(seen.values())


def _count(scans: Sequence[tuple[int, ScanObservation]], commits: Sequence[CommitObservation],
           unmatched: Sequence[object], denied: Sequence[object], refused: Sequence[str]
           ) -> None:
    counter = _counter()
    for kind, n in (("scan", len(scans)), ("commit", len(commits))):
        if n:
            counter.add(n, {"kind": kind, "result": "accepted"})
    for result, items in (("unmatched", unmatched), ("denied", denied)):
        for kind in ("scan", "commit"):
            n = sum(1 for o in items if isinstance(o, ScanObservation) == (kind == "scan"))
            if n:
                counter.add(n, {"kind": kind, "result": result})
    if refused:
        counter.add(len(refused), {"kind": "any", "result": "refused"})
