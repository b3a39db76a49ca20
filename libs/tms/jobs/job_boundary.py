"""Inside the job, right before anything is deleted: the table's boundary again
(``boundary.py``), and orphan removal confined to what the table itself writes.

The processes checked the table's location when it was registered, discovered or moved; the
job checks again, because storage changes between (another team creates a table beside or
below this one's files) and the location the job acts on is read anew from the catalog:

- every action: the table's location may not equal or contain the catalog's warehouse
  (``warehouse`` in the spec's catalog properties);
- before an action that deletes files (``remove_orphan_files``, ``expire_snapshots``): the
  table's tree, walked breadth first and bounded (``boundary.scan``), may hold nothing that
  belongs to another table (an Iceberg metadata file outside the table's metadata
  directories, a ``.hoodie`` or ``_delta_log`` directory, a symlink). A refusal fails the
  operation, not retried (``table_guard.LocationRefused``), naming what was found.

Orphan removal lists only the directories the table writes (``write_dirs``: its data path
and metadata path as Iceberg's location provider and table operations choose them, each
already checked inside the table location by ``table_guard``), one dry run of Iceberg's
procedure per directory (its ``location`` argument), instead of the whole table location:
whatever else lies under the location (another tool's files, a directory a team keeps
there) is never a candidate.

Imports only pyspark (lazily, through the session) and the standard library.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from tms import boundary
from tms.jobs import table_guard
from tms.jobs.job_spec import sql_string
from tms.jobs.procedures import ProcedureCall

# Actions that delete files: the table's tree is scanned for other tables' files first.
DELETING_ACTIONS = frozenset({"remove_orphan_files", "expire_snapshots"})
# Where Iceberg's location provider puts data files, first set wins (LocationProviders:
# the last two are the deprecated names of the first).
DATA_PATH_KEYS = ("write.data.path", "write.object-storage.path", "write.folder-storage.path")
METADATA_PATH_KEY = "write.metadata.path"
WAREHOUSE_KEY = "warehouse"
# Before a delete, every metadata file in the table's own metadata directories that its
# metadata log does not name is read for its table-uuid: a table created at the same location
# writes its metadata there too. Past this many reads the delete is refused.
MAX_METADATA_READS = 10_000
METADATA_HEAD_BYTES = 64 * 1024  # local files: the uuid is among the first keys
GZIP_MAGIC = b"\x1f\x8b"
_UUID_RE = re.compile(rb'"table-uuid"\s*:\s*"([0-9A-Fa-f-]{36})"')


def write_dirs(table: table_guard.CheckedTable) -> list[str]:
    """The directories the table writes, raw as Iceberg uses them: its data path and its
    metadata path (defaults ``<location>/data`` and ``<location>/metadata``)."""
    props = table.handle.properties()
    base = str(table.handle.location()).rstrip("/")
    data = next((str(props.get(k)) for k in DATA_PATH_KEYS if props.get(k)), f"{base}/data")
    meta = str(props.get(METADATA_PATH_KEY) or f"{base}/metadata")
    return list(dict.fromkeys(d.rstrip("/") for d in (data, meta)))


def _hadoop_lister(spark: Any) -> boundary.Lister:
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()

    def list_dir(directory: str) -> Iterator[tuple[str, str]]:
        path = jvm.org.apache.hadoop.fs.Path(directory)
        fs = path.getFileSystem(conf)
        if not fs.exists(path):
            return
        for st in fs.listStatus(path):
            kind = boundary.LINK if st.isSymlink() else \
                boundary.DIR if st.isDirectory() else boundary.FILE
            yield str(st.getPath().getName()), kind
    return list_dir


def exists(spark: Any, directory: str) -> bool:
    """Whether the directory exists (Iceberg's listing fails on one that does not)."""
    local = boundary.root_of(directory)
    if local is not None and local.local:
        return os.path.isdir(local.path)
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(directory)
    return bool(path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(path))


def check(spark: Any, action: str, catalog_properties: dict[str, str],
          table: table_guard.CheckedTable) -> dict[str, Any]:
    """The boundary checks before the action (above); LocationRefused when one fails.
    Returns what was checked, for the result."""
    warehouse = catalog_properties.get(WAREHOUSE_KEY, "")
    try:
        boundary.check_roots(table.location, [("the catalog's warehouse", warehouse)]
                             if warehouse else [])
        if action not in DELETING_ACTIONS:
            return {"roots": 1 if warehouse else 0}
        props = table.handle.properties()
        metadata = [str(props.get(METADATA_PATH_KEY))] if props.get(METADATA_PATH_KEY) else []
        lister: boundary.Lister
        if table.location.local:
            root, lister = table.location.path, boundary.local_lister
        else:
            root, lister = str(table.location), _hadoop_lister(spark)
        own = boundary.own_dirs(table.location, root, metadata)
        entries = boundary.scan(root, lister, own)
        reads = same_directory(spark, table, own, lister)
    except boundary.BoundaryRefused as e:
        raise table_guard.LocationRefused(f"{e}; nothing deleted") from None
    return {"roots": 1 if warehouse else 0, "entries_scanned": entries,
            "metadata_files_read": reads}


def _known_names(table: table_guard.CheckedTable) -> set[str]:
    """The file names of the table's current metadata file and its metadata log."""
    current = table.handle.operations().current()
    files = [str(current.metadataFileLocation())]
    files += [str(e.file()) for e in current.previousFiles()]
    return {f.rstrip("/").rsplit("/", 1)[-1] for f in files}


def _uuid_of(spark: Any, table: table_guard.CheckedTable, path: str) -> str | None:
    """The table-uuid a metadata file names (None: none found)."""
    if table.location.local:
        try:
            fd, name = table_guard.parent_no_follow(path)
        except OSError:
            return None
        try:
            handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
        except OSError:
            return None
        finally:
            os.close(fd)
        with os.fdopen(handle, "rb") as f:
            head = f.read(METADATA_HEAD_BYTES)
        if head[:2] == GZIP_MAGIC:  # write.metadata.compression-codec=gzip
            try:
                head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(
                    head, METADATA_HEAD_BYTES)
            except zlib.error:
                return None
        found = _UUID_RE.search(head)
        return found.group(1).decode().lower() if found else None
    parser = spark.sparkContext._jvm.org.apache.iceberg.TableMetadataParser
    return str(parser.read(table.handle.io(), path).uuid()).lower()


def same_directory(spark: Any, table: table_guard.CheckedTable, own: boundary.Own,
                   list_dir: boundary.Lister) -> int:
    """Refuse (BoundaryRefused) when the table's own metadata directories hold a metadata
    file of another table (another table at the same location); the files read."""
    ours = str(table.handle.uuid()).lower()
    known = _known_names(table)
    reads = 0
    for directory in sorted(own.metadata_dirs):
        for name, kind in list_dir(directory):
            if kind != boundary.FILE or not name.endswith(".metadata.json") or name in known:
                continue
            reads += 1
            path = f"{directory}/{name}"
            if reads > MAX_METADATA_READS:
                raise boundary.BoundaryRefused(
                    f"{directory} holds more than {MAX_METADATA_READS} metadata files its "
                    f"metadata log does not name, the most read to tell whose they are")
            found = _uuid_of(spark, table, path)
            if found != ours:
                whose = f"table {found}" if found else "no table-uuid could be read"
                raise boundary.BoundaryRefused(
                    f"{directory} holds a metadata file of another table ({path}: {whose}; "
                    f"this table is {ours}): two tables share this location")
    return reads


def orphan_candidates(spark: Any, catalog_name: str, call: ProcedureCall,
                      table: table_guard.CheckedTable) -> list[str]:
    """The dry run of ``remove_orphan_files`` once per directory the table writes (each
    that exists), the candidates in order, each once."""
    found: dict[str, None] = {}
    for directory in write_dirs(table):
        if not exists(spark, directory):
            continue
        one = replace(call, args=(*call.args, f"location => {sql_string(directory)}"))
        for row in spark.sql(one.sql(catalog_name)).collect():
            found.setdefault(str(row[0]), None)
    return list(found)
