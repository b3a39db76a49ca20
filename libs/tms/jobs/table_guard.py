"""Inside the job: where the table really is, checked before storage is touched, and a
``remove_orphan_files`` that deletes only files it checked.

The location a table was registered with is only a claim: the location storage will use comes
from the table's metadata in the catalog, which a table owner writes. So the job loads the
Iceberg table, reads its location (and the properties that move data or metadata elsewhere:
``write.data.path``, ``write.metadata.path``, ...; the metadata log, whose oldest files a
commit deletes; the statistics and partition statistics files, which ``expire_snapshots``
deletes with the snapshots they describe) and checks each with the one normaliser
(``locations.py``, realpath for local paths): the table location against the allowed locations
in the spec, everything else against the table's own resolved location (``CheckedTable.own``).

The catalog's allowed locations are a warehouse many owners' tables share, and TMS keeps
registered table locations disjoint. So a path inside the allowed locations may still be
another tenant's table: a location property, statistics file, metadata log entry or snapshot
reference pointing there would make TMS read that tenant's data into this table (a rewrite)
or delete it (an expiry, a commit's metadata clean-up). Everything a job reads, writes or
deletes must therefore lie inside the table's own location; a table whose
``write.data.path`` (or metadata path) lies elsewhere is refused, not retried.

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

The files a table's snapshots reference are checked before they are deleted or read
(``read_guard.py``).

Imports only pyspark (lazily, through the session) and the standard library.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tms.locations import (
    Location,
    LocationError,
    check,
    check_resolved,
    parent_no_follow,
    parse,
    resolve,
)

# Paths one table's metadata may name for the check (metadata log, statistics files): past
# this the table is refused rather than checked for minutes.
MAX_TABLE_PATHS = 100_000
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

    @property
    def own(self) -> tuple[str, ...]:
        """The table's own location as the allowed locations every later check takes:
        whatever the job reads, writes or deletes must lie inside it."""
        return (own_root(self.location),)


def own_root(location: Location) -> str:
    """``location`` written so that ``locations.parse`` (which percent-decodes an allowed
    location once) reads it back unchanged."""
    if location.local:
        return Path(location.path).as_uri()
    return f"{location.scheme}://{location.authority}{quote(location.path)}"


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
    except Exception:  # not a BaseTable: location and properties are what we can check
        return paths
    paths["metadata file"] = str(current.metadataFileLocation())
    for i, entry in enumerate(current.previousFiles()):
        paths[f"previous metadata file {i}"] = str(entry.file())
    # statistics (Puffin) and partition statistics files: the owner names them (a
    # set-statistics update), and expire_snapshots deletes those of the snapshots it expires
    for kind, files in (("statistics file", current.statisticsFiles()),
                        ("partition statistics file", current.partitionStatisticsFiles())):
        for i, entry in enumerate(files):
            paths[f"{kind} {i} (snapshot {entry.snapshotId()})"] = str(entry.path())
    if len(paths) > MAX_TABLE_PATHS:
        raise LocationRefused(f"the table's metadata names {len(paths)} metadata, statistics "
                              f"and location paths, more than the {MAX_TABLE_PATHS} checked")
    return paths


def check_paths(paths: Mapping[str, str], allowed: Sequence[str] | None) -> Location:
    """The table's resolved location once every path passed; LocationRefused says which did
    not. The table location must lie inside ``allowed`` (without it, older specs, only the
    symlink rule applies to it); every other path inside the table location itself."""
    try:
        stated = parse(paths["table location"], literal=True)
    except LocationError as e:
        raise LocationRefused(f"table location: {e}") from None
    real = resolve(stated)
    if stated.local and real != stated:
        raise LocationRefused(f"table location {str(stated)!r} is reached through a symlink "
                              f"(it resolves to {str(real)!r}); register the real path")
    if allowed is not None:
        try:
            check(paths["table location"], allowed, literal=True)
        except LocationError as e:
            raise LocationRefused(f"table location: {e}") from None
    own = [real]
    for what, raw in paths.items():
        if what == "table location":
            continue
        try:
            check_resolved(raw, own, literal=True)
        except LocationError as e:
            raise LocationRefused(f"{what}: {e}; everything a table's metadata names must lie "
                                  f"inside the table's own location") from None
    return real


def check_table(spark: Any, qualified_name: str, allowed: Sequence[str] | None,
                expected: str | None = None) -> CheckedTable:
    """The table loaded and its paths checked; with ``expected`` (the location the scheduler
    checked when it decided), its location must still be that one: the catalog entry is the
    owner's, and pointed at another table's metadata it would hand this operation that
    table (inside the same allowed locations, so no other check would notice)."""
    table = load_table(spark, qualified_name)
    checked = CheckedTable(check_paths(table_paths(table), allowed), table)
    if expected is not None and checked.location != resolve(parse(expected, literal=True)):
        raise LocationRefused(
            f"the table's location is now {str(checked.location)!r}, not "
            f"{expected!r} as checked when this operation was decided (another table's "
            f"metadata, or a moved table); nothing was done, and the scheduler checks the "
            f"location again at its next inspection")
    return checked


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


def remove_orphans(candidates: Sequence[str], table: CheckedTable, dry_run: bool
                   ) -> dict[str, Any]:
    """Check the dry run's candidates, delete them unless ``dry_run``; the result columns."""
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
