"""Iceberg tables of a hadoop (file-system) catalog: Iceberg's HadoopCatalog layout, read
without a catalog server (pyiceberg has no Hadoop catalog).

A table ``ns1.ns2.t`` lives in ``<warehouse>/ns1/ns2/t``; ``metadata/version-hint.text`` holds
the current version N and ``metadata/vN.metadata.json`` (or ``vN.gz.metadata.json``) the table
metadata, opened as a pyiceberg StaticTable. Everything read here a table writer controls, so:

- the hint is a bare version number (pyiceberg's own reader would also take a file name and
  join it to the directory, ``../`` included): anything else is refused;
- the metadata's ``location`` must be the table's own directory;
- the table's FileIO is built from the catalog's storage options only, never from the table's
  properties (which pyiceberg otherwise merges in, ``py-io-impl`` and endpoints included).
"""

from __future__ import annotations

import gzip
import io as _io
import re
from collections.abc import Mapping
from typing import Any

from tms.formats.base import DiscoveredTable, TableNotInCatalog
from tms.formats.iceberg.discovery import MAX_LISTED_TABLES, MAX_NAMESPACE_DEPTH, ListingTooLarge
from tms.formats.storage import (
    MAX_METADATA_READ_BYTES,
    StorageError,
    Store,
    file_io_properties,
    open_store,
)
from tms.locations import LocationError, parse, resolve

WAREHOUSE_KEY = "warehouse"
VERSION_HINT = "version-hint.text"
MAX_HINT_BYTES = 4096  # a version number; anything longer is refused as not one
MAX_LISTED_DIRS = 20_000  # directories looked into by one discovery walk
_HINT_RE = re.compile(r"[0-9]{1,18}")
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,127}")


class HadoopCatalogError(ValueError):
    """The catalog cannot hold Iceberg tables as configured (no warehouse, say)."""


def warehouse_of(properties: Mapping[str, str]) -> str:
    raw = properties.get(WAREHOUSE_KEY, "")
    if not raw:
        raise HadoopCatalogError("an Iceberg table in a hadoop catalog needs the catalog's "
                                 "'warehouse' property (the HadoopCatalog root)")
    return raw.rstrip("/") or raw


def table_location(warehouse: str, namespace: str, name: str) -> str:
    """``<warehouse>/<ns parts>/<name>``; names are checked (no separators, no dots)."""
    parts = [*namespace.split("."), name] if namespace else [name]
    if not all(_NAME_RE.fullmatch(p) for p in parts):
        raise TableNotInCatalog(f"{namespace}.{name} is not a HadoopCatalog identifier")
    return "/".join([warehouse, *parts])


def _metadata_file(store: Store, meta_dir: str, where: str) -> str:
    """The path of the current metadata file named by the version hint."""
    hint = store.join(meta_dir, VERSION_HINT)
    try:
        raw = store.read(hint, MAX_HINT_BYTES)
    except StorageError as e:
        raise TableNotInCatalog(f"no Iceberg table at {where}: {e}") from None
    text = raw.decode("ascii", errors="replace").strip()
    if not _HINT_RE.fullmatch(text):
        raise LocationError(f"{where}/metadata/{VERSION_HINT} must hold a version number, "
                            f"got {text[:40]!r}")
    for name in (f"v{int(text)}.metadata.json", f"v{int(text)}.gz.metadata.json"):
        path = store.join(meta_dir, name)
        if store.kind(path) == "file":
            return name
    raise TableNotInCatalog(f"{where}: version {int(text)} named by {VERSION_HINT} has no "
                            "metadata file")


def metadata_location(location: str, storage_options: Mapping[str, str]) -> str:
    """The current metadata file of the table at ``location``, from its version hint only."""
    store, path = open_store(location, storage_options)
    return f"{location}/metadata/{_metadata_file(store, store.join(path, 'metadata'), location)}"


def load_table(location: str, storage_options: Mapping[str, str]) -> Any:
    """The pyiceberg StaticTable at ``location`` (a table directory)."""
    from pyiceberg.catalog.noop import NoopCatalog
    from pyiceberg.io import load_file_io
    from pyiceberg.table import StaticTable
    from pyiceberg.table.metadata import TableMetadataUtil

    store, path = open_store(location, storage_options)
    meta_dir = store.join(path, "metadata")
    name = _metadata_file(store, meta_dir, location)
    metadata_location = f"{location}/metadata/{name}"
    data = store.read(store.join(meta_dir, name), MAX_METADATA_READ_BYTES)
    if name.endswith(".gz.metadata.json"):
        with gzip.GzipFile(fileobj=_io.BytesIO(data)) as gz:
            data = gz.read(MAX_METADATA_READ_BYTES + 1)
        if len(data) > MAX_METADATA_READ_BYTES:
            raise StorageError(f"{metadata_location} is larger than {MAX_METADATA_READ_BYTES} "
                               "bytes once decompressed")
    metadata = TableMetadataUtil.parse_raw(data.decode("utf-8"))
    own = resolve(parse(location, literal=True))
    if resolve(parse(metadata.location, literal=True)) != own:
        raise LocationError(f"{metadata_location} names location {metadata.location[:300]!r}, "
                            f"not its own directory {str(own)!r}")
    io = load_file_io(file_io_properties(storage_options), location=location)
    return StaticTable(identifier=("hadoop", location), metadata_location=metadata_location,
                       metadata=metadata, io=io, catalog=NoopCatalog("hadoop"))


def _is_table(store: Store, path: str) -> bool:
    return store.kind(store.join(path, "metadata", VERSION_HINT)) == "file"


def discover(warehouse: str, storage_options: Mapping[str, str]) -> list[DiscoveredTable]:
    """Every table directory under the warehouse (a directory holding
    ``metadata/version-hint.text``), namespaces down to MAX_NAMESPACE_DEPTH levels; the walk
    never enters a table, a hidden directory or a symlink, and is refused whole past its
    bounds (a cut listing would make the tables after the cut look dropped)."""
    store, root = open_store(warehouse, storage_options)
    found: list[DiscoveredTable] = []
    pending: list[tuple[str, tuple[str, ...]]] = [(root, ())]
    looked = 0
    while pending:
        path, namespace = pending.pop()
        for entry in sorted(store.list_dir(path), key=lambda e: e.name):
            if not entry.is_dir or not _NAME_RE.fullmatch(entry.name):
                continue
            looked += 1
            if looked > MAX_LISTED_DIRS:
                raise ListingTooLarge(f"more than {MAX_LISTED_DIRS} directories under the "
                                      "warehouse")
            child = store.join(path, entry.name)
            if namespace and _is_table(store, child):
                found.append(DiscoveredTable(".".join(namespace), entry.name))
                if len(found) > MAX_LISTED_TABLES:
                    raise ListingTooLarge(f"more than {MAX_LISTED_TABLES} tables")
            elif len(namespace) < MAX_NAMESPACE_DEPTH:
                pending.append((child, (*namespace, entry.name)))
    return found
