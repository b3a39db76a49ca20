"""The links in a local Hudi table's tree that Hudi's listing-based rollback would follow.

Without markers (or with ``hoodie.rollback.using.markers=false``) Hudi rolls a failed write
back from a listing (``ListingBasedRollbackStrategy``): it finds the partitions by walking every
directory below the base path but ``.hoodie`` (``FileSystemBackedTableMetadata``), Hadoop's
local file system following symlinks as it goes, and deletes the files there named by the
failed instant's time, or appends rollback blocks to the log files there. A writer can choose
that time to match another tenant's files and link a directory of the table to theirs. So
while a write is pending, a local table's tree may hold no symlink (nor anything else that is
neither a regular file nor a directory); object stores have none. Hudi's cleaner lists
partitions the same way, so before any job that cleans the tree may hold none either, write
pending or not (:mod:`tms.formats.hudi.clean_guard`).
"""

from __future__ import annotations

from tms.formats.hudi.plans import PlanRefused
from tms.formats.hudi.slices import MAX_LISTED_FILES
from tms.formats.storage import Store

META_DIR = ".hoodie"  # HoodieTableMetaClient.METAFOLDER_NAME: the one name Hudi's walk skips
MAX_TREE_DEPTH = 64  # directory levels walked below the base path


def links(store: Store, root: str, max_entries: int = MAX_LISTED_FILES) -> list[str]:
    """Paths (relative to ``root``) of the entries below it, ``.hoodie`` directories aside,
    that are neither regular files nor directories; the walk never follows one. PlanRefused
    past ``max_entries`` entries or ``MAX_TREE_DEPTH`` levels (not checked, so not run)."""
    found: list[str] = []
    listed = 0
    stack: list[tuple[str, str, int]] = [(root, "", 0)]
    while stack:
        directory, rel, depth = stack.pop()
        entries = store.list_dir(directory)
        listed += len(entries)
        if listed > max_entries:
            raise PlanRefused(f"more than {max_entries} files in the table: its tree is not "
                              "checked for links")
        for e in entries:
            child = f"{rel}/{e.name}" if rel else e.name
            if e.is_dir:
                if e.name == META_DIR:
                    continue
                if depth + 1 > MAX_TREE_DEPTH:
                    raise PlanRefused(f"{child[:200]!r} is nested deeper than {MAX_TREE_DEPTH}")
                stack.append((store.join(directory, e.name), child, depth + 1))
            elif not e.is_file:
                found.append(child)
    return sorted(found)


__all__ = ["MAX_TREE_DEPTH", "links"]
