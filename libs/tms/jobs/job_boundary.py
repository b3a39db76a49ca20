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
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

try:
    from tms.jobs import boundary, table_guard
    from tms.jobs.job_spec import sql_string
    from tms.jobs.procedures import ProcedureCall
except ImportError:  # shipped alone, next to its siblings
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import boundary  # type: ignore[no-redef]
    import table_guard  # type: ignore[no-redef]
    from job_spec import sql_string  # type: ignore[no-redef]
    from procedures import ProcedureCall  # type: ignore[no-redef]

# Actions that delete files: the table's tree is scanned for other tables' files first.
DELETING_ACTIONS = frozenset({"remove_orphan_files", "expire_snapshots"})
# Where Iceberg's location provider puts data files, first set wins (LocationProviders:
# the last two are the deprecated names of the first).
DATA_PATH_KEYS = ("write.data.path", "write.object-storage.path", "write.folder-storage.path")
METADATA_PATH_KEY = "write.metadata.path"
WAREHOUSE_KEY = "warehouse"


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
    except boundary.BoundaryRefused as e:
        raise table_guard.LocationRefused(f"{e}; nothing deleted") from None
    return {"roots": 1 if warehouse else 0, "entries_scanned": entries}


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
