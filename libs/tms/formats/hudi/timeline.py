"""Cheap reading of a Hudi table's active timeline, for the scheduler's inspection.

The table is read where it lives (a local directory, or S3 and other object stores through
pyarrow with the catalog's storage options, :mod:`tms.formats.storage`). Only directory names
are listed: an instant's action, state and times are all in its file name,
so no data file and (almost) no metadata file is ever opened. The one exception is a
``replacecommit``, which Hudi writes both for clustering and for insert_overwrite: as Hudi's own
``ClusteringUtils`` does, its small ``.requested`` file is read to see whether it holds a
clustering plan.

Layouts (checked on Spark-written tables of versions 6, 8 and 9):

- version <= 6: instants in ``.hoodie/`` as ``<t>.<action>`` when completed,
  ``<t>.<action>.requested|.inflight`` when pending (a commit's inflight is ``<t>.inflight``);
  clustering is a ``replacecommit`` throughout.
- version >= 8: instants in ``.hoodie/timeline/``; completed ones as
  ``<requested>_<completed>.<action>``; clustering is planned as ``clustering`` and completes as
  a ``replacecommit``.

Instant times are ``yyyyMMddHHmmss[SSS]`` in the *writer's* time zone unless the table sets
``hoodie.table.timeline.timezone=UTC``. We cannot know the writer's zone, so we assume UTC and
take a ``timezone`` argument for writers elsewhere.
"""

from __future__ import annotations

import enum
import os
import re
import zlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote, urlsplit

from tms.formats.storage import LocalStore, StorageError, Store, open_store
from tms.locations import LocationError

_COMPLETED_V2 = re.compile(r"(\d{14,})_(\d{14,})\.([a-z]+)")
_PENDING = re.compile(r"(\d{14,})\.([a-z]+)\.(requested|inflight)")
_COMMIT_INFLIGHT = re.compile(r"(\d{14,})\.inflight")
_COMPLETED_V1 = re.compile(r"(\d{14,})\.([a-z]+)")
WRITE_ACTIONS = frozenset({"commit", "deltacommit", "replacecommit"})  # Hudi's commits timeline
MAX_PROPERTIES_BYTES = 1 << 20
MAX_PLAN_BYTES = 16 << 20  # a clustering plan (.requested) read to tell it from an overwrite
_TIMELINE_DIR_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")


class TimelineError(Exception):
    """The timeline cannot be read: not a Hudi table, or an unusable property."""


class UnsupportedSchemeError(TimelineError):
    """The base path's storage cannot be read from here (a scheme pyarrow cannot open)."""


class TableType(enum.StrEnum):
    COPY_ON_WRITE = "COPY_ON_WRITE"
    MERGE_ON_READ = "MERGE_ON_READ"


class State(enum.StrEnum):
    REQUESTED = "REQUESTED"
    INFLIGHT = "INFLIGHT"
    COMPLETED = "COMPLETED"


@dataclass(frozen=True)
class Instant:
    time: str  # the requested (instant) time, Hudi's ordering key
    action: str  # completed: the action it completed as; pending: the planned action
    state: State
    planned_action: str | None = None  # what the .requested file named (compaction, clustering)
    completion_time: str | None = None  # version >= 8 only


@dataclass(frozen=True)
class TimelineSummary:
    """What the scheduler needs to know about a table, read from instant file names."""

    table_name: str
    table_version: int
    table_type: TableType
    timezone: str
    instants: tuple[Instant, ...]
    completed_by_action: Mapping[str, int]
    delta_commits_since_compaction: int
    last_compaction_instant: str | None
    last_compaction_time: datetime | None  # or the first delta commit's when none
    pending_compactions: tuple[str, ...]  # oldest first
    pending_clusterings: tuple[str, ...]  # oldest first
    last_clustering_instant: str | None
    commits_since_clustering: int
    last_clean_instant: str | None
    commits_since_clean: int
    last_completed_instant: str | None
    last_completed_time: datetime | None

    def metrics(self) -> dict[str, Any]:
        """JSON-serialisable view for Decision.metrics: times as ISO 8601 (UTC), no instants."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, datetime):
                v = v.isoformat()
            elif isinstance(v, enum.Enum):
                v = str(v.value)
            elif isinstance(v, Mapping):
                v = dict(v)
            elif isinstance(v, tuple):
                v = list(v)
            if f.name != "instants":
                out[f.name] = v
        return out


def parse_instant_time(value: str, timezone: tzinfo = UTC) -> datetime:
    """``yyyyMMddHHmmssSSS`` (or the older ``yyyyMMddHHmmss``) read in ``timezone``, as UTC.
    Digits past the milliseconds (metadata-table suffixes) are ignored; ValueError otherwise."""
    if not value.isdigit() or len(value) < 14 or 14 < len(value) < 17:
        raise ValueError(f"not a Hudi instant time: {value!r}")
    local = datetime.strptime(value[:14], "%Y%m%d%H%M%S")
    if len(value) >= 17:
        local += timedelta(milliseconds=int(value[14:17]))
    return local.replace(tzinfo=timezone).astimezone(UTC)


def local_path(base_path: str) -> Path:
    """A local directory for a base path; other schemes raise UnsupportedSchemeError."""
    parts = urlsplit(base_path)
    scheme = parts.scheme.lower()
    if not scheme:
        return Path(base_path)
    if scheme == "file" and parts.netloc in ("", "localhost"):
        return Path(unquote(parts.path))
    if scheme == "file":
        raise UnsupportedSchemeError(f"cannot read {base_path!r}: scheme 'file' URIs must be "
                                     "on this machine (no host or localhost)")
    raise UnsupportedSchemeError(
        f"cannot read {base_path!r}: scheme {scheme!r} needs a Hadoop filesystem; "
        "only local paths and file:// URIs can be inspected")


def open_table(base_path: str, storage_options: Mapping[str, str] | None = None
               ) -> tuple[Store, str]:
    """(the store holding the table, its base path in that store): local paths and
    ``file://`` URIs through the OS, object stores through pyarrow with the catalog's storage
    options. UnsupportedSchemeError when the scheme cannot be read from here. A local base
    path is resolved (as its location is checked); below it nothing is read through a
    symlink (:class:`tms.formats.storage.LocalStore`)."""
    parts = urlsplit(base_path)
    if not parts.scheme or parts.scheme.lower() == "file":
        return LocalStore(), os.path.realpath(local_path(base_path))
    try:
        return open_store(base_path, storage_options or {})
    except (StorageError, LocationError) as e:
        raise UnsupportedSchemeError(f"cannot read {base_path[:200]!r}: {e}") from None


def read_properties(path: Path) -> dict[str, str]:
    """Java .properties as Hudi writes them (one line per key, ``\\:`` escapes)."""
    return parse_properties(path.read_text(encoding="utf-8"))


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties text as Hudi writes it."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, _, value = line.partition("=")
        props[key.strip()] = re.sub(r"\\(.)", r"\1", value.strip())
    return props


def read_timeline(base_path: str, timezone: tzinfo = UTC,
                  storage_options: Mapping[str, str] | None = None) -> TimelineSummary:
    """Summarise the active timeline of the table at ``base_path`` (see the module doc),
    wherever it lives (:func:`open_table`)."""
    store, root = open_table(base_path, storage_options)
    props, tl_dir = _timeline_dir(store, root, base_path)
    try:
        version = int(props.get("hoodie.table.version", "0"))
        table_type = TableType(props.get("hoodie.table.type", "COPY_ON_WRITE").upper())
    except ValueError as e:
        raise TimelineError(f"bad hoodie.properties in {base_path}: {e}") from None
    if props.get("hoodie.table.timeline.timezone", "").upper() == "UTC":
        timezone = UTC
    instants = _scan(store, tl_dir)
    return _summarise(props.get("hoodie.table.name", ""), version, table_type, str(timezone),
                      instants, Timeline(store, tl_dir), timezone)


def locate_timeline(base_path: str, storage_options: Mapping[str, str] | None = None
                    ) -> tuple[Store, str, str]:
    """(the store, the table's root in it, its timeline directory): ``.hoodie`` up to table
    version 6, ``.hoodie/<hoodie.timeline.path>`` from 8 on. TimelineError when there is no
    readable ``hoodie.properties``."""
    store, root = open_table(base_path, storage_options)
    return store, root, _timeline_dir(store, root, base_path)[1]


def _timeline_dir(store: Store, root: str, base_path: str) -> tuple[dict[str, str], str]:
    meta = store.join(root, ".hoodie")
    for name in ("hoodie.properties", "hoodie.properties.backup"):
        path = store.join(meta, name)
        if store.kind(path) == "file":
            try:
                props = parse_properties(store.read(path, MAX_PROPERTIES_BYTES).decode("utf-8"))
            except (StorageError, UnicodeDecodeError) as e:
                raise TimelineError(f"cannot read {base_path}/.hoodie/{name}: {e}") from None
            break
    else:
        raise TimelineError(f"not a Hudi table: no {base_path}/.hoodie/hoodie.properties")
    try:
        version = int(props.get("hoodie.table.version", "0"))
    except ValueError as e:
        raise TimelineError(f"bad hoodie.properties in {meta}: {e}") from None
    tl_name = props.get("hoodie.timeline.path", "timeline")
    if not _TIMELINE_DIR_RE.fullmatch(tl_name):  # a name inside .hoodie, never a path
        raise TimelineError(f"bad hoodie.timeline.path {tl_name[:80]!r} in {base_path}")
    return props, store.join(meta, tl_name) if version >= 8 else meta


@dataclass(frozen=True)
class Timeline:
    """Where a table's instant files are."""

    store: Store
    path: str

    def file(self, name: str) -> str:
        return self.store.join(self.path, name)


def scan_instants(store: Store, tl_dir: str) -> tuple[Instant, ...]:
    """Every instant in the timeline directory ``tl_dir``, oldest first, its state from its
    file names (TimelineError when the directory cannot be listed)."""
    return _scan(store, tl_dir)


def _scan(store: Store, tl_dir: str) -> tuple[Instant, ...]:
    try:
        names = [e.name for e in store.list_dir(tl_dir) if e.is_file]
    except StorageError as e:
        raise TimelineError(str(e)) from None
    done: dict[str, tuple[str, str | None]] = {}  # time -> (action, completion time)
    requested: dict[str, str] = {}  # time -> the action its .requested file names
    inflight: dict[str, str] = {}
    for name in names:
        if m := _PENDING.fullmatch(name):
            (requested if m[3] == "requested" else inflight)[m[1]] = m[2]
        elif m := _COMMIT_INFLIGHT.fullmatch(name):
            inflight[m[1]] = "commit"
        elif m := _COMPLETED_V2.fullmatch(name):
            done[m[1]] = (m[3], m[2])
        elif m := _COMPLETED_V1.fullmatch(name):
            done[m[1]] = (m[2], None)
    out = []
    for t in sorted(done.keys() | requested.keys() | inflight.keys()):
        plan = requested.get(t) or inflight.get(t)
        if t in done:
            out.append(Instant(t, done[t][0], State.COMPLETED, plan, done[t][1]))
        elif plan is not None:
            state = State.INFLIGHT if t in inflight else State.REQUESTED
            out.append(Instant(t, plan, state, plan))
    return tuple(out)


def _summarise(name: str, version: int, table_type: TableType, zone: str,
               instants: tuple[Instant, ...], tl_dir: Timeline, tz: tzinfo) -> TimelineSummary:
    done = [i for i in instants if i.state is State.COMPLETED]
    pending = [i for i in instants if i.state is not State.COMPLETED]

    def when(t: str | None) -> datetime | None:
        try:
            return None if t is None else parse_instant_time(t, tz)
        except ValueError:
            return None

    def is_clustering(i: Instant) -> bool:
        if i.planned_action == "clustering" or i.action == "clustering":
            return True
        return i.action == "replacecommit" and _holds_clustering_plan(
            tl_dir, f"{i.time}.{i.planned_action or 'replacecommit'}.requested")

    def writes_after(t: str | None) -> int:
        return sum(1 for i in done if i.action in WRITE_ACTIONS and (t is None or i.time > t))

    last_compaction = None
    deltas: list[Instant] = []
    if table_type is TableType.MERGE_ON_READ:  # on MOR only compaction completes as `commit`
        last_compaction = next((i.time for i in reversed(done) if i.action == "commit"), None)
        deltas = [i for i in done if i.action == "deltacommit"
                  and (last_compaction is None or i.time > last_compaction)]
    # Hudi's TIME_ELAPSED clock runs from the last compaction, else from the first delta commit
    clock = last_compaction or next((i.time for i in deltas + list(instants)), None)
    last_clustering = next((i.time for i in reversed(done)
                            if i.action == "replacecommit" and is_clustering(i)), None)
    last_clean = next((i.time for i in reversed(done) if i.action == "clean"), None)
    last = done[-1].time if done else None
    return TimelineSummary(
        table_name=name, table_version=version, table_type=table_type, timezone=zone,
        instants=instants,
        completed_by_action=MappingProxyType(dict(sorted(Counter(i.action for i in done)
                                                         .items()))),
        delta_commits_since_compaction=len(deltas),
        last_compaction_instant=last_compaction, last_compaction_time=when(clock),
        pending_compactions=tuple(i.time for i in pending if i.action == "compaction"),
        pending_clusterings=tuple(i.time for i in pending if is_clustering(i)),
        last_clustering_instant=last_clustering,
        commits_since_clustering=writes_after(last_clustering),
        last_clean_instant=last_clean, commits_since_clean=writes_after(last_clean),
        last_completed_instant=last, last_completed_time=when(last))


def _holds_clustering_plan(timeline: Timeline, requested: str) -> bool:
    """Hudi's test: the requested file is a non-empty HoodieRequestedReplaceMetadata whose
    first field, ``operationType``, is ``CLUSTER`` (insert_overwrite leaves it empty or null)."""
    try:
        data = timeline.store.read(timeline.file(requested), MAX_PLAN_BYTES)
        return bool(data) and _first_avro_string(data) == "CLUSTER"
    except (OSError, ValueError, IndexError, zlib.error):
        return False


def _first_avro_string(data: bytes) -> str | None:
    """The first field (a ``["null", "string"]`` union) of an Avro container's first record."""
    if data[:4] != b"Obj\x01":
        raise ValueError("not an Avro container file")
    pos, codec = 4, b"null"
    while (count := _zigzag(data, pos))[0] != 0:
        n, pos = count
        if n < 0:
            n, pos = -n, _zigzag(data, pos)[1]  # a negative count is followed by a byte size
        for _ in range(n):
            klen, pos = _zigzag(data, pos)
            key, pos = data[pos:pos + klen], pos + klen
            vlen, pos = _zigzag(data, pos)
            codec, pos = (data[pos:pos + vlen] if key == b"avro.codec" else codec), pos + vlen
    pos = count[1] + 16  # the sync marker
    pos = _zigzag(data, pos)[1]  # objects in the block
    size, pos = _zigzag(data, pos)
    block = data[pos:pos + size]
    if codec == b"deflate":
        block = zlib.decompress(block, -15)
    elif codec != b"null":
        raise ValueError(f"unsupported Avro codec {codec!r}")
    branch, pos = _zigzag(block, 0)
    if branch != 1:
        return None
    length, pos = _zigzag(block, pos)
    return block[pos:pos + length].decode("utf-8")


def _zigzag(buf: bytes, pos: int) -> tuple[int, int]:
    """An Avro long (zig-zag varint) at ``pos``: (value, next position)."""
    shift = acc = 0
    while True:
        b = buf[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if not b & 0x80:
            return (acc >> 1) ^ -(acc & 1), pos
        shift += 7
