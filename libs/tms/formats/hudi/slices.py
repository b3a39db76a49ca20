"""A Hudi table's file slices: the latest ones through hudi-rs, every version by listing.

The latest slice of each file group (what compaction and clustering plan from) comes from the
``hudi`` package (the Python binding of hudi-rs), which builds Hudi's own file-system view:
committed files only, replaced file groups dropped, log files assigned by the table version's
rules. Its commit metadata (``get_instant_metadata_in_json``) also names the file groups each
replacecommit replaced, in every table version.

hudi-rs falls short in one place, so :func:`all_file_groups` lists the files itself: it returns
the *latest* slice per file group only, while the cleaner's question is which *older* versions
may be deleted. The listing goes through :mod:`tms.formats.storage` (local disk or an object
store with the catalog's storage options) and keeps Hudi's rules: base files of instants that
never completed are not part of the table; from table version 8 on, a log file belongs to the
slice with the newest base instant not after the log's completion time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tms.formats.hudi.timeline import WRITE_ACTIONS, Instant, State
from tms.formats.storage import Store

BASE_RE = re.compile(r"([^_/]+)_([^_/]+)_([0-9]{14,20})\.(parquet|orc|hfile|lance)")
LOG_RE = re.compile(r"\.([^/]+)_([0-9]{14,20})\.(log|archive)\.([0-9]+)"
                    r"(_[0-9]+-[0-9]+-[0-9]+)?(\.cdc)?")
PARTITION_MARKER = ".hoodie_partition_metadata"
MAX_PARTITION_DEPTH = 8  # partition paths deeper than this are not looked for
MAX_LISTED_FILES = 2_000_000  # a listing larger than this is refused, not read
# pyiceberg FileIO names (the catalog's storage options) -> hudi-rs (object_store) names
_HUDI_RS_OPTIONS = {"s3.endpoint": "aws_endpoint_url", "s3.region": "aws_region",
                    "s3.access-key-id": "aws_access_key_id",
                    "s3.secret-access-key": "aws_secret_access_key",
                    "s3.session-token": "aws_session_token"}


class SlicesError(Exception):
    """The table's files could not be listed or read."""


@dataclass(frozen=True)
class FileSlice:
    partition: str  # "" for a non-partitioned table
    file_id: str
    base_instant: str
    base_file: str | None  # None: a slice of log files only
    base_size: int
    logs: tuple[tuple[str, int], ...] = ()  # (name, size), oldest first

    @property
    def group(self) -> tuple[str, str]:
        return self.partition, self.file_id

    def files(self) -> list[tuple[str, int]]:
        return ([(self.base_file, self.base_size)] if self.base_file else []) + list(self.logs)


def hudi_rs_options(storage_options: Mapping[str, str]) -> dict[str, str]:
    """The catalog's storage options as hudi-rs names them (only those it needs)."""
    out = {_HUDI_RS_OPTIONS[k]: v for k, v in storage_options.items() if k in _HUDI_RS_OPTIONS}
    endpoint = storage_options.get("s3.endpoint", "")
    if endpoint.startswith("http://"):
        out["aws_allow_http"] = "true"
    if storage_options.get("s3.path-style-access", "").lower() == "true":
        out["aws_virtual_hosted_style_request"] = "false"
    return out


def latest_slices(base_path: str, storage_options: Mapping[str, str] | None = None
                  ) -> tuple[list[FileSlice], dict[tuple[str, str], str]]:
    """(the latest file slice of every file group, {(partition, file id): the completed
    replacecommit that replaced it}) as hudi-rs reads them. SlicesError when it cannot."""
    try:
        import json

        from hudi import HudiTableBuilder

        table = HudiTableBuilder.from_base_uri(base_path).with_storage_options(
            hudi_rs_options(storage_options or {})).build()
        slices = [FileSlice(s.partition_path, s.file_id, s.creation_instant_time,
                            s.base_file_name or None, int(s.base_file_size),
                            tuple(zip(s.log_file_names, map(int, s.log_file_sizes),
                                      strict=True)))
                  for s in table.get_file_slices()]
        timeline = table.get_timeline()
        replaced: dict[tuple[str, str], str] = {}
        for instant in timeline.get_completed_replacecommits():
            meta = json.loads(timeline.get_instant_metadata_in_json(instant))
            for partition, ids in (meta.get("partitionToReplaceFileIds") or {}).items():
                for file_id in ids or ():
                    replaced[(partition, file_id)] = instant.timestamp
    except Exception as e:  # hudi-rs raises its own error types for every failure
        raise SlicesError(f"hudi-rs cannot read the file slices: {str(e)[:500]}") from None
    return slices, replaced


@dataclass
class _Group:
    bases: dict[str, tuple[str, int]] = field(default_factory=dict)  # instant -> (name, size)
    logs: list[tuple[str, str, int]] = field(default_factory=list)  # (instant, name, size)


def partitions(store: Store, root: str) -> list[str]:
    """Partition paths relative to ``root`` (directories holding Hudi's partition marker)."""
    found: list[str] = []
    stack = [("", 0)]
    while stack:
        rel, depth = stack.pop()
        entries = store.list_dir(store.join(root, rel) if rel else root)
        if any(e.is_file and e.name.startswith(PARTITION_MARKER) for e in entries):
            found.append(rel)
        if depth < MAX_PARTITION_DEPTH:
            stack += [(f"{rel}/{e.name}" if rel else e.name, depth + 1)
                      for e in entries if e.is_dir and not e.name.startswith(".")]
    return sorted(found)


def all_file_groups(store: Store, root: str, instants: Iterable[Instant], table_version: int
                    ) -> dict[tuple[str, str], list[FileSlice]]:
    """Every committed file slice of every file group, newest first, from a listing."""
    instants = list(instants)
    done = {i.time: i for i in instants if i.state is State.COMPLETED}
    first = min((i.time for i in instants), default=None)

    def committed(t: str) -> bool:  # older than the active timeline: archived, so committed
        i = done.get(t)
        return (i is not None and i.action in WRITE_ACTIONS) or (first is not None and t < first)

    pending_compactions = [i.time for i in instants
                           if i.state is not State.COMPLETED and i.action == "compaction"]
    groups: dict[tuple[str, str], _Group] = {}
    listed = 0
    for part in partitions(store, root):
        for e in store.list_dir(store.join(root, part) if part else root):
            listed += 1
            if listed > MAX_LISTED_FILES:
                raise SlicesError(f"more than {MAX_LISTED_FILES} files; not listed")
            if not e.is_file:
                continue
            size = e.size
            if m := BASE_RE.fullmatch(e.name):
                if committed(m[3]):
                    groups.setdefault((part, m[1]), _Group()).bases[m[3]] = (e.name, size)
            elif m := LOG_RE.fullmatch(e.name):
                groups.setdefault((part, m[1]), _Group()).logs.append((m[2], e.name, size))
    return {key: _slices(key, g, done, pending_compactions, table_version)
            for key, g in sorted(groups.items())}


def _slices(key: tuple[str, str], g: _Group, done: Mapping[str, Instant],
            pending_compactions: list[str], version: int) -> list[FileSlice]:
    keys = set(g.bases)
    logs: dict[str, list[tuple[str, int]]] = {}
    for t, name, size in sorted(g.logs, key=lambda x: (x[0], _log_version(x[1]))):
        if version < 8:  # the log file carries its slice's base instant
            slot = t
        else:  # the log carries its delta commit; it joins the newest slice before completion
            i = done.get(t)
            end = i.completion_time if i is not None and i.completion_time else t
            slot = max((b for b in keys | set(pending_compactions) if b <= end), default=t)
        logs.setdefault(slot, []).append((name, size))
    out = []
    for t in sorted(keys | set(logs), reverse=True):
        base = g.bases.get(t)
        out.append(FileSlice(key[0], key[1], t, base[0] if base else None,
                             base[1] if base else 0, tuple(logs.get(t, ()))))
    return out


def _log_version(name: str) -> int:
    m = LOG_RE.fullmatch(name)
    return int(m[4]) if m else 0

