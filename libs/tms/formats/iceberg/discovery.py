"""Every table of an Iceberg catalog, through pyiceberg's catalog API (namespaces listed
recursively, then each namespace's tables), within bounds so a huge or hostile catalog cannot
stall the scheduler leader."""

from __future__ import annotations

from typing import Any

from tms.formats.base import DiscoveredTable

MAX_NAMESPACE_DEPTH = 8
MAX_LISTED_NAMESPACES = 10_000
MAX_LISTED_TABLES = 100_000


class ListingTooLarge(RuntimeError):
    """A listing passed one of its bounds: refused whole, never cut short (a cut listing
    would make the tables after the cut look dropped)."""


def list_tables(catalog: Any) -> list[DiscoveredTable]:
    """The tables of an opened pyiceberg catalog; nested namespaces down to
    MAX_NAMESPACE_DEPTH levels, their parts joined by ``.``."""
    found: list[DiscoveredTable] = []
    pending: list[tuple[str, ...]] = [tuple(ns) for ns in catalog.list_namespaces()]
    seen = 0
    while pending:
        ns = pending.pop()
        seen += 1
        if seen > MAX_LISTED_NAMESPACES:
            raise ListingTooLarge(f"more than {MAX_LISTED_NAMESPACES} namespaces")
        found += [DiscoveredTable(".".join(ns), tuple(ident)[-1])
                  for ident in catalog.list_tables(ns)]
        if len(found) > MAX_LISTED_TABLES:
            raise ListingTooLarge(f"more than {MAX_LISTED_TABLES} tables")
        if len(ns) < MAX_NAMESPACE_DEPTH:
            pending += [tuple(c) for c in catalog.list_namespaces(ns) if tuple(c) != ns]
    return found
