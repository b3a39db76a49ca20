"""How a scheduler decides for one table: find it in its catalog and check where it lives,
inspect it, evaluate its policy, queue what should run (with the table's priority, attempts
and trace), and say when to look again.

The location is read from the catalog at every decision and checked (symlinks resolved)
against the catalog's allowed locations and every other table's location: a table whose
catalog now puts it somewhere it may not be gets no operations, and its decision says why.
The check is reused while the table's state it was read from is the same (an unchanged
Iceberg table: ``checked``, which says why that is safe: the location is checked again
where it is used)."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

import structlog
from opentelemetry import trace

from tms import catalogs, locations, table_boundary
from tms.catalogs import CatalogAccess, CatalogCache
from tms.coordination import Coordinator
from tms.domain import Catalog, Decision, Operation, Table
from tms.domain.holds import Streak
from tms.formats.base import CatalogUnreachable, TableFormatPlugin, TableNotInCatalog
from tms.health import figures as health_figures
from tms.health.figures import Inspection
from tms.observability.metrics import instruments
from tms.observability.tracing import (
    context_from,
    current_traceparent,
    quiet,
    quiet_span,
    tracer,
    unconfigured,
)
from tms.policy.common import (
    DEFAULT_MAX_ATTEMPTS,
    hold_after_failures,
    in_force,
    max_attempts,
    pull_interval_s,
)
from tms.scheduler import holds
from tms.scheduler.checked import CheckedLocations
from tms.scheduler.located import NewLocation, Unsettled, overlap_reason
from tms.storage.roles import DecisionStore, EnqueueParams, HoldStore

INSPECT_FAILURE_RETRY_S = 60.0

log = structlog.get_logger("tms.scheduler")


def decision_span(table: Table, traceparent: str | None) -> Any:
    """The decision's span, continuing the trace of the commit that made the table due.
    With no exporter (``quiet``) a span that records nothing but carries the ids (log lines,
    the ``traceparent`` stored on a queued operation), as the API does per request: a
    fraction of the SDK span's cost at every decision of every unchanged table."""
    if quiet():
        return trace.use_span(quiet_span(context_from(traceparent)), end_on_exit=True)
    if unconfigured():  # no SDK: the API's no-op span would be the parent's, or none
        parent = context_from(traceparent)
        return nullcontext() if parent is None else trace.use_span(
            trace.get_current_span(parent), end_on_exit=False)
    return tracer().start_as_current_span(
        "decide", context=context_from(traceparent),
        attributes={"tms.table": table.table_id, "tms.table_format": table.format})


def usable_benefit(benefit: float | None) -> float | None:
    """A plugin's benefit estimate as stored: finite and not negative, else unknown (None),
    so one odd estimate cannot fail a batch's write or jump the queue."""
    if benefit is None or not math.isfinite(benefit) or benefit < 0:
        return None
    return float(benefit)


class ZooKeeperLost(RuntimeError):
    """The scheduler no longer holds its ZooKeeper session, so no longer its shards."""


class NotUsable(Exception):
    """The table may not be maintained as things stand (its catalog is gone or cannot be
    opened, no longer holds it, or puts it where it may not be); the message says why."""


class _Store(DecisionStore, HoldStore, Protocol):
    """What a decision reads and writes."""


class DecisionMaker:
    """The per-table part of the scheduler; the loop around it picks the tables."""

    store: _Store
    coordinator: Coordinator
    formats: dict[str, TableFormatPlugin]
    queue_priorities: dict[str, int]
    max_attempts_by_action: dict[str, int]
    pull_interval_s: float
    catalogs: CatalogCache
    checked: CheckedLocations
    inspections: dict[int, Inspection]  # the batch's, by table pk (written after it)
    # the catalogs prepare_batch opened for the batch: (catalog as cached, its access)
    _opened: Mapping[str, tuple[Catalog, CatalogAccess]] = {}

    def _located(self, table: Table, plugin: TableFormatPlugin, defer: bool = False
                 ) -> tuple[Table, CatalogAccess, NewLocation | None]:
        """The table with its location read anew from its catalog and checked, and the
        catalog opened. NotUsable says why not; CatalogUnreachable passes (a transient
        failure, retried as a failed inspection). A location that differs from the stored
        one is stored (and compared with every other table's) here, or with ``defer``
        returned as a :class:`NewLocation` for the batch to store (``settle``)."""
        catalog = self.catalogs.get(table.catalog)
        if catalog is None:
            raise NotUsable(f"catalogs/{table.catalog} does not exist")
        opened = self._opened.get(table.catalog)
        try:  # the batch's, when the catalog is the one it opened (secrets resolved once)
            access = opened[1] if opened is not None and opened[0] is catalog else \
                catalogs.access(catalog)
        except ValueError as e:  # SecretError: names the reference, never the value
            raise NotUsable(f"{catalog.name} cannot be opened: {e}") from None
        try:
            raw = plugin.locate(table, access)
        except TableNotInCatalog as e:
            raise NotUsable(f"{catalog.name} no longer holds the table: {e}") from None
        except NotImplementedError as e:
            raise NotUsable(str(e)) from None
        state = plugin.located_state(table, access)
        if self.checked.get(table.pk, state, raw, access.allowed_locations,
                            table.location) is not None:
            return table, access, None  # checked from this same state, stored as it is
        self.checked.forget(table.pk)
        try:
            where = str(locations.check(raw, access.allowed_locations))
        except locations.LocationError as e:
            raise NotUsable(f"location refused for {catalog.name}: {access.scrub(str(e))}"
                            ) from None
        new = NewLocation(state, raw, tuple(access.allowed_locations), where, table.location)
        if where != table.location:
            self._check_boundary(table, plugin, access, where)
            table = replace(table, location=where)
            if defer:
                return table, access, new
            other = self.store.table_set_location(table.pk, where)
            if other is not None:
                raise NotUsable(overlap_reason(where, other))
            new.stored(table)
        self.checked.put(table.pk, state, raw, access.allowed_locations, where)
        return table, access, None

    def _check_boundary(self, table: Table, plugin: TableFormatPlugin, access: CatalogAccess,
                        where: str) -> None:
        """A new location (a first look, a move) must reach no further than the table
        (``tms.table_boundary``): one that equals or contains a warehouse or namespace root,
        or holds another table's files, pauses the table (NotUsable says so and why; the
        decisions, and so ExplainTable, keep the reason). A listing that fails now passes
        as a failed inspection, retried."""
        try:
            table_boundary.check(plugin, replace(table, location=where), access, where)
        except table_boundary.BoundaryRefused as e:
            reason = f"location refused: {access.scrub(str(e))}"
            paused = self.store.table_pause_refused(table.pk)
            log.warning("table location refused", table=table.table_id, paused=paused,
                        reason=reason)
            raise NotUsable(f"table paused: {reason}; fix the table's location, then resume "
                            f"it" if paused else reason) from None

    def prepare_batch(self, tables: Sequence[Table]) -> set[int]:
        """Let each plugin look a batch's tables up per catalog in one call (``prepare``)
        before the decisions start; returns the pks of the tables the plugins expect to
        decide without waiting. Best effort: a failure is logged and every table's decision
        asks its catalog on its own, as it would without this."""
        quick: set[int] = set()
        opened: dict[str, tuple[Catalog, CatalogAccess]] = {}
        self._opened = opened
        groups: dict[tuple[str, str], list[Table]] = {}
        for table in tables:
            groups.setdefault((table.format, table.catalog), []).append(table)
        for (fmt, catalog_id), group in groups.items():
            plugin = self.formats.get(fmt)
            catalog = self.catalogs.get(catalog_id) if plugin is not None else None
            if plugin is None or catalog is None:
                continue  # the decisions say why
            try:
                if catalog_id not in opened:
                    opened[catalog_id] = (catalog, catalogs.access(catalog))
                quick.update(plugin.prepare(group, opened[catalog_id][1]) or ())
            except Exception as e:  # CatalogUnreachable is scrubbed; others: the type only
                log.warning("batch lookup failed; tables asked one by one",
                            catalog=catalog_id, tables=len(group),
                            error=str(e) if isinstance(e, CatalogUnreachable)
                            else type(e).__name__)
        return quick

    def _no_operations(self, plugin: TableFormatPlugin, reason: str, outcome: str
                       ) -> list[tuple[Decision, int | None]]:
        for a in plugin.actions:
            instruments().decisions.add(1, {"action": a, "outcome": outcome})
        return [(Decision(a, False, reason[:2000]), None) for a in plugin.actions]

    def _evaluate(self, table: Table, now: datetime,
                  last_runs: Mapping[str, Operation], defer: bool = False,
                  active: Collection[str] = (), streaks: Mapping[str, Streak] | None = None
                  ) -> tuple[list[tuple[Decision, int | None]], float] | Unsettled:
        """Inspect, evaluate, queue what should run: (decisions with the operation each
        queued, seconds until the next check). Queues nothing once ZooKeeper is lost. With
        ``defer``, a table whose location is new comes back :class:`Unsettled`: judged,
        nothing queued until its batch's new locations are stored (:meth:`settle`).
        ``active``: the table's actions with an operation QUEUED or RUNNING when the batch
        began: not asked to queue again (the answer would be no). ``streaks``: the actions'
        failures in a row and holds (:mod:`tms.scheduler.holds`)."""
        plugin = self.formats.get(table.format)
        if plugin is None:
            log.error("no plugin for format", table=table.table_id, format=table.format)
            return [], INSPECT_FAILURE_RETRY_S
        try:
            table, catalog, new = self._located(table, plugin, defer)
            # from here on the table's policy is the one in force: its catalog's default
            # policy under its own (inspection, evaluation, attempts, next check)
            policy = in_force(plugin.policy_keys, table.policy, catalog.default_policy)
            if policy != table.policy:  # most tables: no catalog default, nothing to replace
                table = replace(table, policy=policy)
            metrics = plugin.inspect(table, catalog)
        except NotUsable as e:
            log.warning("table not usable", table=table.table_id, reason=str(e))
            return (self._no_operations(plugin, f"no operations: {e}", "not_usable"),
                    INSPECT_FAILURE_RETRY_S)
        except Exception as e:  # CatalogUnreachable (scrubbed) or a metadata read
            log.warning("inspection failed", table=table.table_id, error=str(e))
            return (self._no_operations(plugin, f"inspection failed: {e}", "inspection_failed"),
                    INSPECT_FAILURE_RETRY_S)
        try:
            decisions = plugin.evaluate(table, metrics, dict(last_runs), now)
        except Exception as e:  # e.g. a stored policy value that no longer parses
            log.warning("policy evaluation failed", table=table.table_id, error=str(e))
            seen = {k: v for k, v in metrics.items() if not k.startswith("_")}
            failed = Decision("", False, f"policy evaluation failed: {e}"[:2000], seen)
            return [(replace(failed, action=a), None) for a in plugin.actions], \
                INSPECT_FAILURE_RETRY_S
        self._inspected(table, metrics, decisions, last_runs, now)
        judged = self._judge(table, plugin, metrics, decisions, last_runs)
        if streaks:
            judged = self._holds(table, judged, streaks, now)
        if new is not None:
            return Unsettled(table, plugin, new, judged, self.pull_interval(table),
                             current_traceparent(), active)
        return self._queue(table, plugin, judged, current_traceparent(), active), \
            self.pull_interval(table)

    def _inspected(self, table: Table, metrics: Mapping[str, Any],
                   decisions: Sequence[Decision], last_runs: Mapping[str, Operation],
                   now: datetime) -> None:
        """Keep what the inspection measured for the batch's health and history rows; a
        failure here is logged and never fails the decision."""
        try:
            self.inspections[table.pk] = health_figures.inspection(
                table, metrics, decisions, last_runs, now)
        except Exception as e:
            log.warning("health score failed", table=table.table_id, error=repr(e)[:300])

    def _judge(self, table: Table, plugin: TableFormatPlugin, metrics: dict[str, Any],
               decisions: Sequence[Decision], last_runs: Mapping[str, Operation]
               ) -> list[tuple[Decision, str]]:
        """The plugin's decisions as they will be recorded, each with its outcome so far:
        parameters the job would refuse, or a run that changed nothing last time, turn
        "run" into "not queued" and say why."""
        judged: list[tuple[Decision, str]] = []
        for decision in decisions:
            outcome = "not_needed"
            if decision.benefit is not None:
                decision = replace(decision, benefit=usable_benefit(decision.benefit))
            bad = plugin.check_params(decision.action, {
                k: str(v) for k, v in decision.params.items()}) if decision.should_run else []
            if bad:  # the policy made parameters the job would refuse: say so, queue nothing
                outcome = "invalid_params"
                decision = Decision(decision.action, False, f"{decision.reason}; not queued: "
                                    + "; ".join(f"{f}: {w}" for f, w in bad), decision.metrics)
            held = plugin.unchanged_since(table, metrics, decision,
                                          last_runs.get(decision.action)
                                          ) if decision.should_run else None
            if held:  # the same run changed nothing and the table has not changed since
                outcome = "unchanged"
                decision = replace(decision, should_run=False,
                                   reason=f"{decision.reason}; not queued: {held}"[:2000])
            judged.append((decision, outcome))
        return judged

    def _holds(self, table: Table, judged: Sequence[tuple[Decision, str]],
               streaks: Mapping[str, Streak], now: datetime) -> list[tuple[Decision, str]]:
        """Hold an action whose operations failed too often in a row, release a hold that
        no longer applies, and queue nothing for a held action (its decision says why,
        until when and what releases it). Writes are fenced by the version read; losing a
        race to another scheduler's write only leaves this decision as it was."""
        threshold = hold_after_failures(table.policy)
        digest = holds.policy_digest(table.policy)
        out: list[tuple[Decision, str]] = []
        for decision, outcome in judged:
            streak = streaks.get(decision.action)
            verdict = holds.judge(streak, threshold, digest, now)
            if streak is not None and verdict.kind == holds.PLACE:
                assert verdict.held_until is not None
                if self.store.hold_place(streak, verdict.holds, verdict.reason, now,
                                         verdict.held_until, digest):
                    instruments().holds_placed.add(1, {"action": decision.action})
                    log.warning("action held", table=table.table_id, action=decision.action,
                                failures=streak.failures, held_until=str(verdict.held_until),
                                holds=verdict.holds)
                verdict = holds.Verdict(holds.HOLD, holds.held_text(verdict.reason,
                                                                     verdict.held_until))
            elif streak is not None and verdict.kind == holds.RELEASE:
                assert verdict.released_by is not None
                if self.store.hold_release(streak, verdict.released_by, now):
                    log.info("hold released", table=table.table_id, action=decision.action,
                             by=verdict.released_by)
            if verdict.kind == holds.HOLD:
                decision = replace(decision, should_run=False,
                                   reason=f"not queued: {verdict.reason}"[:2000]
                                   if decision.should_run else
                                   f"{decision.reason}; {verdict.reason}"[:2000])
                outcome = "held"
            elif verdict.kind == holds.TRY and decision.should_run:
                decision = replace(decision, reason=f"{decision.reason}; {verdict.reason}"
                                   [:2000])
            out.append((decision, outcome))
        return out

    def _queue(self, table: Table, plugin: TableFormatPlugin,
               judged: Sequence[tuple[Decision, str]], traceparent: str | None,
               active: Collection[str] = ()) -> list[tuple[Decision, int | None]]:
        """Queue what the judged decisions call for: the decisions with the operation each
        queued. Raises ZooKeeperLost (nothing queued) once the session is lost."""
        taken: list[tuple[Decision, int | None]] = []
        for decision, outcome in judged:
            op_id = None
            if decision.should_run:
                if not self.coordinator.healthy:
                    raise ZooKeeperLost("session lost mid-decision; not queueing")
                if decision.action not in active:  # else the INSERT would find it active
                    op_id = self.store.operation_enqueue(EnqueueParams(
                        table, decision.action, "policy", decision.reason,
                        self.max_attempts(table, decision.action), self.priority(table),
                        params=decision.params, metrics=decision.metrics,
                        traceparent=traceparent, benefit=decision.benefit,
                        waits_for=tuple(plugin.waits_for.get(decision.action, ()))))
                if op_id is None:
                    outcome = "already_active"
                    decision = replace(decision, should_run=False, reason=f"{decision.reason}; "
                                       "an operation is already active")
                else:
                    outcome = "queued"
                    log.info("operation queued", table=table.table_id,
                             action=decision.action, operation=op_id, reason=decision.reason)
            taken.append((decision, op_id))
            instruments().decisions.add(1, {"action": decision.action, "outcome": outcome})
        return taken

    def settle(self, pending: Sequence[Unsettled]
               ) -> list[tuple[list[tuple[Decision, int | None]], float] | BaseException]:
        """Store a batch's new locations in one statement (each compared with every other
        table's and with the batch's earlier ones), then queue what each table whose
        location was stored calls for; a refused one gets no operations and says whose
        location it overlaps. In ``pending``'s order; an exception (ZooKeeperLost) in place
        of the result of a table it stopped."""
        if not pending:
            return []
        if not self.coordinator.healthy:  # our shards may be another's by now: not a write
            lost = ZooKeeperLost("session lost mid-decision; not storing locations")
            return [lost for _ in pending]
        clashes = self.store.table_set_locations([(u.table.pk, u.new.where) for u in pending])
        out: list[tuple[list[tuple[Decision, int | None]], float] | BaseException] = []
        for u in pending:
            other = clashes.get(u.table.pk)
            if other is not None:
                self.checked.forget(u.table.pk)
                reason = overlap_reason(u.new.where, other)
                log.warning("table not usable", table=u.table.table_id, reason=reason)
                out.append((self._no_operations(u.plugin, f"no operations: {reason}",
                                                "not_usable"), INSPECT_FAILURE_RETRY_S))
                continue
            u.new.stored(u.table)
            self.checked.put(u.table.pk, u.new.state, u.new.raw, u.new.allowed, u.new.where)
            try:
                out.append((self._queue(u.table, u.plugin, u.judged, u.traceparent,
                                        u.active), u.next_s))
            except ZooKeeperLost as e:
                out.append(e)
            except Exception:  # one table's fault must not stop its batch
                log.exception("decision failed", table=u.table.table_id)
                out.append(([], INSPECT_FAILURE_RETRY_S))
        return out

    def priority(self, table: Table) -> int:
        """An operation's priority: its table's, raised or lowered by its queue's."""
        return table.priority + self.queue_priorities.get(table.queue, 0)

    def max_attempts(self, table: Table, action: str) -> int:
        """The table's limit if its policy in force sets one (its own or its catalog's
        default), else the action's (--max-attempts), else DEFAULT_MAX_ATTEMPTS."""
        return max_attempts(table.policy,
                            self.max_attempts_by_action.get(action, DEFAULT_MAX_ATTEMPTS))

    def pull_interval(self, table: Table) -> float:
        """The table's own heartbeat timeout if it sets a valid one, else the scheduler's
        default; clamped to the key's range whatever is stored."""
        return pull_interval_s(table.policy, self.pull_interval_s)
