"""Catalog discovery (DiscoveryStore): claiming due catalogs, registering the tables a
listing found, marking the ones it no longer finds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime

from tms.domain import Catalog
from tms.storage.postgres import rows
from tms.storage.postgres.catalogs import catalog_of
from tms.storage.postgres.db import Db
from tms.storage.roles import CatalogTable, DiscoveredRegistration


class DiscoveryMixin(Db):
    def catalog_claim_discovery(self, now: datetime, limit: int) -> list[Catalog]:
        return [catalog_of(r) for r in self._all("catalog_claim_discovery",
                                                  {"now": now, "limit": limit})]

    def catalog_finish_discovery(self, catalog_id: str, at: datetime, error: str | None,
                                 registered: int, missing: int) -> None:
        self._write("catalog_finish_discovery", {
            "catalog_id": catalog_id, "at": at, "error": error, "registered": registered,
            "missing": missing})

    def table_list_by_catalog(self, catalog_id: str) -> list[CatalogTable]:
        found = self._all("table_list_by_catalog", {"catalog_id": catalog_id})
        return [CatalogTable(rows.table(r), r["location"]) for r in found]

    def table_find_overlapping(self, location: str, except_pk: int = 0) -> str | None:
        row = self._one("table_find_overlapping", {"location": location,
                                                   "except_pk": except_pk})
        return row["table_id"] if row else None

    def table_insert_discovered(self, reg: DiscoveredRegistration) -> int | None:
        row = self._one("table_insert_discovered", asdict(reg))
        return int(row["id"]) if row else None

    def table_mark_missing(self, catalog_id: str, table_pks: Sequence[int], reason: str
                           ) -> tuple[int, int]:
        row = self._one("table_mark_missing", {"catalog_id": catalog_id,
                                               "pks": list(table_pks), "reason": reason})
        return (int(row["tables"]), int(row["cancelled"])) if row else (0, 0)

    def table_mark_found(self, table_pk: int, location: str) -> bool:
        return self._one("table_mark_found", {"pk": table_pk, "location": location}) is not None
