"""Hudi tables of a hadoop catalog, found by walking its allowed locations for base paths
(local directories through the OS, object stores through pyarrow).

The walk is bounded (depth and directory count) and never follows a symlink, so a link inside
an allowed location cannot lead discovery to a table outside it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from tms.formats.base import DiscoveredTable
from tms.formats.hudi.timeline import UnsupportedSchemeError
from tms.formats.storage import StorageError, Store, open_store
from tms.locations import LocationError, parse, resolve

# Bounds of a walk of a hadoop catalog's allowed locations for base paths.
MAX_WALK_DEPTH = 6  # directories below an allowed location
MAX_WALK_DIRS = 20_000  # directories looked into, over all allowed locations


class WalkTooLarge(RuntimeError):
    """The walk passed MAX_WALK_DIRS: refused whole, never cut short (a cut listing would
    make the tables after the cut look dropped)."""


def _is_table(path: Path) -> bool:
    """A real ``.hoodie`` directory holding a regular ``hoodie.properties`` (neither a
    symlink: a table's timeline must not live outside its base path)."""
    try:
        meta = os.lstat(path / ".hoodie")
        props = os.lstat(path / ".hoodie" / "hoodie.properties")
    except OSError:
        return False
    return stat.S_ISDIR(meta.st_mode) and stat.S_ISREG(props.st_mode)


def _walk(root: Path) -> Iterator[Path]:
    """Directories below ``root``, never through a symlink, never into a
    hidden directory or a table, down to MAX_WALK_DEPTH."""
    pending = [(root, 0)]
    while pending:
        directory, depth = pending.pop()
        try:
            with os.scandir(directory) as it:
                entries = sorted(e.name for e in it
                                 if not e.name.startswith(".") and e.is_dir(follow_symlinks=False))
        except OSError:
            continue
        for name in entries:
            yield directory / name
            if depth + 1 < MAX_WALK_DEPTH and not _is_table(directory / name):
                pending.append((directory / name, depth + 1))


def _store_is_table(store: Store, path: str) -> bool:
    return (store.kind(store.join(path, ".hoodie")) == "dir"
            and store.kind(store.join(path, ".hoodie", "hoodie.properties")) == "file")


def _walk_store(store: Store, root: str) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(path, parts below root) of the directories below ``root`` in an object store, the
    same walk as :func:`_walk` (no hidden directories, never into a table)."""
    pending: list[tuple[str, tuple[str, ...]]] = [(root, ())]
    while pending:
        directory, parts = pending.pop()
        for entry in sorted(store.list_dir(directory), key=lambda e: e.name):
            if not entry.is_dir or entry.name.startswith("."):
                continue
            path = store.join(directory, entry.name)
            yield path, (*parts, entry.name)
            if len(parts) + 1 < MAX_WALK_DEPTH and not _store_is_table(store, path):
                pending.append((path, (*parts, entry.name)))


def _discover_in_store(allowed: str, storage_options: Mapping[str, str], looked: int
                       ) -> tuple[list[DiscoveredTable], int]:
    """The tables under one object-store allowed location (base paths as URIs)."""
    store, root = open_store(allowed, storage_options)
    prefix = allowed.split("://", 1)[0].lower() + "://"
    found: list[DiscoveredTable] = []
    if _store_is_table(store, root):
        return [DiscoveredTable("", root.rsplit("/", 1)[-1], prefix + root)], looked
    for path, parts in _walk_store(store, root):
        looked += 1
        if looked > MAX_WALK_DIRS:
            raise WalkTooLarge(f"more than {MAX_WALK_DIRS} directories under the "
                               "allowed locations")
        if _store_is_table(store, path):
            found.append(DiscoveredTable(".".join(parts[:-1]), parts[-1], prefix + path))
    return found, looked


def discover_tables(allowed_locations: Iterable[str],
                    storage_options: Mapping[str, str] | None = None) -> list[DiscoveredTable]:
    """The Hudi tables under a hadoop catalog's allowed locations (local directories, or
    object stores read with the catalog's storage options). A table's namespace is its
    parent directory relative to the allowed location (segments joined by ``.``), its name
    the directory's; it is known by its base path."""
    found: list[DiscoveredTable] = []
    looked = 0
    for allowed in allowed_locations:
        try:
            where = resolve(parse(allowed))
        except LocationError:
            continue  # the API refuses these; nothing to list
        if not where.local:
            try:
                more, looked = _discover_in_store(allowed, storage_options or {}, looked)
            except (StorageError, LocationError) as e:
                raise UnsupportedSchemeError(f"cannot list {allowed[:200]!r}: {e}") from None
            found += more
            continue
        root = Path(where.path)
        if _is_table(root):
            found.append(DiscoveredTable("", root.name, str(root)))
            continue
        for path in _walk(root):
            looked += 1
            if looked > MAX_WALK_DIRS:
                raise WalkTooLarge(f"more than {MAX_WALK_DIRS} directories under the "
                                   "allowed locations")
            if _is_table(path):
                namespace = ".".join(path.parent.relative_to(root).parts)
                found.append(DiscoveredTable(namespace, path.name, str(path)))
    return found
