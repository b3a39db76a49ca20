"""Table RPCs: register, get, list, update (field mask), deregister, pause, resume."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

import grpc
from google.protobuf import empty_pb2
from google.protobuf.unknown_fields import UnknownFieldSet

from tms import locations
from tms.api import convert, pagination
from tms.api import validate as v
from tms.api.auth import Principal
from tms.api.base import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    MAX_REQUEST_ID_LEN,
    ServicerBase,
    log,
    rpc,
)
from tms.api.errors import ApiError, already_exists, invalid, not_found
from tms.api.registration import RegistrationMixin
from tms.domain import Table, TableSpec, TableState, TableUpdate, TableView
from tms.storage.roles import TABLE_ORDERS, DuplicateTable, TableListParams
from tms.v1 import tms_pb2

UPDATABLE_PATHS = ("owner", "queue", "priority", "policy")
CATALOG_ID_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
REMOVED_TABLE_FIELDS = {7: "catalog_properties"}  # reserved in the proto
MAX_SEARCH_LEN = 200


def _removed_fields(p: v.Problems, table: tms_pb2.Table) -> None:
    """An old client's inline catalog properties arrive as an unknown field: refused, not
    silently dropped, so nobody believes they still choose a table's connection."""
    for f in UnknownFieldSet(table):
        name = REMOVED_TABLE_FIELDS.get(f.field_number)
        if name:
            p.append((f"table.{name}", "no longer accepted: a table names a catalog (a "
                                       "Catalog resource an admin creates) and its namespace "
                                       "and table_name"))
            return


def _page_key(view: TableView, order: str) -> str | list[object]:
    """What a page token carries for the last row of a page in ``order``."""
    t, stats = view.table, view.stats
    if order == "name":
        return t.table_id
    if order in ("health", "-health"):
        missing = 101 if order == "health" else -1  # never inspected: last either way
        return [missing if stats.health_score is None else stats.health_score, t.table_id]
    at = stats.last_commit_time
    return [at.astimezone(UTC).isoformat() if at else "-infinity", t.table_id]


def _valid_key(key: object, order: str) -> bool:
    """A page token's [key, table_id], checked like any input (tokens are not signed)."""
    if not isinstance(key, list) or len(key) != 2 or not isinstance(key[1], str) \
            or not v.TABLE_ID_RE.fullmatch(key[1]):
        return False
    if order in ("health", "-health"):
        return isinstance(key[0], int) and not isinstance(key[0], bool) and -1 <= key[0] <= 101
    if not isinstance(key[0], str) or len(key[0]) > 40:
        return False
    if key[0] == "-infinity":
        return True
    try:
        return datetime.fromisoformat(key[0]).tzinfo is not None
    except ValueError:
        return False


def _spec_of(t: Table) -> TableSpec:
    return TableSpec(t.table_id, t.format, t.catalog, t.namespace, t.table_name, t.base_path,
                     t.owner, t.queue, t.priority, t.policy)


def _duplicate(e: DuplicateTable) -> ApiError:
    """ALREADY_EXISTS naming the registration that holds the same physical table."""
    other = f"tables/{e.table_id}"
    why = ("the same catalog and identifier" if e.what == "identifier" else
           "a location equal to, inside or containing this one")
    return ApiError(grpc.StatusCode.ALREADY_EXISTS,
                    f"{other} is the same physical table ({why})", "ALREADY_EXISTS",
                    metadata={"resource": other})


def _missing(name: str) -> ApiError:
    """A MISSING table neither resumes nor pauses: nothing is scheduled for it, and only
    discovery, finding it in its catalog again at a checked location, makes it ACTIVE."""
    return ApiError(grpc.StatusCode.FAILED_PRECONDITION,
                    f"{name} is MISSING: its catalog no longer holds it, so there is nothing "
                    "to maintain; it becomes ACTIVE by itself when catalog discovery finds it "
                    "again, or deregister it", "TABLE_MISSING", metadata={"resource": name})


class TablesMixin(RegistrationMixin, ServicerBase):
    def validate_spec(self, p: v.Problems, s: TableSpec) -> None:
        plugin = self.formats.get(s.format)
        known = ", ".join(sorted(self.formats))
        if not s.format:
            p.append(("table.format", f"required; one of: {known}"))
        elif plugin is None:
            p.append(("table.format", f"unknown format {s.format[:40]!r}; one of: {known}"))
        v.pattern(p, "table.catalog", s.catalog, CATALOG_ID_RE,
                  "a catalog id (1-63 of a-z 0-9 _, starting with a letter)")
        v.string(p, "table.namespace", s.namespace)
        v.string(p, "table.table_name", s.table_name)
        v.path(p, "table.base_path", s.base_path)
        if not s.table_name and not s.base_path:
            p.append(("table.table_name", "table_name or base_path is required"))
        v.string_map(p, "table.policy", s.policy)
        v.string(p, "table.owner", s.owner, v.MAX_OWNER_LEN)
        v.pattern(p, "table.queue", s.queue, v.QUEUE_RE, "1-63 of a-z 0-9 _ -")
        if not -1000 <= s.priority <= 1000:
            p.append(("table.priority", f"must be between -1000 and 1000, got {s.priority}"))
        if plugin is not None and not p:
            p.extend(plugin.validate(s))
            p.extend(plugin.check_policy(s.policy))
        if plugin is not None and not p:  # the policy in force: over the catalog's default
            catalog = self.store.catalog_get(s.catalog)
            if catalog is not None:
                p.extend(plugin.check_policy_in_force(s.policy, catalog.spec.default_policy))

    @rpc
    def RegisterTable(self, request: tms_pb2.RegisterTableRequest, context: grpc.ServicerContext,
                      principal: Principal) -> tms_pb2.Table:
        p: v.Problems = []
        v.pattern(p, "table_id", request.table_id, v.TABLE_ID_RE,
                  "1-63 of a-z 0-9 _ . - starting with a letter")
        v.string(p, "request_id", request.request_id, MAX_REQUEST_ID_LEN)
        if not request.HasField("table"):
            raise invalid([*p, ("table", "required")])
        t = request.table
        _removed_fields(p, t)
        spec = TableSpec(
            table_id=request.table_id, format=t.format, catalog=t.catalog,
            namespace=t.namespace, table_name=t.table_name, base_path=t.base_path,
            owner=t.owner, queue=t.queue or "default", priority=t.priority,
            policy=dict(t.policy),
        )
        self.validate_spec(p, spec)
        if p:
            raise invalid(p)
        self.check_scope(principal, spec.table_id, spec.owner)
        catalog = self.catalog_for(spec, principal)
        if request.request_id:
            earlier = self.replay(request.request_id, "RegisterTable", request)
            if earlier is not None:
                return self._get(earlier.removeprefix("tables/"), principal, earlier)
        try:
            location = self.locate_checked(spec, catalog)
            try:
                rec = self.store.table_register(spec, location)
            except DuplicateTable as e:
                raise _duplicate(e) from None
            if rec is None:
                raise already_exists(f"tables/{spec.table_id}")
        except BaseException:
            if request.request_id:
                self.store.request_forget(request.request_id)
            raise
        if request.request_id:
            self.store.request_set_resource(request.request_id, rec.table.name)
        log.info("table registered", table=spec.table_id, format=spec.format,
                 catalog=spec.catalog, location=location, principal=principal.name)
        return convert.table_to_pb(rec)

    def _get(self, table_id: str, principal: Principal, resource: str) -> tms_pb2.Table:
        return convert.table_to_pb(self.load_table(table_id, principal, resource))

    def _name(self, name: str, field: str = "name") -> str:
        p: v.Problems = []
        table_id = v.table_name(p, field, name)
        if p:
            raise invalid(p)
        return table_id

    @rpc
    def GetTable(self, request: tms_pb2.GetTableRequest, context: grpc.ServicerContext,
                 principal: Principal) -> tms_pb2.Table:
        return self._get(self._name(request.name), principal, request.name)

    @rpc
    def ListTables(self, request: tms_pb2.ListTablesRequest, context: grpc.ServicerContext,
                   principal: Principal) -> tms_pb2.ListTablesResponse:
        p: v.Problems = []
        size = v.page_size(p, request.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        v.string(p, "format", request.format, 32)
        v.string(p, "owner", request.owner, v.MAX_OWNER_LEN)
        v.pattern(p, "queue", request.queue, v.QUEUE_RE, "a queue name", required=False)
        v.pattern(p, "catalog", request.catalog, CATALOG_ID_RE, "a catalog id", required=False)
        v.string(p, "namespace", request.namespace)
        v.string(p, "search", request.search, MAX_SEARCH_LEN)
        bounds: dict[str, int | None] = {}
        for field in ("max_health", "min_health"):
            value = getattr(request, field) if request.HasField(field) else None
            if value is not None and not 0 <= value <= 100:
                p.append((field, f"must be between 0 and 100, got {value}"))
            bounds[field] = value
        order = request.order_by or "name"
        if order not in TABLE_ORDERS:
            p.append(("order_by", f"unknown order {request.order_by[:40]!r}; one of: "
                                  + ", ".join(TABLE_ORDERS)))
        state = None
        if request.state not in tms_pb2.Table.State.values():
            p.append(("state", f"unknown state {request.state}"))
        elif request.state:
            state = TableState(tms_pb2.Table.State.Name(request.state))
        query: dict[str, object] = {
            "m": "tables", "format": request.format, "state": request.state,
            "owner": request.owner, "queue": request.queue, "catalog": request.catalog}
        # added only when set, so a page token of a query without them stays valid
        extra = {"namespace": request.namespace, "search": request.search,
                 "order_by": request.order_by, **bounds}
        query.update({k: x for k, x in extra.items() if x not in ("", None)})
        after, after_key = self._table_page(p, request.page_token, query, order)
        if p:
            raise invalid(p)
        rows = self.store.table_list(TableListParams(
            after, size + 1, request.format or None, state, request.owner or None,
            request.queue or None, request.catalog or None, request.namespace or None,
            request.search or None, bounds["max_health"], bounds["min_health"], order,
            after_key))
        more = len(rows) > size
        rows = rows[:size]
        token = pagination.encode(query, _page_key(rows[-1], order)) if more else ""
        # a scoped token sees only its tables (a page may then hold fewer than page_size)
        visible = [r for r in rows if principal.allows(r.table.table_id, r.table.owner)]
        return tms_pb2.ListTablesResponse(tables=[convert.table_to_pb(r) for r in visible],
                                          next_page_token=token)

    def _table_page(self, p: v.Problems, token: str, query: dict[str, object], order: str
                    ) -> tuple[str, int | datetime | str | None]:
        """(table_id, the order's key) of the row a page token continues after."""
        if order == "name" or order not in TABLE_ORDERS:
            return self.page_token(p, token, query, str, "",
                                   lambda k: bool(v.TABLE_ID_RE.fullmatch(k))), None
        found = self.page_token(p, token, query, list, None, lambda k: _valid_key(k, order))
        if found is None:
            return "", None
        key, table_id = found
        if key == "-infinity":  # a page that ended among tables never committed to
            return table_id, key
        return table_id, (datetime.fromisoformat(key) if isinstance(key, str) else int(key))

    @rpc
    def UpdateTable(self, request: tms_pb2.UpdateTableRequest, context: grpc.ServicerContext,
                    principal: Principal) -> tms_pb2.Table:
        if not request.HasField("table"):
            raise invalid([("table", "required")])
        table_id = self._name(request.table.name, "table.name")
        paths = list(request.update_mask.paths)
        bad = [x for x in paths if x not in UPDATABLE_PATHS]
        if not paths or bad:
            raise invalid([("update_mask", f"paths must be among {', '.join(UPDATABLE_PATHS)}"
                                           + (f"; not {bad[0][:40]!r}" if bad else ""))])
        current = self.load_table(table_id, principal, request.table.name).table
        t = request.table
        changes = TableUpdate(
            owner=t.owner if "owner" in paths else None,
            queue=(t.queue or "default") if "queue" in paths else None,
            priority=t.priority if "priority" in paths else None,
            policy=dict(t.policy) if "policy" in paths else None,
        )
        merged = replace(_spec_of(current), **{
            k: getattr(changes, k) for k in UPDATABLE_PATHS if getattr(changes, k) is not None})
        p: v.Problems = []
        self.validate_spec(p, merged)
        if p:
            raise invalid(p)
        self.check_scope(principal, merged.table_id, merged.owner)
        if changes.owner is not None and changes.owner != current.owner:
            catalog = self.store.catalog_get(current.catalog)  # the new owner must be admitted
            if catalog is not None:
                self.check_admitted(principal, catalog, merged.owner)
        rec = self.store.table_update(table_id, changes)
        if rec is None:
            raise not_found(request.table.name)
        log.info("table updated", table=table_id, paths=paths, principal=principal.name)
        return convert.table_to_pb(rec)

    @rpc
    def DeregisterTable(self, request: tms_pb2.DeregisterTableRequest,
                        context: grpc.ServicerContext, principal: Principal) -> empty_pb2.Empty:
        table_id = self._name(request.name)
        self.load_table(table_id, principal, request.name)
        if not self.store.table_delete(table_id, request.force):
            if self.store.table_get(table_id) is None:
                raise not_found(request.name)
            raise ApiError(grpc.StatusCode.FAILED_PRECONDITION,
                           f"{request.name} has a running operation; cancel it or use force",
                           "OPERATION_RUNNING", metadata={"resource": request.name})
        log.info("table deregistered", table=table_id, principal=principal.name)
        return empty_pb2.Empty()

    def _set_state(self, name: str, principal: Principal, state: TableState) -> tms_pb2.Table:
        table_id = self._name(name)
        table = self.load_table(table_id, principal, name).table
        if table.state is TableState.MISSING:
            raise _missing(name)
        if state is TableState.ACTIVE:
            self._check_still_allowed(table, name)
        reason = (f"paused by {principal.name}" if state is TableState.PAUSED else "")
        rec = self.store.table_set_state(table_id, state, reason)
        if rec is None:
            found = self.store.table_get(table_id)
            if found is not None and found.table.state is TableState.MISSING:
                raise _missing(name)  # discovery marked it meanwhile
            raise not_found(name)
        log.info("table state set", table=table_id, state=state.value, principal=principal.name)
        return convert.table_to_pb(rec)

    def _check_still_allowed(self, table: Table, name: str) -> None:
        """A table resumes only where its catalog still allows it (an UpdateCatalog may have
        paused it for lying outside): FAILED_PRECONDITION saying where, else nothing."""
        catalog = self.store.catalog_get(table.catalog)
        if catalog is None or not table.location:
            return  # no location checked yet: the scheduler checks it before any use
        try:
            locations.check(table.location, catalog.spec.allowed_locations)
        except locations.LocationError as e:
            raise ApiError(grpc.StatusCode.FAILED_PRECONDITION,
                           f"{name} cannot resume: {catalog.name} no longer allows its "
                           f"location ({e}); deregister it, or ask an admin to allow the "
                           "location again", "LOCATION_NOT_ALLOWED",
                           metadata={"resource": name, "catalog": catalog.name}) from None

    @rpc
    def PauseTable(self, request: tms_pb2.PauseTableRequest, context: grpc.ServicerContext,
                   principal: Principal) -> tms_pb2.Table:
        return self._set_state(request.name, principal, TableState.PAUSED)

    @rpc
    def ResumeTable(self, request: tms_pb2.ResumeTableRequest, context: grpc.ServicerContext,
                    principal: Principal) -> tms_pb2.Table:
        out = self._set_state(request.name, principal, TableState.ACTIVE)
        # an action held after failing too often in a row is released too: the failures so
        # far stop counting (the table is checked at once, as after a pause)
        table = self.load_table(self._name(request.name), principal, request.name).table
        released = self.store.hold_release_table(table.pk)
        if released:
            log.info("held actions released", table=table.table_id, actions=released,
                     principal=principal.name)
        return out
