"""Before a Hudi utility runs: what Hudi's rollback of a failed write would touch stays inside
the table.

Every Hudi write client, the utilities TMS starts included, first rolls back the writes that
failed (a commit, delta commit or replace commit left requested or inflight; the compactor and
clustering job also their own inflight instants). Hudi's rollback planner takes the files to
delete (or, for log files, to append rollback blocks to) from the instant's *markers* when its
marker directory exists (``MarkerBasedRollbackStrategy``), else from a listing of the
partitions and the instant's commit metadata (``ListingBasedRollbackStrategy``:
``partitionToWriteStats`` keys and each write stat's ``path``). Both are written by the table's
writers, who are not trusted, so for every pending instant of those actions (and, to be
safe, every marker directory and every not completed requested / inflight file of a commit
action, whatever its instant's name) TMS reads:

- the marker directory ``.hoodie/.temp/<instant>``: a ``MARKERS.type`` file holding
  ``TIMELINE_SERVER_BASED`` makes Hudi read the ``MARKERS<n>`` files there (one marker per
  line, ``MarkerUtils.readTimelineServerBasedMarkersFromFileSystem``); otherwise (``DIRECT`` or
  no type file) every file below the directory is a marker, named by its path relative to it.
  Both kinds are read whatever the type file says. A marker ``<path>.marker.<IOType>`` names
  ``<path>`` (up to the first ``.marker``), joined to the base path as Hadoop's
  ``Path(base, child)`` joins it (an absolute path or another bucket wins);
- the instant's ``.requested`` / ``.inflight`` files: commit metadata as JSON (table version 6)
  or Avro (8 and 9), every path in it checked as :mod:`tms.formats.hudi.plan_guard` checks a
  plan (write-stat paths are relative to the base path);
- for a local table, its whole tree: no symlink Hudi's partition listing would follow
  (:mod:`tms.formats.hudi.tree`).

Every path must resolve inside the table by the one location normaliser (local paths with
every symlink followed). The marker directory is walked without following a symlink (Hudi's
listing would follow one: a link there is refused), and its cost is bounded: more than
``MAX_MARKER_ENTRIES`` entries or ``MAX_MARKER_BYTES`` bytes of ``MARKERS`` files per table is a
refusal, as is a file that is no marker Hudi writes or is not UTF-8.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from tms.formats.hudi import tree as hudi_tree
from tms.formats.hudi.plan_paths import path_problem, problems, shown
from tms.formats.hudi.plans import AVRO_MAGIC, MAX_PLAN_BYTES, PendingPlan, PlanRefused, decode
from tms.formats.hudi.timeline import State, scan_instants
from tms.formats.storage import Entry, LocalStore, Store, SymlinkRefused
from tms.locations import Location

TEMP_DIR = ".temp"  # HoodieTableMetaClient.TEMPFOLDER_NAME, under .hoodie
MARKER_EXTN = ".marker"  # HoodieTableMetaClient.MARKER_EXTN
MARKERS_PREFIX = "MARKERS"  # MarkerUtils.MARKERS_FILENAME_PREFIX
MARKER_TYPE_FILE = "MARKERS.type"
IO_TYPES = frozenset({"CREATE", "MERGE", "APPEND"})  # Hudi's IOType
MARKER_TYPES = frozenset({"", "DIRECT", "TIMELINE_SERVER_BASED"})
MAX_MARKER_ENTRIES = 500_000  # entries listed plus markers read, per table
MAX_MARKER_BYTES = 64 << 20  # bytes of MARKERS files read, per table
MAX_MARKER_DEPTH = 32  # directory levels below a marker directory (partition depth)
MAX_TYPE_FILE_BYTES = 64
# pending actions Hudi rolls back through markers or commit metadata (its commits timeline)
ROLLED_BACK_ACTIONS = frozenset({"commit", "deltacommit", "replacecommit", "compaction",
                                 "logcompaction", "clustering"})
# of those, the ones whose requested / inflight files hold commit metadata, not a plan
COMMIT_METADATA_ACTIONS = frozenset({"commit", "deltacommit", "replacecommit"})
# a requested / inflight file as Hudi 0.x names it (any instant time; ``<t>.inflight``: commit)
_LOOSE_PENDING = re.compile(r"([^.]+)\.(?:([a-z]+)\.)?(requested|inflight)")


@dataclass
class Budget:
    """What is left to read of one table's markers (a hostile table cannot make TMS read
    more than this)."""

    max_entries: int = MAX_MARKER_ENTRIES
    max_bytes: int = MAX_MARKER_BYTES
    entries: int = 0
    bytes: int = 0

    def spend(self, entries: int = 0, size: int = 0) -> None:
        self.entries += entries
        self.bytes += size
        if self.entries > self.max_entries:
            raise PlanRefused(f"more than {self.max_entries} marker entries: not checked")
        if self.bytes > self.max_bytes:
            raise PlanRefused(f"more than {self.max_bytes} bytes of MARKERS files: not checked")


def check_writes(store: Store, root: str, timeline_dir: str, table: Location) -> int:
    """Check the markers and commit metadata of every pending write of the table whose root is
    ``root`` in ``store`` (timeline in ``timeline_dir``, resolved base ``table``); returns how
    many markers were checked. PlanRefused (final) names the instant and its first offending
    values; StorageError when something cannot be read now."""
    temp = store.join(root, ".hoodie", TEMP_DIR)
    if any(e.name == TEMP_DIR and not e.is_dir
           for e in store.list_dir(store.join(root, ".hoodie"))):
        raise PlanRefused(f"{str(table)[:300]}/.hoodie/{TEMP_DIR} is not a directory (a "
                          "symlink Hudi would follow to roll back and delete markers)")
    budget = Budget(MAX_MARKER_ENTRIES, MAX_MARKER_BYTES)  # read now: tests lower them
    files = {e.name: e for e in store.list_dir(timeline_dir)}
    odd = sorted(n for n, e in files.items() if not e.is_file and not e.is_dir)
    if odd:  # TMS's timeline reader skips these; Hudi would follow one as an instant
        raise PlanRefused(f"timeline entry {odd[0][:200]!r} is not a regular file or "
                          "directory (a symlink Hudi would read as an instant to roll back)")
    subjects = _subjects(store, timeline_dir, temp, files)
    checked = 0
    if subjects and isinstance(store, LocalStore):  # Hudi's listing rollback walks it all
        links = hudi_tree.links(store, root)
        if links:
            raise PlanRefused(f"failed Hudi write refused, {subjects[0][1]}: {links[0][:200]!r} "
                              "is not a regular file or directory (a symlink Hudi's "
                              "listing-based rollback would follow)")
    for time, label, metadata in subjects:
        found: list[str] = []
        try:
            markers = read_markers(store, store.join(temp, time), budget)
            for source, marker in markers:
                found += marker_problems(source, marker, table)
            checked += len(markers)
            for name in metadata:
                found += _metadata_problems(store, timeline_dir, files[name], time, table)
        except (SymlinkRefused, PlanRefused) as e:
            found.append(str(e))
        if found:
            raise PlanRefused(f"failed Hudi write refused, {label}: {shown(found)}; Hudi rolls "
                              "it back before any utility runs, so none runs on this table "
                              "until its owner removes the instant's markers and files")
    return checked


def read_markers(store: Store, marker_dir: str, budget: Budget) -> list[tuple[str, str]]:
    """(where it was read, the marker) for every marker of one instant, of both kinds;
    empty when the instant has no marker directory. PlanRefused for anything Hudi does not
    write there, a symlink, or past the budget."""
    out: list[tuple[str, str]] = []
    stack: list[tuple[str, str, int]] = [(marker_dir, "", 0)]
    while stack:
        directory, rel, depth = stack.pop()
        entries = store.list_dir(directory)
        budget.spend(entries=len(entries))
        for e in sorted(entries, key=lambda e: e.name):
            child = f"{rel}/{e.name}" if rel else e.name
            if e.is_dir:
                if depth + 1 > MAX_MARKER_DEPTH:
                    raise PlanRefused(f"marker directory {child[:200]!r} is nested deeper "
                                      f"than {MAX_MARKER_DEPTH}")
                stack.append((store.join(directory, e.name), child, depth + 1))
            elif not e.is_file:
                raise PlanRefused(f"marker entry {child[:200]!r} is not a regular file or "
                                  "directory (a symlink Hudi's listing would follow)")
            elif not rel and e.name == MARKER_TYPE_FILE:
                _check_type_file(store, store.join(directory, e.name), e.size)
            elif not rel and e.name.startswith(MARKERS_PREFIX):
                budget.spend(size=e.size)  # refused from its listed size, unread
                left = budget.max_bytes - budget.bytes + e.size  # it may have grown since
                data = store.read(store.join(directory, e.name), left)
                budget.spend(size=len(data) - e.size)
                lines = _lines(data, e.name)
                budget.spend(entries=len(lines))
                out += [(e.name, line) for line in lines if line]
                if MARKER_EXTN in e.name:  # Hudi's direct listing reads it as a marker too
                    out.append(("direct", child))
            else:
                out.append(("direct", child))
    return out


def marker_problems(source: str, marker: str, table: Location) -> list[str]:
    """Why the file ``marker`` names (from ``source``: ``direct`` or a MARKERS file) is
    refused, as Hudi's rollback would join it to the base path; empty when it stays inside."""
    where = "direct marker" if source == "direct" else f"marker in {source}"
    cut = marker.find(MARKER_EXTN)  # WriteMarkers.stripMarkerSuffix: up to the first .marker
    if not _is_marker(marker):
        return [f"{where} {marker[:200]!r} is not a <file>{MARKER_EXTN}.<CREATE|MERGE|APPEND> "
                "marker"]
    why = path_problem(marker[:cut], str(table), None, table)
    return [f"{where} {marker[:200]!r} names a file that {why}"] if why else []


def _check_type_file(store: Store, path: str, size: int) -> None:
    if size > MAX_TYPE_FILE_BYTES:
        raise PlanRefused(f"{MARKER_TYPE_FILE} is {size} bytes, not a marker type")
    text = store.read(path, MAX_TYPE_FILE_BYTES).decode("utf-8", errors="replace")
    if not any(t.startswith(text) for t in MARKER_TYPES):  # a prefix: being written now
        raise PlanRefused(f"{MARKER_TYPE_FILE} holds {text[:40]!r}, not a marker type Hudi "
                          "writes")


def _lines(data: bytes, name: str) -> list[str]:
    """Lines as Java's BufferedReader reads them; PlanRefused when not UTF-8 or holding a NUL
    (garbage, not markers). The timeline server ends every marker with a newline and rewrites
    the file as it goes, so a last line without one may be cut mid-write (mid-character too):
    it is kept, decoded as Java decodes it, only when it reads as a marker (Hudi fails on one
    that does not, deleting nothing)."""
    complete, _, tail = data.rpartition(b"\n")
    try:
        text = complete.decode("utf-8")
    except UnicodeDecodeError:
        raise PlanRefused(f"marker file {name[:100]!r} is not UTF-8") from None
    if "\0" in text:
        raise PlanRefused(f"marker file {name[:100]!r} holds a NUL byte")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    last = tail.decode("utf-8", errors="replace")  # as Java decodes it
    return lines + [t for t in last.replace("\r", "\n").split("\n") if _is_marker(t)]


def _is_marker(line: str) -> bool:
    return line.find(MARKER_EXTN) > 0 and line.rsplit(".", 1)[-1] in IO_TYPES


def _subjects(store: Store, timeline_dir: str, temp: str, files: dict[str, Entry]
              ) -> list[tuple[str, str, list[str]]]:
    """(instant time, label, its commit-metadata files) of everything Hudi could roll back:
    every pending instant of ROLLED_BACK_ACTIONS by TMS's timeline reader; every requested or
    inflight file of a commit action whose instant that reader does not find completed (named
    loosely: Hudi 0.x takes any instant time); every directory in ``.hoodie/.temp``."""
    instants = scan_instants(store, timeline_dir)
    done = {i.time for i in instants if i.state is State.COMPLETED}
    labels = {i.time: f"{i.time} {i.action} ({i.state.value.lower()})" for i in instants
              if i.state is not State.COMPLETED and i.action in ROLLED_BACK_ACTIONS}
    metadata: dict[str, list[str]] = {}
    for name in sorted(files):
        m = _LOOSE_PENDING.fullmatch(name)
        if m and (m[2] or "commit") in COMMIT_METADATA_ACTIONS and m[1] not in done:
            metadata.setdefault(m[1], []).append(name)
    temp_entries = store.list_dir(temp)
    odd = sorted(e.name for e in temp_entries if not e.is_file and not e.is_dir)
    if odd:
        raise PlanRefused(f"{TEMP_DIR} entry {odd[0][:200]!r} is not a regular file or "
                          "directory (a symlink Hudi would follow to its markers)")
    times = labels.keys() | metadata.keys() | {e.name for e in temp_entries if e.is_dir}
    return [(t, labels.get(t, f"{t} (a write's markers or metadata)"), metadata.get(t, []))
            for t in sorted(times)]


def _metadata_problems(store: Store, timeline_dir: str, entry: Entry, instant: str,
                       table: Location) -> list[str]:
    """What the commit metadata in the timeline file ``entry`` names outside ``table``."""
    name = entry.name
    if not entry.is_file:
        raise PlanRefused(f"{name} is not a regular file (a symlink or a directory)")
    if entry.size > MAX_PLAN_BYTES:
        raise PlanRefused(f"{name} is {entry.size} bytes, above the {MAX_PLAN_BYTES} commit "
                          "metadata may have")
    data = store.read(store.join(timeline_dir, name), MAX_PLAN_BYTES)
    if not data.strip():
        return []  # no metadata written yet: Hudi's rollback lists the partitions
    if data.startswith(AVRO_MAGIC):
        schema_name, record = decode(data, name)
    else:
        try:
            record = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError) as e:
            raise PlanRefused(f"{name} is neither Avro nor JSON commit metadata: "
                              f"{type(e).__name__}") from None
        schema_name = "HoodieCommitMetadata (JSON)"
    state = "inflight" if name.endswith("inflight") else "requested"
    return [f"{name}: {p}" for p in problems(
        PendingPlan(instant, "commit", state, name, schema_name, record), table)]


__all__ = ["MAX_MARKER_BYTES", "MAX_MARKER_ENTRIES", "Budget", "check_writes",
           "marker_problems", "read_markers"]
