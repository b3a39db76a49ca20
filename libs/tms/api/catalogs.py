"""Catalog RPCs: create, get, list, update (field mask), delete. Unscoped admins only.

A catalog holds the platform's connection to a catalog server, its credentials (as
references), its storage options and the locations its tables may live in: whoever manages
catalogs decides where TMS reads and deletes files. So a token limited to some tables or
owners, even with the admin role, may not touch them (as with queues), and nothing of a
catalog but its id, type, the principal and the changed field names is ever logged.
"""

from __future__ import annotations

from dataclasses import replace

import grpc
from google.protobuf import empty_pb2

from tms import locations
from tms.api import catalog_checks as checks
from tms.api import convert, pagination
from tms.api import validate as v
from tms.api.auth import Principal, permission_denied
from tms.api.base import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, ServicerBase, log, rpc
from tms.api.errors import ApiError, already_exists, invalid, not_found
from tms.domain import (
    Catalog,
    CatalogDeleteResult,
    CatalogDiscovery,
    CatalogSpec,
    CatalogType,
    CatalogUpdate,
    TableState,
)
from tms.domain.catalogs import DEFAULT_DISCOVERY_INTERVAL_S
from tms.v1 import tms_pb2

CATALOG_PREFIX = "catalogs/"
UPDATABLE_PATHS = ("properties", "secrets", "storage_options", "allowed_locations",
                   "allowed_owners", "allowed_tokens", "discovery", "default_policy")
DEFAULT_QUEUE = "default"
MAX_REASON_CHARS = 1000  # tms_tables.state_reason's bound
MAX_LOGGED_TABLES = 20
MAX_TABLE_PROBLEMS = 5  # tables named when a default policy would break theirs


def discovery_of(d: tms_pb2.CatalogDiscovery) -> CatalogDiscovery:
    """The settings of a request's discovery (its output-only status is ignored)."""
    return CatalogDiscovery(
        enabled=d.enabled, include=tuple(d.include), exclude=tuple(d.exclude),
        queue=d.queue or DEFAULT_QUEUE, owner=d.owner, priority=d.priority,
        interval_s=d.interval_s or DEFAULT_DISCOVERY_INTERVAL_S)


def spec_of(catalog_id: str, ctype: CatalogType, c: tms_pb2.Catalog) -> CatalogSpec:
    return CatalogSpec(
        catalog_id=catalog_id, type=ctype, properties=dict(c.properties),
        secrets=dict(c.secrets), storage_options=dict(c.storage_options),
        allowed_locations=tuple(c.allowed_locations), allowed_owners=tuple(c.allowed_owners),
        allowed_tokens=tuple(c.allowed_tokens), default_policy=dict(c.default_policy),
        discovery=discovery_of(c.discovery))


def _update_of(spec: CatalogSpec, paths: list[str]) -> CatalogUpdate:
    return CatalogUpdate(**{k: getattr(spec, k) for k in UPDATABLE_PATHS if k in paths})


class CatalogsMixin(ServicerBase):
    @staticmethod
    def _catalog_admin(principal: Principal) -> None:
        """Checked before anything else, so a scoped token learns nothing (not even whether
        a catalog exists)."""
        if principal.scoped:
            raise permission_denied(f"token {principal.name!r} is limited to some tables or "
                                    "owners; catalogs need an unscoped admin token")

    @staticmethod
    def _catalog_id(name: str, field: str = "name") -> str:
        p: v.Problems = []
        if not name:
            p.append((field, "required"))
        elif not name.startswith(CATALOG_PREFIX) or not checks.CATALOG_ID_RE.fullmatch(
                name[len(CATALOG_PREFIX):]):
            p.append((field, f"must be catalogs/{{catalog_id}} ({checks.CATALOG_ID_WHAT}), "
                             f"got {name[:80]!r}"))
        if p:
            raise invalid(p)
        return name[len(CATALOG_PREFIX):]

    def _check(self, p: v.Problems, spec: CatalogSpec, type_known: bool = True) -> None:
        checks.check_spec(p, "catalog", spec, type_known=type_known,
                          outer=self.allowlist.locations, formats=self.formats)
        if p:
            raise invalid(p)

    def _load_catalog(self, catalog_id: str) -> Catalog:
        found = self.store.catalog_get(catalog_id)
        if found is None:
            raise not_found(CATALOG_PREFIX + catalog_id)
        return found

    @rpc
    def CreateCatalog(self, request: tms_pb2.CreateCatalogRequest,
                      context: grpc.ServicerContext, principal: Principal) -> tms_pb2.Catalog:
        self._catalog_admin(principal)
        p: v.Problems = []
        v.pattern(p, "catalog_id", request.catalog_id, checks.CATALOG_ID_RE,
                  checks.CATALOG_ID_WHAT)
        if not request.HasField("catalog"):
            raise invalid([*p, ("catalog", "required")])
        ctype = checks.type_of(p, "catalog.type", request.catalog.type)
        spec = spec_of(request.catalog_id, ctype or CatalogType.HADOOP, request.catalog)
        self._check(p, spec, type_known=ctype is not None)
        created = self.store.catalog_create(spec)
        if created is None:
            raise already_exists(CATALOG_PREFIX + spec.catalog_id)
        log.info("catalog created", catalog=spec.catalog_id, type=spec.type.value,
                 principal=principal.name)
        return convert.catalog_to_pb(created)

    @rpc
    def GetCatalog(self, request: tms_pb2.GetCatalogRequest, context: grpc.ServicerContext,
                   principal: Principal) -> tms_pb2.Catalog:
        self._catalog_admin(principal)
        return convert.catalog_to_pb(self._load_catalog(self._catalog_id(request.name)))

    @rpc
    def ListCatalogs(self, request: tms_pb2.ListCatalogsRequest,
                     context: grpc.ServicerContext,
                     principal: Principal) -> tms_pb2.ListCatalogsResponse:
        self._catalog_admin(principal)
        p: v.Problems = []
        size = v.page_size(p, request.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        query = {"m": "catalogs"}
        after = self.page_token(p, request.page_token, query, str, "",
                                lambda k: bool(checks.CATALOG_ID_RE.fullmatch(k)))
        if p:
            raise invalid(p)
        rows = self.store.catalog_list(after, size + 1)
        more = len(rows) > size
        rows = rows[:size]
        token = pagination.encode(query, rows[-1].catalog_id) if more else ""
        return tms_pb2.ListCatalogsResponse(catalogs=[convert.catalog_to_pb(c) for c in rows],
                                            next_page_token=token)

    def _check_tables_in_force(self, catalog_id: str, default_policy: dict[str, str]) -> None:
        """A new default policy must leave every table of the catalog a policy in force whose
        keys agree with each other (a table's own key beside the catalog's new one):
        INVALID_ARGUMENT naming the catalog's key and the first tables it would break."""
        problems: list[tuple[str, str]] = []
        for found in self.store.table_list_by_catalog(catalog_id):
            plugin = self.formats.get(found.table.format)
            if plugin is None:
                continue
            for field, why in plugin.check_policy_in_force(
                    found.table.policy, default_policy, "catalog.default_policy",
                    blame="catalog default policy"):
                problems.append((field, f"in force for {found.table.name}: {why}"))
            if len(problems) >= MAX_TABLE_PROBLEMS:
                break
        if problems:
            raise invalid(problems)

    def _pause_outside(self, catalog: Catalog) -> list[str]:
        """Re-check the catalog's ACTIVE tables against its (new) allowed locations and pause,
        with the reason, those now outside (their queued operations cancelled): nothing is
        done to a table where its catalog no longer allows it."""
        prefixes = locations.resolved_prefixes(catalog.spec.allowed_locations)
        outside = []
        for found in self.store.table_list_by_catalog(catalog.catalog_id):
            if found.table.state is not TableState.ACTIVE or not found.location:
                continue
            try:
                locations.check_resolved(found.location, prefixes)
            except locations.LocationError as e:
                outside.append((found.table.pk, found.location,
                                f"paused: {catalog.name} no longer allows its location ({e})"
                                [:MAX_REASON_CHARS]))
        paused = self.store.table_pause_outside(catalog.catalog_id, outside)
        if paused:
            log.warning("tables paused: outside their catalog's allowed locations",
                        catalog=catalog.catalog_id, tables=paused[:MAX_LOGGED_TABLES],
                        count=len(paused))
        return paused

    @rpc
    def UpdateCatalog(self, request: tms_pb2.UpdateCatalogRequest,
                      context: grpc.ServicerContext, principal: Principal) -> tms_pb2.Catalog:
        self._catalog_admin(principal)
        if not request.HasField("catalog"):
            raise invalid([("catalog", "required")])
        catalog_id = self._catalog_id(request.catalog.name, "catalog.name")
        paths = list(request.update_mask.paths)
        bad = [x for x in paths if x not in UPDATABLE_PATHS]
        if not paths or bad:
            raise invalid([("update_mask", f"paths must be among {', '.join(UPDATABLE_PATHS)}"
                                           + (f"; not {bad[0][:40]!r}" if bad else ""))])
        current = self._load_catalog(catalog_id).spec
        given = spec_of(catalog_id, current.type, request.catalog)
        merged = replace(current, **{k: getattr(given, k) for k in UPDATABLE_PATHS
                                     if k in paths})
        self._check([], merged)
        if "default_policy" in paths:
            self._check_tables_in_force(catalog_id, merged.default_policy)
        updated = self.store.catalog_update(catalog_id, _update_of(merged, paths))
        if updated is None:
            raise not_found(request.catalog.name)
        if "allowed_locations" in paths:
            self._pause_outside(updated)
        log.info("catalog updated", catalog=catalog_id, type=current.type.value,
                 paths=sorted(set(paths)), principal=principal.name)
        return convert.catalog_to_pb(updated)

    @rpc
    def DeleteCatalog(self, request: tms_pb2.DeleteCatalogRequest,
                      context: grpc.ServicerContext, principal: Principal) -> empty_pb2.Empty:
        self._catalog_admin(principal)
        catalog_id = self._catalog_id(request.name)
        result = self.store.catalog_delete(catalog_id)
        if result is CatalogDeleteResult.NOT_FOUND:
            raise not_found(request.name)
        if result is CatalogDeleteResult.IN_USE:
            found = self.store.catalog_get(catalog_id)
            count = found.table_count if found is not None else 0
            raise ApiError(grpc.StatusCode.FAILED_PRECONDITION,
                           f"{request.name} is in use by {count} table(s); deregister them "
                           "first", "CATALOG_IN_USE",
                           metadata={"resource": request.name, "table_count": str(count)})
        log.info("catalog deleted", catalog=catalog_id, principal=principal.name)
        return empty_pb2.Empty()
