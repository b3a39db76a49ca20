"""Catalogs (CatalogStore): operator-owned catalog connections, stored with secret
references only."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from tms.domain import (
    Catalog,
    CatalogDeleteResult,
    CatalogDiscovery,
    CatalogSpec,
    CatalogType,
    CatalogUpdate,
    DiscoveryStatus,
)
from tms.storage.postgres.db import Db

_MAPS = ("properties", "secrets", "storage_options", "default_policy")
_LISTS = ("allowed_locations", "allowed_owners", "allowed_tokens")


def catalog_of(row: dict[str, Any]) -> Catalog:
    spec = CatalogSpec(
        catalog_id=row["catalog_id"], type=CatalogType(row["type"]),
        properties=dict(row["properties"]), secrets=dict(row["secrets"]),
        storage_options=dict(row["storage_options"]),
        allowed_locations=tuple(row["allowed_locations"]),
        allowed_owners=tuple(row["allowed_owners"]),
        allowed_tokens=tuple(row["allowed_tokens"]),
        default_policy=dict(row["default_policy"]),
        discovery=CatalogDiscovery(
            enabled=row["discovery_enabled"], include=tuple(row["discovery_include"]),
            exclude=tuple(row["discovery_exclude"]), queue=row["discovery_queue"],
            owner=row["discovery_owner"], priority=row["discovery_priority"],
            interval_s=row["discovery_interval_s"]))
    status = DiscoveryStatus(
        next_at=row["discovery_next_at"], last_at=row["discovery_last_at"],
        last_error=row["discovery_last_error"],
        last_registered=row["discovery_last_registered"],
        last_missing=row["discovery_last_missing"])
    return Catalog(pk=int(row["id"]), spec=spec, status=status, created_at=row["created_at"],
                   updated_at=row["updated_at"], table_count=int(row.get("table_count") or 0))


def _discovery_params(d: CatalogDiscovery) -> dict[str, Any]:
    return {"discovery_enabled": d.enabled, "discovery_include": list(d.include),
            "discovery_exclude": list(d.exclude), "discovery_queue": d.queue,
            "discovery_owner": d.owner, "discovery_priority": d.priority,
            "discovery_interval_s": d.interval_s}


class CatalogsMixin(Db):
    def catalog_create(self, spec: CatalogSpec) -> Catalog | None:
        """Insert; None when catalog_id is taken."""
        params: dict[str, Any] = {"catalog_id": spec.catalog_id, "type": spec.type.value,
                                  **{k: Jsonb(getattr(spec, k)) for k in _MAPS},
                                  **{k: list(getattr(spec, k)) for k in _LISTS},
                                  **_discovery_params(spec.discovery)}
        if self._one("catalog_insert", params) is None:
            return None
        return self.catalog_get(spec.catalog_id)

    def catalog_get(self, catalog_id: str) -> Catalog | None:
        row = self._one("catalog_get", {"catalog_id": catalog_id})
        return catalog_of(row) if row else None

    def catalog_list(self, after: str, limit: int) -> list[Catalog]:
        return [catalog_of(r) for r in self._all("catalog_list",
                                                  {"after": after, "limit": limit})]

    def catalog_update(self, catalog_id: str, update: CatalogUpdate) -> Catalog | None:
        params: dict[str, Any] = {"catalog_id": catalog_id}
        for name in (*_MAPS, *_LISTS):
            value = getattr(update, name)
            params[f"set_{name}"] = value is not None
            params[name] = (Jsonb(value) if isinstance(value, dict)
                            else list(value) if value is not None else None)
        params["set_discovery"] = update.discovery is not None
        params.update(_discovery_params(update.discovery or CatalogDiscovery()))
        if self._one("catalog_update", params) is None:
            return None
        return self.catalog_get(catalog_id)

    def catalog_delete(self, catalog_id: str) -> CatalogDeleteResult:
        if self._one("catalog_delete", {"catalog_id": catalog_id}) is not None:
            return CatalogDeleteResult.DELETED
        if self.catalog_get(catalog_id) is None:
            return CatalogDeleteResult.NOT_FOUND
        return CatalogDeleteResult.IN_USE
