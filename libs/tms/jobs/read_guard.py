"""Before an action deletes or reads the files a table's snapshots reference: each must lie
inside the table's own location (the callers pass ``CheckedTable.own``: the catalog's allowed
locations hold other tenants' tables too).

``expire_snapshots`` deletes the files only expired snapshots reference, and a table owner can
make a snapshot reference any path (``add_files`` of another tenant's file, later removed).
So before it runs, every file any snapshot references (data and delete files, manifests,
manifest lists) must lie inside the table (``check_referenced_files``).

A rewrite copies what it reads into the table: clustering and a compaction on Spark's path read
data and delete files, ``rewrite_position_deletes`` delete files, ``rewrite_manifests`` (and the
merge of small manifests before a rewrite) manifests, with the column bounds they carry. So
before one runs, the files of the current snapshot it would read must lie inside the table
too (``check_current_files``): a table referencing another tenant's file is refused
as a whole, nothing written. Both checks resolve each directory once (realpath, and one listing
for the symlinks in it): a directory or a file inside the table that is a symlink leading out
is outside.

Imports only pyspark (lazily, through the session) and the standard library.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from tms.jobs.table_guard import MAX_SHOWN_REFUSALS, LocationRefused
from tms.locations import Location, LocationError, parse, resolve

# Metadata tables (and their path column) listing every file some snapshot references.
REFERENCED_FILES = (("all_files", "file_path"), ("all_manifests", "path"),
                    ("snapshots", "manifest_list"))
# ... and the data and delete files of the current snapshot, or its delete files alone.
CURRENT_FILES = (("files", "file_path"),)
CURRENT_DELETE_FILES = (("delete_files", "file_path"),)


def _symlinks_in(directory: str) -> frozenset[str]:
    try:
        with os.scandir(directory) as entries:
            return frozenset(e.name for e in entries if e.is_symlink())
    except OSError:  # missing or unreadable: nothing in it to follow
        return frozenset()


def _under_allowed(raw: str, prefixes: Sequence[Location],
                   real_dirs: dict[str, tuple[str, frozenset[str]]]) -> bool:
    """Whether the file ``raw`` really lies under a prefix: a local file's directory is
    resolved and listed once (files are many, directories few); a file that is itself a
    symlink is resolved on its own."""
    where = parse(raw, literal=True)
    if where.local:
        parent, _, name = where.path.rpartition("/")
        known = real_dirs.get(parent)
        if known is None:
            real = os.path.realpath(parent or "/")
            known = real_dirs[parent] = (real, _symlinks_in(real))
        real, links = known
        path = f"{real.rstrip('/')}/{name}"
        where = Location(where.scheme, "", os.path.realpath(path) if name in links else path)
    return any(where.is_under(p) for p in prefixes)


class _Refusals:
    """Paths checked against ``allowed``; the first ``MAX_SHOWN_REFUSALS`` outside kept."""

    def __init__(self, allowed: Sequence[str]) -> None:
        self.prefixes = [resolve(parse(a)) for a in allowed]
        self.real_dirs: dict[str, tuple[str, frozenset[str]]] = {}
        self.bad: list[str] = []
        self.checked = 0

    @property
    def full(self) -> bool:
        return len(self.bad) >= MAX_SHOWN_REFUSALS

    def add(self, raw: Any) -> None:
        if raw is None or self.full:
            return
        self.checked += 1
        try:
            ok = _under_allowed(str(raw), self.prefixes, self.real_dirs)
        except LocationError:
            ok = False
        if not ok:
            self.bad.append(str(raw)[:300])

    def scan(self, frame: Any, column: str) -> None:
        """Every distinct path of ``column`` (a Spark DataFrame), until enough are refused."""
        for row in frame.select(column).distinct().toLocalIterator():
            self.add(row[0])
            if self.full:
                break


def check_referenced_files(spark: Any, qualified_name: str, allowed: Sequence[str]) -> int:
    """Require every file the table's snapshots reference inside ``allowed``; returns how many
    were checked. LocationRefused names the first few that are not."""
    refusals = _Refusals(allowed)
    for table, column in REFERENCED_FILES:
        if not refusals.full:
            refusals.scan(spark.table(f"{qualified_name}.{table}"), column)
    if refusals.bad:
        raise LocationRefused(f"the table's snapshots reference files outside the table's own "
                              f"location, so expiring them could delete those: {refusals.bad}")
    return refusals.checked


def check_current_files(spark: Any, qualified_name: str, handle: Any, allowed: Sequence[str],
                        what: str, tables: Sequence[tuple[str, str]] = CURRENT_FILES
                        ) -> str | None:
    """Require the files a rewrite reads from the table's current snapshot inside
    ``allowed``, before it reads them: its manifest list and manifests (from the driver's
    ``Table``, the list's own path checked before it is read), then each metadata table of
    ``tables`` (one distributed scan of distinct paths each; ``files``: data and delete files,
    ``delete_files``: delete files alone), read at that same snapshot. Returns the id of the
    snapshot checked (None: the table has none). LocationRefused (``what`` names the action)
    lists the first few outside; nothing was written then.

    The whole snapshot is checked, even when a ``where`` restricts the rewrite to some
    partitions: a table whose snapshot references files outside the table
    (``add_files`` of another tenant's file, a hand-written manifest, a symlinked directory)
    is refused as a whole."""
    snap = handle.currentSnapshot()
    if snap is None:
        return None
    refusals = _Refusals(allowed)
    manifest_list = snap.manifestListLocation()
    refusals.add(manifest_list)
    if not refusals.bad:
        for manifest in snap.allManifests(handle.io()):
            refusals.add(str(manifest.path()))
    snapshot_id = str(snap.snapshotId())
    for table, column in tables:
        if not refusals.full:
            refusals.scan(spark.read.option("snapshot-id", snapshot_id)
                          .table(f"{qualified_name}.{table}"), column)
    if refusals.bad:
        raise LocationRefused(f"{what} refused, nothing written: the table's current snapshot "
                              f"references files outside the table's own location, which it "
                              f"would read: {refusals.bad}")
    return snapshot_id
