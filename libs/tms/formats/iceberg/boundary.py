"""What bounds an Iceberg table's location (``tms.table_boundary``): the roots other tables
are made under, which it may not equal or contain (the catalog's warehouse; the locations of
the table's namespace and of each namespace above it, as the catalog states them or, for a
``hadoop`` catalog, as its directory layout makes them), and the metadata directory its
properties name (``write.metadata.path``), which is its own."""

from __future__ import annotations

from typing import Any

from tms.catalogs import CatalogAccess
from tms.domain import CatalogType, Table

WAREHOUSE_KEY = "warehouse"
NAMESPACE_LOCATION_KEY = "location"
METADATA_PATH_KEY = "write.metadata.path"


def roots(table: Table, catalog: CatalogAccess, client: Any | None) -> list[tuple[str, str]]:
    """(what, raw location) pairs; a namespace the catalog cannot describe adds nothing (the
    boundary's scan of the location still finds the tables under it)."""
    out: list[tuple[str, str]] = []
    warehouse = catalog.properties.get(WAREHOUSE_KEY, "")
    if warehouse:
        out.append((f"catalogs/{catalog.catalog_id}'s warehouse", warehouse))
    parts = [p for p in table.namespace.split(".") if p]
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        if catalog.type is CatalogType.HADOOP:
            if warehouse:
                out.append((f"namespace {name!r}'s directory",
                             "/".join([warehouse.rstrip("/"), *parts[:depth]])))
            continue
        if client is None:
            continue
        try:
            props = client.load_namespace_properties(tuple(parts[:depth]))
        except Exception:  # no such namespace, or a catalog that does not say
            continue
        where = str(props.get(NAMESPACE_LOCATION_KEY) or "")
        if where:
            out.append((f"namespace {name!r}'s location", where))
    return out


def own_metadata(loaded: Any) -> tuple[str, ...]:
    """The metadata path the table's properties name, if any."""
    where = str((loaded.properties or {}).get(METADATA_PATH_KEY) or "")
    return (where,) if where else ()


__all__ = ["own_metadata", "roots"]
