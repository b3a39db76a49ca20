"""Before a Hudi job that can clean: the partitions Hudi's cleaner would clean stay in the table.

Hudi's cleaner (``HoodieCleaner``, and ``hoodie.clean.automatic`` after a compaction or
clustering commits) plans in ``CleanPlanner``: ``getPartitionPathsToClean`` takes, for the
commit policies in incremental mode (``getPartitionPathsForIncrementalCleaning``), the
partitions named by the completed instants of the commits timeline (commit, deltacommit,
replacecommit) since the last clean's earliest commit to retain: the keys of
``partitionToWriteStats``, and for a replacecommit also of ``partitionToReplaceFileIds``
(``getPartitionsForInstants``; the partitions of a savepointed commit whose savepoint was
removed are read the same way). Otherwise (``KEEP_LATEST_FILE_VERSIONS``, no earlier clean,
incremental mode off) it lists every partition (``FSUtils.getAllPartitionPaths``: the
metadata table's partition list when it is enabled, else a walk of the base path that
Hadoop's local file system follows through symlinks). Each partition is then listed as
``new Path(basePath, partition)`` (``..`` normalised away, an absolute or ``scheme:`` key
winning) and its older file slices deleted. All of this is the writers' to write, so for the
table and its metadata table TMS requires, right before such a job is built:

- a local table's tree (``.hoodie`` aside) holds no symlink at all, whether or not a write is
  pending (:mod:`tms.formats.hudi.tree`);
- every completed commit, deltacommit, replacecommit and savepoint file on the active timeline
  (named as Hudi 0.x names them: any instant time) is a regular file of at most
  ``MAX_PLAN_BYTES``, JSON (table version 6) or Avro (8, 9) by its first bytes, and each of its
  partition keys (``partitionToWriteStats``, ``partitionToReplaceFileIds``, a savepoint's
  ``partitionMetadata``) is empty (the base path) or a relative path of whole segments: no
  ``.`` / ``..`` / empty segment, not absolute, no ``:`` before its first ``/`` (Hadoop reads
  a scheme there), no control character or backslash, no ``.hoodie`` segment, at most
  ``MAX_PARTITION_CHARS``, and joined to the base path it resolves inside the table (symlinks
  followed). ``%`` and other Unicode are taken literally, as Hadoop's ``Path`` takes them
  (``%2e%2e`` is a directory of that name).

The metadata table's own partition list (its ``files`` partition, HFiles) is not read: with
the metadata table enabled, a writer who rewrites it can still name partitions outside
(docs/hudi.md). Reading is bounded (``MAX_COMPLETED_FILES`` files and ``MAX_COMPLETED_BYTES``
per table); past it the job is refused, not run unchecked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tms.formats.hudi import tree as hudi_tree
from tms.formats.hudi.plan_guard import table_dirs
from tms.formats.hudi.plan_paths import path_problem, relative_shape_problem, shown
from tms.formats.hudi.plans import AVRO_MAGIC, MAX_PLAN_BYTES, PlanRefused, decode
from tms.formats.storage import LocalStore, Store, SymlinkRefused
from tms.locations import Location

MAX_PARTITION_CHARS = 1024  # a partition key longer than this is refused
MAX_COMPLETED_FILES = 100_000  # completed instant files read per table
MAX_COMPLETED_BYTES = 256 << 20  # bytes of completed instant files read per table
# the completed instants whose metadata the clean planner reads, and the maps keyed by partition
CLEANER_READ_ACTIONS = frozenset({"commit", "deltacommit", "replacecommit", "savepoint"})
PARTITION_MAPS = ("partitionToWriteStats", "partitionToReplaceFileIds", "partitionMetadata")
META_DIR = hudi_tree.META_DIR
_COMPLETED = re.compile(r"([^.]+)\.([a-z]+)")  # Hudi 0.x takes any instant time
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")


@dataclass
class _Spent:
    files: int = 0
    bytes: int = 0


class _Object(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs, duplicates kept (Jackson takes the last one;
    every one is checked)."""


def check_table(base: str, storage_options: Mapping[str, str] | None = None) -> int:
    """Check what Hudi's cleaner would read to pick partitions, for the table at the checked
    base path ``base`` and its metadata table (see the module doc); returns how many
    completed instant files were checked. PlanRefused (a ValueError, final) names the first
    link or instant and its offending keys; StorageError / TimelineError when it cannot be
    read now."""
    try:
        store, dirs = table_dirs(base, storage_options)
        spent = _Spent()
        checked = 0
        for tl_dir, table, root in dirs:
            if isinstance(store, LocalStore):
                links = hudi_tree.links(store, root)
                if links:
                    raise PlanRefused(
                        f"cleaning refused: {str(table)[:300]}/{links[0][:200]} is not a "
                        "regular file or directory (a symlink Hudi's partition listing would "
                        "follow, cleaning file versions where it leads); no Hudi job that "
                        "cleans runs on this table until its owner removes it")
            checked += _check_completed(store, tl_dir, table, spent)
        return checked
    except SymlinkRefused as e:  # Hudi would follow the link: refused, not retried
        raise PlanRefused(f"the table's metadata is reached through a symlink: {e}") from None


def _check_completed(store: Store, tl_dir: str, table: Location, spent: _Spent) -> int:
    checked = 0
    verdicts: dict[str, str | None] = {}  # a key's problem, once per table
    for e in sorted(store.list_dir(tl_dir), key=lambda e: e.name):
        m = _COMPLETED.fullmatch(e.name)
        if m is None or m[2] not in CLEANER_READ_ACTIONS:
            continue
        label = f"{m[1]} {m[2]} ({e.name[:200]})"
        if not e.is_file:
            raise PlanRefused(f"completed Hudi instant refused, {label}: not a regular file "
                              "(a symlink or a directory Hudi's cleaner would read)")
        if e.size > MAX_PLAN_BYTES:
            raise PlanRefused(f"completed Hudi instant refused, {label}: {e.size} bytes, above "
                              f"the {MAX_PLAN_BYTES} commit metadata may have")
        spent.files += 1
        spent.bytes += e.size
        if spent.files > MAX_COMPLETED_FILES or spent.bytes > MAX_COMPLETED_BYTES:
            raise PlanRefused(f"more than {MAX_COMPLETED_FILES} completed instants or "
                              f"{MAX_COMPLETED_BYTES} bytes of their metadata: the partitions "
                              "Hudi's cleaner would clean are not checked")
        data = store.read(store.join(tl_dir, e.name), MAX_PLAN_BYTES)
        found = []
        for field, key in partition_keys(data, label):
            if key not in verdicts:
                verdicts[key] = partition_problem(key, table)
            if verdicts[key]:
                found.append(f"{field} key {key[:200]!r} {verdicts[key]}")
        if found:
            raise PlanRefused(f"completed Hudi instant refused, {label}: {shown(found)}; "
                              "Hudi's cleaner lists and cleans the partitions it names, so no "
                              "Hudi job that cleans runs on this table until its owner "
                              "removes the instant")
        checked += 1
    return checked


def partition_keys(data: bytes, label: str) -> list[tuple[str, str]]:
    """(map, key) of every partition key in one completed instant file: Avro by its magic,
    else JSON (Hudi 0.x's commit metadata); empty for an empty file. PlanRefused when it is
    neither, or a partition map is not a map."""
    if not data.strip():
        return []
    if data.startswith(AVRO_MAGIC):
        _, record = decode(data, f"completed Hudi instant refused, {label}")
        pairs = list(record.items()) if isinstance(record, dict) else []
        maps = [(k, list(v.items()) if isinstance(v, dict) else v) for k, v in pairs]
    else:
        try:
            top = json.loads(data.decode("utf-8"), object_pairs_hook=_Object)
        except (ValueError, RecursionError) as e:
            raise PlanRefused(f"completed Hudi instant refused, {label}: neither Avro nor JSON "
                              f"commit metadata ({type(e).__name__})") from None
        if not isinstance(top, _Object):
            raise PlanRefused(f"completed Hudi instant refused, {label}: its JSON is not an "
                              "object")
        maps = list(top)
    out = []
    for field, value in maps:
        if field not in PARTITION_MAPS or value is None:
            continue
        if not isinstance(value, list) or any(not isinstance(p, tuple) for p in value):
            raise PlanRefused(f"completed Hudi instant refused, {label}: {field} is not a map")
        out += [(field, str(k)) for k, _ in value]
    return out


def partition_problem(key: str, table: Location) -> str | None:
    """Why the partition ``key`` is refused (see the module doc), or None when Hudi's
    ``new Path(basePath, key)`` stays inside ``table``."""
    if not key:
        return None  # a non-partitioned table: the base path itself
    if len(key) > MAX_PARTITION_CHARS:
        return f"is longer than {MAX_PARTITION_CHARS} characters"
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return "is not UTF-8 text (a lone surrogate)"
    if _BAD_CHARS.search(key):
        return "holds a control character or a backslash"
    shape = relative_shape_problem(key)
    if shape is not None:
        return shape
    segments = key.split("/")
    if META_DIR in segments:
        return f"has a {META_DIR} segment (Hudi's own metadata, never a partition)"
    return path_problem(key, str(table), None, table)


__all__ = ["MAX_COMPLETED_BYTES", "MAX_PARTITION_CHARS", "check_table", "partition_keys",
           "partition_problem"]
