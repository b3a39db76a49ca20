"""Manifest lists and manifests read with pyiceberg's own Avro decoding, its reader trees
built once per schema instead of once per file.

pyiceberg opens every Avro file by parsing the schema JSON in its header, converting it into
an Iceberg schema and resolving a reader tree against the read schema: about two thirds of
the CPU of reading a small manifest, and the same work for every file of a table (a manifest
list's schema is fixed per format version, a manifest's depends only on the partition type).
The scheduler reads such files for thousands of tables, so here the resolved reader is kept
by (schema text, what is read); the records, their types and the sequence-number inheritance
are pyiceberg's, so the results are those of ``Snapshot.manifests`` and
``ManifestFile.fetch_manifest_entry``. Readers hold no per-read state (a record is built per
``read``), so threads share them.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

MAX_READERS = 256  # distinct (schema, kind) pairs kept; partition types vary per spec
_SCHEMA_KEY = "avro.schema"
_LIST, _ENTRIES = "manifest-list", "manifest-entries"

_lock = threading.Lock()
_readers: dict[tuple[str, str], Any] = {}


@functools.cache
def _header_reader() -> Any:
    from pyiceberg.avro.file import META_SCHEMA, AvroFileHeader
    from pyiceberg.avro.resolver import construct_reader

    return construct_reader(META_SCHEMA, {-1: AvroFileHeader})


@functools.cache
def _kinds() -> dict[str, tuple[Any, dict[int, Callable[..., Any]], dict[int, Any]]]:
    """What each kind of file is read as: pyiceberg's read schema, record and enum types
    (those ``read_manifest_list`` and ``fetch_manifest_entry`` use)."""
    from pyiceberg.manifest import (
        DEFAULT_READ_VERSION,
        MANIFEST_ENTRY_SCHEMAS,
        MANIFEST_LIST_FILE_SCHEMAS,
        DataFile,
        DataFileContent,
        FileFormat,
        ManifestContent,
        ManifestEntry,
        ManifestEntryStatus,
        ManifestFile,
        PartitionFieldSummary,
    )

    return {
        _LIST: (MANIFEST_LIST_FILE_SCHEMAS[DEFAULT_READ_VERSION],
                {-1: ManifestFile, 508: PartitionFieldSummary}, {517: ManifestContent}),
        _ENTRIES: (MANIFEST_ENTRY_SCHEMAS[DEFAULT_READ_VERSION],
                   {-1: ManifestEntry, 2: DataFile},
                   {0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent}),
    }


def _reader(schema_text: str, kind: str) -> Any:
    key = (schema_text, kind)
    with _lock:
        hit = _readers.get(key)
    if hit is not None:
        return hit
    import json

    from pyiceberg.avro.resolver import resolve_reader
    from pyiceberg.utils.schema_conversion import AvroSchemaConversion

    read_schema, types, enums = _kinds()[kind]
    file_schema = AvroSchemaConversion().avro_to_iceberg(json.loads(schema_text))
    reader = resolve_reader(file_schema, read_schema, types, enums)
    with _lock:
        if len(_readers) >= MAX_READERS:
            _readers.clear()  # rare (hundreds of partition types): start over
        _readers[key] = reader
    return reader


def _records(io: Any, path: str, kind: str) -> list[Any]:
    """Every record of one Avro object container file, decoded by pyiceberg's reader."""
    from pyiceberg.avro.decoder import new_decoder
    from pyiceberg.avro.file import SYNC_SIZE

    with io.new_input(path).open() as f:
        decoder = new_decoder(f.read())
    header = _header_reader().read(decoder)
    text = header.meta.get(_SCHEMA_KEY)
    if text is None:
        raise ValueError(f"no schema in the Avro file header of {path}")
    reader = _reader(text, kind)
    codec = header.compression_codec()
    out: list[Any] = []
    first = True
    while True:
        try:
            if not first and decoder.read(SYNC_SIZE) != header.sync:
                raise ValueError(f"bad sync marker in {path}")
            first = False
            count = decoder.read_int()
            block = decoder.read_bytes()
        except EOFError:
            break
        if codec:
            block = codec.decompress(block)
        block_decoder = new_decoder(block)
        out += [reader.read(block_decoder) for _ in range(count)]
    return out


def manifests(snapshot: Any, io: Any) -> list[Any]:
    """The snapshot's manifest files (what ``snapshot.manifests(io)`` gives)."""
    return _records(io, snapshot.manifest_list, _LIST)


def live_entries(manifest: Any, io: Any) -> list[Any]:
    """The manifest's entries that are not DELETED, with the sequence numbers and snapshot id
    they inherit from the manifest (``fetch_manifest_entry(io, discard_deleted=True)``)."""
    from pyiceberg.manifest import ManifestEntryStatus, _inherit_from_manifest

    return [_inherit_from_manifest(e, manifest)
            for e in _records(io, manifest.manifest_path, _ENTRIES)
            if e.status != ManifestEntryStatus.DELETED]
