"""Inside the job: where the table really is, checked before storage is touched, and a
``remove_orphan_files`` that deletes only files it checked.

The location a table was registered with is only a claim: the location storage will use comes
from the table's metadata in the catalog, which a table owner writes. So the job loads the
Iceberg table, reads its location (and the properties that move data or metadata elsewhere:
``write.data.path``, ``write.metadata.path``, ...) and checks each with the one normaliser
(``locations.py``, realpath for local paths) against the allowed locations in the spec.

``remove_orphan_files`` lists with Iceberg's procedure in dry-run mode, requires every candidate
(realpath for local files) to be inside the table's checked location, refuses everything if one
is not, and then deletes exactly the checked list itself. Running the procedure a second time
"for real" would list again and delete whatever the second listing found, unchecked (a
symlink planted between the two runs would be followed); deleting the checked list closes that
race. Local files are deleted through directory descriptors opened with ``O_NOFOLLOW`` from the
root, so a directory swapped for a symlink after the check makes the deletion fail instead of
following it; object stores have no symlinks, their paths are deleted through the table's own
FileIO (with the catalog's credentials).

A local table location reached through a symlink is refused: the paths in its metadata and in a
listing would differ from the real ones, and no check could compare them reliably.

``expire_snapshots`` deletes the files only expired snapshots reference, and a table owner can
make a snapshot reference any path (``add_files`` of another tenant's file, later removed).
So before it runs, every file any snapshot references (data and delete files, manifests,
manifest lists) must lie inside the allowed locations (``check_referenced_files``).

A rewrite copies what it reads into the table: clustering and a compaction on Spark's path read
data and delete files, ``rewrite_position_deletes`` delete files, ``rewrite_manifests`` (and the
merge of small manifests before a rewrite) manifests, with the column bounds they carry. So
before one runs, the files of the current snapshot it would read must lie inside the allowed
locations too (``check_current_files``): a table referencing another tenant's file is refused
as a whole, nothing written. Both checks resolve each directory once (realpath, and one listing
for the symlinks in it): a directory or a file inside the table that is a symlink leading out
is outside.

Imports only pyspark (lazily, through the session) and the standard library.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    from tms.jobs.locations import (
        Location,
        LocationError,
        check,
        parent_no_follow,
        parse,
        resolve,
    )
except ImportError:  # shipped alone, next to locations.py
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from locations import (  # type: ignore[no-redef]
        Location,
        LocationError,
        check,
        parent_no_follow,
        parse,
        resolve,
    )

# Table properties that send data or metadata files somewhere other than the table location.
LOCATION_PROPERTIES = ("write.data.path", "write.metadata.path", "write.object-storage.path",
                       "write.folder-storage.path")
MAX_LISTED_ORPHANS = 100
MAX_SHOWN_REFUSALS = 5


class LocationRefused(Exception):
    """The table, or a file the job would delete, lies outside where it may: no retry helps."""


@dataclass(frozen=True)
class CheckedTable:
    """A table whose locations passed the checks; ``location`` is the resolved one."""

    location: Location
    handle: Any  # the Iceberg Table (a Py4J object), for its FileIO


def load_table(spark: Any, qualified_name: str) -> Any:
    """The Iceberg ``Table`` behind a Spark identifier, through the JVM."""
    jvm = spark.sparkContext._jvm
    return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession,
                                                                    qualified_name)


def table_paths(table: Any) -> dict[str, str]:
    """What the table's metadata says about where its files go: ``{what: raw location}``."""
    paths = {"table location": str(table.location())}
    props = table.properties()
    for key in LOCATION_PROPERTIES:
        value = props.get(key)
        if value:
            paths[f"table property {key}"] = str(value)
    try:
        current = table.operations().current()
        paths["metadata file"] = str(current.metadataFileLocation())
        for i, entry in enumerate(current.previousFiles()):
            paths[f"previous metadata file {i}"] = str(entry.file())
    except Exception:  # not a BaseTable: location and properties are what we can check
        pass
    return paths


def check_paths(paths: Mapping[str, str], allowed: Sequence[str] | None) -> Location:
    """The table's resolved location once every path passed; LocationRefused says which did
    not. Without ``allowed`` (older specs) only the symlink rule applies."""
    try:
        stated = parse(paths["table location"], literal=True)
    except LocationError as e:
        raise LocationRefused(f"table location: {e}") from None
    real = resolve(stated)
    if stated.local and real != stated:
        raise LocationRefused(f"table location {str(stated)!r} is reached through a symlink "
                              f"(it resolves to {str(real)!r}); register the real path")
    if allowed is not None:
        for what, raw in paths.items():
            try:
                check(raw, allowed, literal=True)
            except LocationError as e:
                raise LocationRefused(f"{what}: {e}") from None
    return real


def check_table(spark: Any, qualified_name: str, allowed: Sequence[str] | None
                ) -> CheckedTable:
    table = load_table(spark, qualified_name)
    return CheckedTable(check_paths(table_paths(table), allowed), table)


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
        raise LocationRefused(f"the table's snapshots reference files outside the allowed "
                              f"locations, so expiring them could delete those: {refusals.bad}")
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
    partitions: a table whose snapshot references files outside its allowed locations
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
                              f"references files outside the allowed locations, which it "
                              f"would read: {refusals.bad}")
    return snapshot_id


# --- remove_orphan_files -----------------------------------------------------------------------

def refusals(candidates: Sequence[str], table: Location) -> list[str]:
    """Why candidates may not be deleted: each must parse, and for local files be free of
    symlinks, inside the table's (resolved) location."""
    out = []
    for raw in candidates:
        try:
            stated = parse(raw, literal=True)
        except LocationError as e:
            out.append(f"{raw[:300]!r}: {e}")
            continue
        real = resolve(stated)
        if real != stated:
            out.append(f"{raw[:300]!r} resolves to {str(real)[:300]!r} (a symlink)")
        elif not real.is_under(table):
            out.append(f"{raw[:300]!r} is outside the table location {str(table)!r}")
    return out


def unlink_no_follow(path: str) -> bool:
    """Delete the local file ``path`` walking from ``/`` through directory descriptors opened
    with O_NOFOLLOW (``locations.parent_no_follow``): a component swapped for a symlink fails
    the walk. False when nothing was deleted (already gone, a symlink on the way, a
    directory)."""
    try:
        fd, name = parent_no_follow(path)
    except OSError:
        return False
    try:
        os.unlink(name, dir_fd=fd)  # a final symlink is removed, never followed
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def delete_checked(candidates: Sequence[str], table: CheckedTable) -> list[str]:
    """Delete checked candidates; returns those that could not be deleted."""
    failed = []
    for raw in candidates:
        where = parse(raw, literal=True)
        if where.local:
            ok = unlink_no_follow(where.path)
        else:
            try:
                table.handle.io().deleteFile(raw)
                ok = True
            except Exception:
                ok = False
        if not ok:
            failed.append(raw)
    return failed


def remove_orphans(dry_run_result: Any, table: CheckedTable, dry_run: bool) -> dict[str, Any]:
    """Check the dry run's candidates, delete them unless ``dry_run``; the result columns."""
    candidates = [str(r[0]) for r in dry_run_result.collect()]
    refused = refusals(candidates, table.location)
    if refused:
        shown = "; ".join(refused[:MAX_SHOWN_REFUSALS])
        raise LocationRefused(f"remove_orphan_files refused, nothing deleted: {len(refused)} of "
                              f"{len(candidates)} candidate(s) are not plainly inside the table "
                              f"location: {shown}")
    failed = [] if dry_run else delete_checked(candidates, table)
    if failed:
        print(f"[tms-job] {len(failed)} orphan file(s) not deleted: {failed[:10]}",
              file=sys.stderr)
    return {"orphan_file_location_count": len(candidates),
            "orphan_file_location": candidates[:MAX_LISTED_ORPHANS],
            "orphan_file_location_truncated": len(candidates) > MAX_LISTED_ORPHANS,
            "orphan_files_not_deleted": failed[:MAX_LISTED_ORPHANS],
            "orphan_files_not_deleted_count": len(failed)}
