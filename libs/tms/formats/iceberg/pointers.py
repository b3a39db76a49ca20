"""Many Iceberg tables' current metadata locations in one catalog call, looked up for a batch
of decisions before they start.

Telling an unchanged table from a changed one takes its catalog's pointer (the current
metadata file): one call per table costs the scheduler more CPU than the rest of the decision
(a query through SQLAlchemy, a thrift or HTTP round trip) and the catalog server one request
per table. A batch of the scheduler's decisions holds up to a few hundred tables, most of
them of a few catalogs, so the pointers are asked for once per catalog and batch:

- SQL and JDBC catalogs: one query for every table of the batch (the same row pyiceberg
  reads, tables only where the catalog keeps views too; on PostgreSQL the batch's names as
  two array parameters);
- Hive: ``get_table_objects_by_name`` once per database (the metastore's batch call);
- Glue, REST and Hadoop tables: no batch here (Glue has no batch get of tables by name, a
  REST catalog's load is the metadata itself, a Hadoop table's pointer is a file of its own),
  so their tables keep the one call per table.

A table the answer does not hold is not in the catalog (dropped, renamed): its decision says
so, as with the call per table. When the batch call fails (catalog unreachable), nothing is
kept and every table asks on its own, as before, so its state is what it would have been.
Pointers are taken once and only while fresh (:data:`PREFETCHED_S`, longer than a batch
takes even at seconds a read): a commit after the batch call is the same as a commit just
after the decision (its mark makes the table due again; a table without notifications is
looked at again at its next pull check, as after any decision).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tms.catalogs import CatalogAccess
from tms.domain import CatalogType
from tms.formats.iceberg.current import _parameters_location

PREFETCHED_S = 60.0
MAX_PREFETCHED = 100_000
BATCH_TYPES = (CatalogType.SQL, CatalogType.JDBC, CatalogType.HIVE)
MISSING = ""  # the catalog's answer did not hold the table

Ident = tuple[str, ...]
Key = tuple[str, Ident]  # (catalog fingerprint, identifier), as iceberg_unchanged.Key


@functools.lru_cache(maxsize=4)
def _batch_stmt(v1_schema: bool, arrays: bool) -> Any:
    """One query for many tables of a SQL catalog, built once. On PostgreSQL the
    (namespace, name) pairs are two array parameters (``unnest``), each looked up by the
    catalog's primary key through a LATERAL subquery (a plain join let the planner
    scan the whole catalog per batch: 13 ms at 20,000 tables): one statement text whatever
    the batch, nothing rendered per batch, the driver's statement cache holds it; elsewhere
    the pairs are one expanding parameter (rendered per batch size)."""
    from pyiceberg.catalog.sql import ICEBERG_TABLE_TYPE, IcebergTables
    from sqlalchemy import ARRAY, String, bindparam, func, select, true, tuple_

    def held(stmt: Any) -> Any:
        stmt = stmt.where(IcebergTables.catalog_name == bindparam("catalog"))
        if v1_schema:
            stmt = stmt.where((IcebergTables.iceberg_type == ICEBERG_TABLE_TYPE)
                              | IcebergTables.iceberg_type.is_(None))
        return stmt

    if arrays:
        given = func.unnest(bindparam("namespaces", type_=ARRAY(String)),
                            bindparam("names", type_=ARRAY(String))
                            ).table_valued("namespace", "name").render_derived()
        row = held(select(IcebergTables.metadata_location).where(
            IcebergTables.table_namespace == given.c.namespace,
            IcebergTables.table_name == given.c.name)).limit(1).lateral()  # a fence:
        # without it the subquery is pulled up into the same semi-join (a row per key anyway)
        return select(given.c.namespace, given.c.name, row.c.metadata_location).select_from(
            given.join(row, true()))
    return held(select(IcebergTables.table_namespace, IcebergTables.table_name,
                       IcebergTables.metadata_location).where(
        tuple_(IcebergTables.table_namespace, IcebergTables.table_name).in_(
            bindparam("pairs", expanding=True))))


@functools.lru_cache(maxsize=MAX_PREFETCHED)
def _row_key(ident: Ident) -> tuple[str, str]:
    """(namespace, name) as the SQL catalog's row holds them, pyiceberg's own conversion
    (kept: a few microseconds a table at every batch)."""
    from pyiceberg.catalog import Catalog

    return Catalog.namespace_to_string(Catalog.namespace_from(ident)), \
        Catalog.table_name_from(ident)


def _sql(client: Any, idents: Sequence[Ident]) -> dict[Ident, str | None]:
    pairs = {_row_key(i): i for i in idents}
    arrays = client.engine.dialect.name == "postgresql"
    stmt = _batch_stmt(client._iceberg_type_filter() is not None, arrays)
    params: dict[str, Any] = {"catalog": client.name}
    if arrays:
        params["namespaces"] = [ns for ns, _ in pairs]
        params["names"] = [name for _, name in pairs]
    else:
        params["pairs"] = list(pairs)
    with client.engine.connect() as conn:
        rows = conn.execute(stmt, params).all()
    out: dict[Ident, str | None] = {}
    for namespace, name, location in rows:
        held = pairs.get((namespace, name))
        if held is not None:
            out[held] = str(location) if location else None
    return out


def _hive(client: Any, idents: Sequence[Ident]) -> dict[Ident, str | None]:
    by_db: dict[str, dict[str, Ident]] = {}
    for ident in idents:
        database, name = client.identifier_to_database_and_table(ident)
        by_db.setdefault(database, {})[name.lower()] = ident
    out: dict[Ident, str | None] = {}
    with client._create_hive_client(client.properties) as open_client:  # own transport
        for database, names in by_db.items():
            for found in open_client.get_table_objects_by_name(database, list(names)):
                held = names.get(str(found.tableName).lower())
                if held is not None:
                    out[held] = _parameters_location(found.parameters)
    return out


def lookup(client: Any, catalog: CatalogAccess, idents: Sequence[Ident]
           ) -> dict[Ident, str | None] | None:
    """The current metadata location of each table the catalog holds (None: it holds the
    table but names no Iceberg metadata file; the full load says what is wrong); tables it
    does not hold are absent. None: this catalog type has no batch call. Raises what the
    catalog raises."""
    if catalog.type in (CatalogType.SQL, CatalogType.JDBC):
        return _sql(client, idents)
    if catalog.type is CatalogType.HIVE:
        return _hive(client, idents)
    return None


class Prefetched:
    """Pointers looked up for a batch, each taken at most once while fresh. Thread-safe."""

    def __init__(self, fresh_s: float = PREFETCHED_S, max_entries: int = MAX_PREFETCHED,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.fresh_s = fresh_s
        self.max_entries = max_entries
        self._clock = clock
        self._items: dict[Key, tuple[float, str | None]] = {}
        self._lock = threading.Lock()
        self.batches = 0  # batch calls that answered (for tests and the bench)

    def put(self, fingerprint: str, asked: Iterable[Ident],
            found: dict[Ident, str | None]) -> None:
        now = self._clock()
        with self._lock:
            if len(self._items) >= self.max_entries:  # batches never decided: start over
                self._items = {k: v for k, v in self._items.items()
                               if now - v[0] < self.fresh_s}
            for ident in asked:
                self._items[(fingerprint, ident)] = (now, found.get(ident, MISSING))
            self.batches += 1

    def forget(self, fingerprint: str, idents: Iterable[Ident]) -> None:
        with self._lock:
            for ident in idents:
                self._items.pop((fingerprint, ident), None)

    def take(self, key: Key) -> tuple[bool, str | None]:
        """(found, location): found False when nothing fresh was looked up for the table;
        location :data:`MISSING` when the catalog did not hold it."""
        with self._lock:
            hit = self._items.pop(key, None)
        if hit is None or self._clock() - hit[0] >= self.fresh_s:
            return False, None
        return True, hit[1]
