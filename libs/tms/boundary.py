"""A table's boundary: what a table's location may not equal or contain, checked wherever
TMS takes a location as the table's (registration, discovery, a location change the
scheduler sees) and again inside the Spark job right before anything is deleted.

A table owns its location and nothing above or beside it. A location may not equal or
contain:

- a root other tables are made under: the catalog's warehouse, a namespace's location,
  another catalog's allowed location (``check_roots``);
- a directory that holds another table, registered with TMS or not (``scan``): an Iceberg
  metadata file (``*.metadata.json``, or a Hadoop table's ``version-hint.text``) outside
  the table's own metadata directories, a Hudi ``.hoodie`` directory other than the
  table's own, a Delta ``_delta_log`` directory; or a symbolic link, which may lead into
  one.

The scan walks the location's tree breadth first, a ``metadata`` directory as soon as it is
seen (shallow tables are found first, before a deep tree is read), stops at the first
foreign marker, and reads at most ``max_entries`` directory entries (default
``MAX_SCAN_ENTRIES``) and ``MAX_SCAN_DEPTH`` levels: past a bound it refuses, saying so,
rather than answer for what it has not seen. Its cost is one listing per directory of the
table's tree, what ``remove_orphan_files`` pays anyway. Listing is the caller's (a local
directory without following symlinks, an object store, Hadoop's file system in the job).

Standard library only: spark-submit ships this file next to the maintenance job.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from tms.locations import Location, LocationError, parse, resolve

# Directory entries one scan reads before it refuses (a table of 100,000 files in 1,000
# partitions reads about 101,000): a location holding more is refused, not half-checked.
MAX_SCAN_ENTRIES = 250_000
# Directory levels below the location one scan descends.
MAX_SCAN_DEPTH = 32
ICEBERG_METADATA_SUFFIXES = (".metadata.json", ".metadata.json.gz")
HADOOP_VERSION_HINT = "version-hint.text"
HUDI_DIR = ".hoodie"
METADATA_DIR = "metadata"
DELTA_DIR = "_delta_log"
# An entry's kind as a lister reports it.
DIR, FILE, LINK = "dir", "file", "link"

Lister = Callable[[str], Iterable[tuple[str, str]]]  # directory -> (name, kind) pairs


class BoundaryRefused(LocationError):
    """The location reaches beyond its table: it equals or contains a root other tables are
    made under, or a directory holding another table. No retry changes that."""


@dataclass(frozen=True)
class Own:
    """What under the table's location is the table's own: its metadata directories (where
    its ``*.metadata.json`` files are) and, for a Hudi table, its ``.hoodie``."""

    metadata_dirs: frozenset[str] = frozenset()
    hudi_dir: str = ""


def root_of(raw: str) -> Location | None:
    """A root as given (a catalog property, a namespace's ``location``) parsed and resolved;
    None when it is not a location (a REST catalog's warehouse may be a name)."""
    for literal in (False, True):
        try:
            return resolve(parse(raw, literal=literal))
        except LocationError:
            continue
    return None


def check_roots(where: Location, roots: Iterable[tuple[str, str]]) -> None:
    """Refuse ``where`` (resolved) when it equals or contains one of ``roots``: (what it is,
    raw location) pairs, e.g. ``("the catalog's warehouse", "file:///lake")``."""
    for what, raw in roots:
        root = root_of(raw)
        if root is None or not root.is_under(where):
            continue
        how = "is" if root == where else "contains"
        raise BoundaryRefused(
            f"location {str(where)[:300]!r} {how} {what} {str(root)[:300]!r}: a table's "
            f"location may not equal or contain a directory other tables are made under; "
            f"give the table a directory of its own")


def marker(directory: str, name: str, kind: str, own: Own) -> str | None:
    """Why the entry ``name`` (of ``kind``) in ``directory`` shows another table, or None."""
    path = f"{directory.rstrip('/')}/{name}"
    if kind == LINK:
        return f"{path} is a symbolic link (it may lead into another table)"
    if kind == DIR and name == HUDI_DIR and path != own.hudi_dir:
        return f"{directory} holds a Hudi table ({name}/)"
    if kind == DIR and name == DELTA_DIR:
        return f"{directory} holds a Delta table ({name}/)"
    if kind == FILE and directory.rstrip("/") not in own.metadata_dirs and (
            name.endswith(ICEBERG_METADATA_SUFFIXES) or name == HADOOP_VERSION_HINT):
        table = directory.rstrip("/")
        if table.endswith("/metadata"):
            table = table[:-len("/metadata")]
        return f"{table} holds another Iceberg table ({path})"
    return None


def scan(root: str, list_dir: Lister, own: Own, *, max_entries: int = MAX_SCAN_ENTRIES,
         max_depth: int = MAX_SCAN_DEPTH) -> int:
    """Walk ``root`` (a directory path as ``list_dir`` takes it) breadth first and refuse at
    the first entry that shows another table (BoundaryRefused naming it), or when a bound is
    passed. Does not descend into the table's own ``.hoodie``. Returns entries read."""
    seen = 0
    pending: deque[tuple[str, int]] = deque([(root.rstrip("/") or "/", 0)])
    while pending:
        directory, depth = pending.popleft()
        for name, kind in list_dir(directory):
            seen += 1
            if seen > max_entries:
                raise BoundaryRefused(
                    f"{root[:300]} holds more than {max_entries} files and directories, the "
                    f"most a check for other tables' files reads; nothing is assumed about "
                    f"the rest: give the table a narrower location")
            why = marker(directory, name, kind, own)
            if why is not None:
                raise BoundaryRefused(
                    f"location {root[:300]!r} holds what is not the table's: {why[:600]}; a "
                    f"table's location may not contain another table's files")
            path = f"{directory.rstrip('/')}/{name}"
            if kind != DIR or path == own.hudi_dir:
                continue
            if depth + 1 > max_depth:
                raise BoundaryRefused(
                    f"{root[:300]} is more than {max_depth} directories deep, the most a check "
                    f"for other tables' files descends: give the table a narrower location")
            if name == METADATA_DIR:  # where a table shows itself: looked at next
                pending.appendleft((path, depth + 1))
            else:
                pending.append((path, depth + 1))
    return seen


def local_lister(directory: str) -> list[tuple[str, str]]:
    """A local directory's entries, symlinks reported as such (never followed); nothing when
    it does not exist."""
    import os
    import stat

    out: list[tuple[str, str]] = []
    try:
        with os.scandir(directory) as it:
            for entry in it:
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except FileNotFoundError:
                    continue
                kind = LINK if stat.S_ISLNK(mode) else DIR if stat.S_ISDIR(mode) else FILE
                out.append((entry.name, kind))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return out


def own_dirs(location: Location, root: str, metadata_paths: Collection[str] = (),
             hudi: bool = False) -> Own:
    """The table's own directories as ``scan`` sees them under ``root`` (the lister's path of
    ``location``, resolved): ``<root>/metadata`` and every metadata path its properties name
    (``write.metadata.path``) that lies inside the location; ``<root>/.hoodie`` for Hudi."""
    base = root.rstrip("/")
    dirs = {f"{base}/metadata"}
    for raw in metadata_paths:
        found = root_of(raw)
        if found is not None and found.is_under(location):
            tail = found.path[len(location.path.rstrip("/")):].rstrip("/")
            dirs.add(f"{base}{tail}")
    return Own(frozenset(dirs), f"{base}/{HUDI_DIR}" if hudi else "")
