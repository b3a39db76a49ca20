"""Tables, request ids and the commit intake (TableStore, IntakeStore)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

from psycopg.errors import UniqueViolation
from psycopg.types.json import Jsonb

from tms.domain import CommitEvent, Table, TableSpec, TableState, TableUpdate, TableView
from tms.storage.postgres import rows
from tms.storage.postgres.db import Db
from tms.storage.queries import q
from tms.storage.roles import TABLE_ORDERS, DuplicateTable, RequestRecord, TableListParams

REQUEST_CLAIM_TRIES = 3
LOCATION_LOCK_KEY = 0x746D735F6C6F63  # "tms_loc": registrations that compare locations
_UPDATABLE = ("owner", "queue", "priority", "policy")
EVENTS_PKEY = "tms_commit_events_pkey"
# After a group met an event already stored, this many of the next groups go straight to the
# statement that skips stored events: a writer replaying commits (retries after a failover)
# does not pay a failed statement per group.
REPLAY_HOLD_GROUPS = 32


class TablesMixin(Db):
    _replay_hold = 0  # groups left to send to the statement that skips stored events

    def _view_of(self, row: dict[str, Any] | None) -> TableView | None:
        if row is None:
            return None
        found = self._one("table_get_by_pk", {"pk": row["id"]})
        return rows.table_view(found) if found else None

    def _after_location_lock(self, name: str, params: dict[str, Any]
                             ) -> list[dict[str, Any]]:
        """Run ``name`` in a transaction that first takes the location lock, so its
        comparison with the other tables sees every registration committed before it.

        Pipelined: BEGIN, the lock, the statement and COMMIT leave in one round trip, so the
        lock is held while the server runs them, not while this thread waits for its turn
        at the interpreter between statements (64 decision threads each writing a first
        look's location queued behind one another that way)."""
        with self._pool.connection() as conn:
            with conn.pipeline(), conn.transaction():
                conn.execute(q("table_lock_locations"), {"key": LOCATION_LOCK_KEY})
                cur = conn.execute(q(name), params)
            found: list[dict[str, Any]] = cur.fetchall()  # type: ignore[assignment]
        return found

    def table_register(self, spec: TableSpec, location: str = "",
                       discovered: bool = False) -> TableView | None:
        params = asdict(spec)
        params.update(policy=Jsonb(spec.policy), location=location, discovered=discovered)
        row = self._after_location_lock("table_insert", params)[0]
        if row["clash_table"] is not None:
            raise DuplicateTable(row["clash_table"], row["clash_what"])
        return self._view_of(row if row["id"] is not None else None)

    def table_set_location(self, table_pk: int, location: str) -> str | None:
        row = self._after_location_lock("table_set_location",
                                        {"pk": table_pk, "location": location})[0]
        return row["clash_table"]  # type: ignore[no-any-return]

    def table_pause_refused(self, table_pk: int) -> bool:
        return self._one("table_pause_refused", {"pk": table_pk}) is not None

    def table_set_locations(self, locations: Sequence[tuple[int, str]]) -> dict[int, str]:
        """A batch's new locations in one statement (one lock, one transaction, one round
        trip) instead of one transaction per table: at a first look at many tables that
        was a third of the scheduler's and PostgreSQL's CPU per table."""
        if not locations:
            return {}
        pks, where = zip(*locations, strict=True)
        found = self._after_location_lock("table_set_locations",
                                          {"pks": list(pks), "locations": list(where)})
        return {r["pk"]: r["clash_table"] for r in found}

    def table_get(self, table_id: str) -> TableView | None:
        row = self._one("table_get", {"table_id": table_id})
        return rows.table_view(row) if row else None

    def table_get_settings(self, table_pk: int) -> Table | None:
        row = self._one("table_get_settings_by_pk", {"pk": table_pk})
        return rows.table(row) if row else None

    def table_list(self, params: TableListParams) -> list[TableView]:
        p = params
        search = None
        if p.search:  # a literal: LIKE's wildcards and escape character escaped
            search = "%" + re.sub(r"([\\%_])", r"\\\1", p.search) + "%"
        found = self._all(TABLE_ORDERS[p.order_by], {
            "after_id": p.after, "limit": p.limit, "format": p.format,
            "state": p.state.value if p.state else None, "owner": p.owner,
            "queue": p.queue, "catalog": p.catalog, "namespace": p.namespace,
            "search": search, "max_health": p.max_health, "min_health": p.min_health,
            "after_key": p.after_key if isinstance(p.after_key, int) else (
                -1 if p.order_by == "health" else 102),
            "after_time": p.after_key if isinstance(p.after_key, datetime | str) else (
                "infinity" if p.order_by.startswith("-") else "-infinity")})
        return [rows.table_view(r) for r in found]

    def table_owners(self, table_ids: Sequence[str]) -> dict[str, str]:
        found = self._all("table_owners", {"table_ids": list(table_ids)})
        return {r["table_id"]: r["owner"] for r in found}

    def table_update(self, table_id: str, update: TableUpdate) -> TableView | None:
        params: dict[str, Any] = {"table_id": table_id}
        for name in _UPDATABLE:
            value = getattr(update, name)
            params[f"set_{name}"] = value is not None
            params[name] = Jsonb(value) if isinstance(value, dict) else value
        return self._view_of(self._one("table_update", params))

    def table_set_state(self, table_id: str, state: TableState, reason: str = ""
                        ) -> TableView | None:
        return self._view_of(self._one("table_set_state", {
            "table_id": table_id, "state": state.value, "reason": reason}))

    def table_pause_outside(self, catalog_id: str,
                             outside: Sequence[tuple[int, str, str]]) -> list[str]:
        if not outside:
            return []
        pks, where, reasons = (list(c) for c in zip(*outside, strict=True))
        found = self._all("table_pause_outside", {
            "catalog_id": catalog_id, "pks": pks, "locations": where, "reasons": reasons})
        return [r["table_id"] for r in found]

    def table_delete(self, table_id: str, force: bool) -> bool:
        return self._one("table_delete", {"table_id": table_id, "force": force}) is not None

    # request ids ----------------------------------------------------------------------------
    def request_claim(self, request_id: str, method: str, fingerprint: str
                      ) -> RequestRecord | None:
        params = {"request_id": request_id, "method": method, "fingerprint": fingerprint}
        for _ in range(REQUEST_CLAIM_TRIES):  # the row may be pruned between the two reads
            with self._pool.connection() as conn:
                if conn.execute(q("request_claim"), params).fetchone() is not None:
                    return None
                row: dict[str, Any] | None = conn.execute(  # type: ignore[assignment]
                    q("request_get"), {"request_id": request_id}).fetchone()
            if row is not None:
                return RequestRecord(row["method"], row["fingerprint"], row["resource"])
        raise RuntimeError(f"request id {request_id!r} neither new nor found")

    def request_set_resource(self, request_id: str, resource: str) -> None:
        self._write("request_set_resource", {"request_id": request_id, "resource": resource})

    def request_forget(self, request_id: str) -> None:
        self._write("request_forget", {"request_id": request_id})

    # intake ---------------------------------------------------------------------------------
    def commits_notify(self, events: Sequence[CommitEvent]) -> list[bool | str | None]:
        """One statement, inserts only; a repeat within the batch counts as a replay.

        Called at the rate of gRPC (a group of NotifyCommit calls, or a NotifyCommits batch of
        up to 1,000): the usual case, new commits without a commit time, takes whole-list
        operations done in C (columns by ``zip``, duplicates by a set, the JSON of the events
        as they are) and the statement answers with the known tables only. A group of new
        commits is written by a plain INSERT (``_events_insert``)."""
        n = len(events)
        if not n:
            return []
        tables, ids, times = list(zip(*events, strict=True))[:3]
        keys = list(zip(tables, ids, strict=True))
        if len(set(keys)) == n:
            first: Sequence[tuple[Any, ...]] = events
        else:  # replays within the batch: only the first of each is sent
            by_key: dict[tuple[str, str], CommitEvent] = {}
            for e in events:
                by_key.setdefault((e.table_id, e.commit_id), e)
            first = list(by_key.values())
        if times.count(None) != n:  # a CommitEvent is a tuple: its JSON is the row the
            first = [e if e[2] is None  # query reads by position
                     else (*e[:2], e[2].isoformat(), *e[3:]) for e in first]
        found = self._events_insert({
            "events": json.dumps(first, separators=(",", ":")), "sent": len(first)})
        known = {t for t, c, _ in found if c is None}
        old = {(t, c) for t, c, f in found if c is not None and f is None}
        refused = {(t, c): f for t, c, f in found if f is not None}
        if len(known) == len(set(tables)) and not old and not refused and len(first) == n:
            return [True] * n  # every table known, every event new
        seen: set[tuple[str, str]] = set()
        out: list[bool | str | None] = []
        for t, key in zip(tables, keys, strict=True):
            if t not in known:
                out.append(None)
            elif key in refused:
                out.append(refused[key])
            else:
                out.append(key not in old and key not in seen)
                seen.add(key)
        return out

    def _events_insert(self, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """``commits_notify``'s answer: (table_id, None, None) per known table, (table_id,
        commit_id, None) per event not recorded because it was stored, (table_id, commit_id,
        format) per event the table's format refused. First as if every event were new
        (``commits_notify_new``, no speculative insertion); an event already stored fails that
        statement on the primary key, nothing of it is written, and the statement that skips
        stored events runs."""
        if self._replay_hold > 0:
            self._replay_hold -= 1  # racy between flushers: only a hint of which to try first
            return self._tuples("commits_notify", params)
        try:
            return self._tuples("commits_notify_new", params)
        except UniqueViolation as e:
            if e.diag.constraint_name != EVENTS_PKEY:
                raise
            self._replay_hold = REPLAY_HOLD_GROUPS
            return self._tuples("commits_notify", params)

    def commits_mark_dirty(self, table_pk: int, traceparent: str | None = None) -> None:
        self._write("commits_mark_dirty", {"pk": table_pk, "traceparent": traceparent})
