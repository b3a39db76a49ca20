"""An Iceberg table's current metadata location in one cheap catalog call, and loading that
is safe on many threads at once.

The scheduler inspects tables from up to 64 threads sharing one pyiceberg catalog per catalog
connection. pyiceberg's SQL catalog (a SQLAlchemy engine and pool), Glue (a boto3 client) and
REST (a requests session) may be shared; its Hive catalog keeps one thrift transport that
every call opens, replaces and closes, so here every Hive call opens its own metastore
client.

``current_metadata_location`` asks only for the pointer, no metadata file: the SQL catalog's
row, the Hive or Glue table's ``metadata_location`` parameter, a HadoopCatalog's version hint.
A REST catalog has no such call (loading a table is one request that returns the metadata
itself): None there, and the caller loads.
"""

from __future__ import annotations

import functools
from typing import Any

from tms.catalogs import CatalogAccess
from tms.domain import CatalogType
from tms.formats.iceberg import hadoop as iceberg_hadoop

METADATA_LOCATION = "metadata_location"
TABLE_TYPE = "table_type"
# catalogs whose pointer is one call, after which the metadata file is read directly
POINTER_TYPES = (CatalogType.SQL, CatalogType.JDBC, CatalogType.HIVE, CatalogType.GLUE)


def _hive_table(client: Any, ident: tuple[str, ...]) -> Any:
    database, name = client.identifier_to_database_and_table(ident)
    with client._create_hive_client(client.properties) as open_client:  # own transport
        return client._get_hive_table(open_client, database, name)


def load_table(client: Any, catalog: CatalogAccess, ident: tuple[str, ...]) -> Any:
    """``client.load_table(ident)``, with a metastore client of its own for Hive."""
    if catalog.type is CatalogType.HIVE:
        return client._convert_hive_into_iceberg(_hive_table(client, ident))
    return client.load_table(ident)


def load_at(client: Any, catalog: CatalogAccess, ident: tuple[str, ...],
            metadata_location: str) -> Any:
    """The table whose current metadata file the catalog was just asked for, read from that
    file without asking the catalog again (what pyiceberg's sql, hive and glue catalogs do
    after their own lookup). Not for Hadoop tables, which load from their directory."""
    from pyiceberg.serializers import FromInputFile
    from pyiceberg.table import Table

    io = client._load_file_io(location=metadata_location)
    metadata = FromInputFile.table_metadata(io.new_input(metadata_location))
    return Table(identifier=ident, metadata=metadata, metadata_location=metadata_location,
                 io=client._load_file_io(metadata.properties, metadata_location),
                 catalog=client)


@functools.lru_cache(maxsize=2)
def _location_stmt(v1_schema: bool) -> Any:
    """The pointer query, built once (bound parameters): only the row's metadata location."""
    from pyiceberg.catalog.sql import ICEBERG_TABLE_TYPE, IcebergTables
    from sqlalchemy import bindparam, select

    stmt = select(IcebergTables.metadata_location).where(
        IcebergTables.catalog_name == bindparam("catalog"),
        IcebergTables.table_namespace == bindparam("namespace"),
        IcebergTables.table_name == bindparam("name"))
    if v1_schema:  # as pyiceberg's own lookup: tables only, not views
        stmt = stmt.where((IcebergTables.iceberg_type == ICEBERG_TABLE_TYPE)
                          | IcebergTables.iceberg_type.is_(None))
    return stmt


def _sql_location(client: Any, ident: tuple[str, ...]) -> str | None:
    from pyiceberg.catalog import Catalog
    from pyiceberg.exceptions import NoSuchTableError

    namespace = Catalog.namespace_to_string(Catalog.namespace_from(ident))
    name = Catalog.table_name_from(ident)
    stmt = _location_stmt(client._iceberg_type_filter() is not None)
    with client.engine.connect() as conn:  # a Core query: no ORM session per call
        found = conn.execute(stmt, {"catalog": client.name, "namespace": namespace,
                                    "name": name}).first()
    if found is None:
        raise NoSuchTableError(f"Table does not exist: {namespace}.{name}")
    return str(found[0]) if found[0] else None


def _parameters_location(parameters: Any) -> str | None:
    """A Hive or Glue Iceberg table's pointer; None for anything else (the full load then
    says what is wrong)."""
    parameters = parameters or {}
    if str(parameters.get(TABLE_TYPE, "")).lower() != "iceberg":
        return None
    value = parameters.get(METADATA_LOCATION)
    return str(value) if value else None


def current_metadata_location(client: Any, catalog: CatalogAccess, ident: tuple[str, ...]
                              ) -> str | None:
    """The table's current metadata file as its catalog names it now, or None where that
    takes a full load. Raises what the catalog raises (NoSuchTableError when gone)."""
    if catalog.type is CatalogType.HADOOP:
        location = iceberg_hadoop.table_location(
            iceberg_hadoop.warehouse_of(catalog.properties), ".".join(ident[:-1]), ident[-1])
        return iceberg_hadoop.metadata_location(location, catalog.storage_options)
    if catalog.type in (CatalogType.SQL, CatalogType.JDBC):
        return _sql_location(client, ident)
    if catalog.type is CatalogType.HIVE:
        return _parameters_location(_hive_table(client, ident).parameters)
    if catalog.type is CatalogType.GLUE:
        database, name = client.identifier_to_database_and_table(ident)
        return _parameters_location(client._get_glue_table(database, name).get("Parameters"))
    return None
