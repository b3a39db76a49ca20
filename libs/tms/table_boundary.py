"""A table's boundary, checked by the TMS processes (registration, discovery, a location
change the scheduler sees): the location, already checked against the catalog's allowed
locations, may not equal or contain a root other tables are made under (the catalog's
warehouse, the table's namespace locations, another catalog's allowed location) nor hold
another table's files (a bounded scan of its tree for foreign table markers). The rule and
the scan are :mod:`tms.jobs.boundary`, which the Spark job applies again before it deletes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tms import boundary
from tms.boundary import BoundaryRefused
from tms.catalogs import CatalogAccess
from tms.domain import Catalog, Table
from tms.formats.base import TableFormatPlugin
from tms.formats.storage import LocalStore, StorageError, Store, open_store
from tms.locations import parse, resolve

__all__ = ["BoundaryRefused", "check", "other_catalog_roots"]

MAX_CATALOGS_LISTED = 10_000  # catalogs whose allowed locations a registration compares
CATALOG_PAGE = 500


def _lister(store: Store) -> boundary.Lister:
    local = isinstance(store, LocalStore)

    def list_dir(path: str) -> Iterator[tuple[str, str]]:
        for e in store.list_dir(path):
            kind = boundary.DIR if e.is_dir else boundary.FILE
            if local and not e.is_dir and not e.is_file:
                kind = boundary.LINK  # a local entry neither file nor directory: a link
            yield e.name, kind
    return list_dir


def other_catalog_roots(catalogs: Iterable[Catalog], own: str) -> list[tuple[str, str]]:
    """Every other catalog's allowed locations, as roots a table may not equal or contain."""
    return [(f"catalogs/{c.catalog_id}'s allowed location", raw)
            for c in catalogs if c.catalog_id != own for raw in c.spec.allowed_locations]


def list_catalogs(store: object) -> list[Catalog]:
    """Every catalog (paged, bounded) from a store that lists them."""
    out: list[Catalog] = []
    after = ""
    while len(out) < MAX_CATALOGS_LISTED:
        page = store.catalog_list(after, CATALOG_PAGE)  # type: ignore[attr-defined]
        out.extend(page)
        if len(page) < CATALOG_PAGE:
            break
        after = page[-1].catalog_id
    return out


def check(plugin: TableFormatPlugin, table: Table, access: CatalogAccess, where: str,
          extra_roots: Iterable[tuple[str, str]] = ()) -> None:
    """Refuse (BoundaryRefused, a LocationError) ``where``, the table's checked location,
    when it reaches beyond the table; StorageError (a transient failure, or a symlink on the
    way to it) when its tree cannot be listed."""
    loc = resolve(parse(where))
    roots = [*plugin.boundary_roots(table, access), *extra_roots]
    boundary.check_roots(loc, roots)
    store, root = open_store(str(loc) if loc.local else where, access.storage_options)
    metadata_paths, hudi = plugin.boundary_own(table, access)
    own = boundary.own_dirs(loc, root, metadata_paths, hudi)
    boundary.scan(root, _lister(store), own)


# The storage failure a check may raise, named here so that its callers (the API) need not
# reach into the formats' storage layer.
BoundaryUnavailable = StorageError
