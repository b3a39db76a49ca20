"""What a registration must pass beyond the request's shape: the catalog exists and suits the
format, it admits the caller, it really holds the table, and the table's real location (read
from the catalog, never from the request) lies inside the catalog's allowed locations and the
API's outer bound. Table owners are not trusted: each check stands on its own.
"""

from __future__ import annotations

from datetime import UTC, datetime

import grpc

from tms import catalogs, locations, table_boundary
from tms.api.auth import Principal, permission_denied
from tms.api.base import ServicerBase, log
from tms.api.errors import ApiError, invalid, not_found, unavailable
from tms.domain import Catalog, Table, TableSpec, TableState
from tms.formats.base import CatalogUnreachable, TableNotInCatalog
from tms.secrets import SecretError


def table_of(spec: TableSpec, location: str = "") -> Table:
    """The table a spec describes, before it has a row (for the plugin's locate)."""
    now = datetime.now(UTC)
    return Table(pk=0, table_id=spec.table_id, format=spec.format, catalog=spec.catalog,
                 namespace=spec.namespace, table_name=spec.table_name,
                 base_path=spec.base_path, owner=spec.owner, queue=spec.queue,
                 priority=spec.priority, policy=dict(spec.policy), state=TableState.ACTIVE,
                 created_at=now, updated_at=now, location=location)


def identifier(spec: TableSpec) -> str:
    return spec.base_path or f"{spec.namespace}.{spec.table_name}"


class RegistrationMixin(ServicerBase):
    def catalog_for(self, spec: TableSpec, principal: Principal) -> Catalog:
        """The table's catalog: NOT_FOUND if unknown, INVALID_ARGUMENT if its type does not
        suit the format, PERMISSION_DENIED if it does not admit the caller."""
        name = f"catalogs/{spec.catalog}"
        catalog = self.store.catalog_get(spec.catalog)
        if catalog is None:
            raise not_found(name)
        plugin = self.formats[spec.format]
        if plugin.catalog_types and catalog.spec.type not in plugin.catalog_types:
            kinds = ", ".join(t.value for t in plugin.catalog_types)
            raise invalid([("table.catalog", f"{name} is a {catalog.spec.type.value} catalog; "
                                             f"{spec.format} tables live in: {kinds}")])
        self.check_admitted(principal, catalog, spec.owner)
        return catalog

    @staticmethod
    def check_admitted(principal: Principal, catalog: Catalog, owner: str) -> None:
        """Admin always; otherwise the catalog must name the token (allowed_tokens), or the
        table's owner (allowed_owners) when that owner is in the token's own owner scope."""
        if principal.admin or principal.name in catalog.spec.allowed_tokens:
            return
        if owner and owner in catalog.spec.allowed_owners and owner in principal.owners:
            return
        raise permission_denied(
            f"token {principal.name!r} may not register tables for owner {owner[:80]!r} in "
            f"{catalog.name}: the catalog admits neither (allowed_owners / allowed_tokens)",
            catalog=catalog.name)

    def locate_checked(self, spec: TableSpec, catalog: Catalog) -> str:
        """The table's real location from its catalog, checked (symlinks resolved) against
        the catalog's allowed locations and the API's --allowed-locations, and against the
        table's boundary (:meth:`check_boundary`)."""
        plugin = self.formats[spec.format]
        try:
            access = catalogs.access(catalog)
        except SecretError as e:  # names the reference, never a value
            raise ApiError(grpc.StatusCode.FAILED_PRECONDITION,
                           f"{catalog.name} cannot be opened: {e}", "CATALOG_MISCONFIGURED",
                           metadata={"catalog": catalog.name}) from None
        try:
            raw = plugin.locate(table_of(spec), access)
        except TableNotInCatalog as e:
            raise ApiError(grpc.StatusCode.FAILED_PRECONDITION,
                           f"{catalog.name} does not hold {identifier(spec)[:300]!r}: "
                           f"{access.scrub(str(e))[:500]}", "TABLE_NOT_IN_CATALOG",
                           metadata={"catalog": catalog.name}) from None
        except locations.LocationError as e:  # a claimed location outside the catalog's
            raise permission_denied(f"{identifier(spec)[:300]!r} lives where {catalog.name} "
                                    f"allows no tables: {access.scrub(str(e))}",
                                    catalog=catalog.name) from None
        except ValueError as e:  # the catalog's configuration cannot be used to open it
            raise ApiError(grpc.StatusCode.FAILED_PRECONDITION,
                           f"{catalog.name} cannot be used: {access.scrub(str(e))[:500]}",
                           "CATALOG_MISCONFIGURED", metadata={"catalog": catalog.name}) from None
        except CatalogUnreachable as e:
            # the client's message names hosts and paths from the catalog's properties: the
            # caller gets it (scrubbed), the log only its kind (no property value is logged)
            log.warning("catalog unreachable", catalog=catalog.catalog_id,
                        error_type=type(e.__cause__ or e).__name__)
            raise unavailable(f"{catalog.name} cannot be reached: "
                              f"{access.scrub(str(e))[:500]}") from None
        try:
            where = str(locations.check(raw, catalog.spec.allowed_locations))
        except locations.LocationError as e:
            raise permission_denied(f"{identifier(spec)[:300]!r} lives where {catalog.name} "
                                    f"allows no tables: {access.scrub(str(e))}",
                                    catalog=catalog.name,
                                    location=access.scrub(raw)[:300]) from None
        outer = self.allowlist.check(where)
        if outer:
            raise permission_denied(f"{identifier(spec)[:300]!r}: {outer}", location=where)
        self.check_boundary(spec, catalog, access, where)
        return where

    def check_boundary(self, spec: TableSpec, catalog: Catalog, access: catalogs.CatalogAccess,
                       where: str) -> None:
        """The table's location reaches no further than the table (``tms.table_boundary``):
        FAILED_PRECONDITION naming the location and what it would reach, UNAVAILABLE when
        its storage cannot be listed now."""
        if self.store.table_find_overlapping(where) is not None:
            return  # the registration is refused as a duplicate, naming the other table
        plugin = self.formats[spec.format]
        others = table_boundary.other_catalog_roots(table_boundary.list_catalogs(self.store),
                                                    catalog.catalog_id)
        try:
            table_boundary.check(plugin, table_of(spec, where), access, where, others)
        except table_boundary.BoundaryRefused as e:
            raise ApiError(grpc.StatusCode.FAILED_PRECONDITION,
                           f"table location refused for {identifier(spec)[:300]!r} in "
                           f"{catalog.name}: {access.scrub(str(e))[:1500]}", "TABLE_BOUNDARY",
                           [("location", access.scrub(str(e))[:1500])],
                           metadata={"catalog": catalog.name, "location": where[:300]}
                           ) from None
        except TableNotInCatalog as e:
            raise ApiError(grpc.StatusCode.FAILED_PRECONDITION,
                           f"{catalog.name} does not hold {identifier(spec)[:300]!r}: "
                           f"{access.scrub(str(e))[:500]}", "TABLE_NOT_IN_CATALOG",
                           metadata={"catalog": catalog.name}) from None
        except (table_boundary.BoundaryUnavailable, CatalogUnreachable) as e:
            raise unavailable(f"the location of {identifier(spec)[:300]!r} cannot be checked "
                              f"for other tables' files now: {access.scrub(str(e))[:500]}"
                              ) from None
