"""Everything the Hudi decisions need, read from a table's metadata: the metrics of one look.

On top of the timeline summary (:mod:`tms.formats.hudi.timeline`) this adds:

- Hudi's own delta-commit counts for the compaction trigger, as the table's Hudi version counts
  them. Hudi 0.x (table version <= 6) counts delta commits of every state
  (``getDeltaCommitTimeline`` is not filtered) after the last completed ``commit`` *or
  replacecommit* (its ``getCommitTimeline``), or from the first delta commit of any state when
  there is none; that instant also starts the TIME_ELAPSED clock. Hudi 1.x (table version >= 8)
  counts completed delta commits only (``getCompletedDeltaCommitsSinceLatestCompaction``,
  HUDI-5505) after the last completed ``commit`` only (HUDI-7532), so the two differ after an
  insert_overwrite or a clustering and while writes are in flight. Hudi 0.15 already takes
  only ``commit`` as the last compaction; for version 6 TMS keeps 0.14's rule, the one that
  counts fewer, so a compaction TMS decides on is one either release schedules.
  NUM_COMMITS_AFTER_LAST_REQUEST counts delta commits of every state from the newest pending
  compaction plan instead (``getDeltaCommitsSinceLatestCompactionRequest``).
- The latest file slices (hudi-rs): what a compaction plan would hold (slices with log files)
  and a clustering plan (slices whose base file is below the plan strategy's small-file limit).
- Every pending instant of every action with its heartbeat (``.hoodie/.heartbeat/<instant>``;
  Hudi deems a writer dead once that file is older than interval x tolerable misses, or absent).
- What the writers' cleaner would delete now, under their retention (:mod:`.hudi_clean`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, tzinfo
from typing import Any

from tms.formats.hudi import clean as hudi_clean
from tms.formats.hudi.slices import FileSlice, SlicesError, all_file_groups, latest_slices
from tms.formats.hudi.timeline import (
    State,
    TimelineSummary,
    open_table,
    parse_instant_time,
)
from tms.formats.storage import StorageError, Store

HEARTBEAT_INTERVAL_MS_KEY = "hoodie.client.heartbeat.interval_in_ms"
HEARTBEAT_MISSES_KEY = "hoodie.client.heartbeat.tolerable.misses"
DEFAULT_HEARTBEAT_INTERVAL_MS = 60_000  # Hudi's default heartbeat interval
DEFAULT_HEARTBEAT_MISSES = 2  # Hudi's default tolerable misses
SMALL_FILE_LIMIT_KEY = "hoodie.clustering.plan.strategy.small.file.limit"
DEFAULT_SMALL_FILE_LIMIT_BYTES = 300 * 1024 * 1024  # Hudi's default clustering small-file limit
SINGLE_GROUP_KEY = "hoodie.clustering.plan.strategy.single.group.clustering.enabled"
SORT_COLUMNS_KEY = "hoodie.clustering.plan.strategy.sort.columns"
MAX_LIMIT = 1 << 50
# set when the file slices or file versions could not be read: a decision not to run is then
# "cannot tell", not "not needed" (the executor's recheck runs the operation as decided)
UNREADABLE = "files_unreadable"


def _positive(props: Mapping[str, str] | None, key: str, default: int) -> int:
    """A positive whole number from the writer configuration, else Hudi's default."""
    value = (props or {}).get(key, "").strip()
    return int(value) if value.isdigit() and 0 < int(value) <= MAX_LIMIT else default


def heartbeat_expiry_s(props: Mapping[str, str] | None) -> float:
    """Hudi's heartbeat expiry: interval x tolerable misses, from the writers' settings."""
    return (_positive(props, HEARTBEAT_INTERVAL_MS_KEY, DEFAULT_HEARTBEAT_INTERVAL_MS)
            * _positive(props, HEARTBEAT_MISSES_KEY, DEFAULT_HEARTBEAT_MISSES) / 1000)


def delta_commit_counts(s: TimelineSummary, tz: tzinfo) -> dict[str, Any]:
    """Hudi's compaction-trigger inputs, counted as the table's Hudi version counts them."""
    v1 = s.table_version >= 8
    boundary = {"commit"} if v1 else {"commit", "replacecommit"}
    done = [i for i in s.instants if i.state is State.COMPLETED]
    last = next((i.time for i in reversed(done) if i.action in boundary), None)
    every_state = [i.time for i in s.instants if i.action == "deltacommit"]
    deltas = [i.time for i in (done if v1 else s.instants) if i.action == "deltacommit"]
    since = [t for t in deltas if last is None or t > last]
    requested = [i.time for i in s.instants
                 if i.state is not State.COMPLETED and i.action == "compaction"]
    last_request = requested[-1] if requested else last
    clock = last if last is not None else (deltas[0] if deltas else None)
    try:
        clock_at = None if clock is None else parse_instant_time(clock, tz).isoformat()
    except ValueError:
        clock_at = None
    return {"hudi_last_compaction": last, "hudi_delta_commits": len(since),
            "hudi_compaction_clock": clock_at,
            "hudi_delta_commits_after_request": sum(
                1 for t in every_state if last_request is None or t > last_request),
            "hudi_counting": "1.x" if v1 else "0.x"}


def pending_instants(s: TimelineSummary, store: Store, root: str) -> list[dict[str, Any]]:
    """Every pending instant, oldest first, with its heartbeat file's mtime (None: absent)."""
    beats: dict[str, float | None] = {}
    try:
        beats = {e.name: e.mtime_s for e in store.list_dir(store.join(root, ".hoodie",
                                                                      ".heartbeat"))
                 if e.is_file}
    except StorageError:
        pass
    clusterings = set(s.pending_clusterings)
    return [{"instant": i.time, "state": i.state.value, "heartbeat_s": beats.get(i.time),
             "action": "clustering" if i.time in clusterings else i.action}
            for i in s.instants if i.state is not State.COMPLETED]


def slice_metrics(slices: list[FileSlice], replaced: Mapping[tuple[str, str], str],
                  props: Mapping[str, str] | None) -> dict[str, Any]:
    """The latest file slices as compaction and clustering plans would see them."""
    limit = _positive(props, SMALL_FILE_LIMIT_KEY, DEFAULT_SMALL_FILE_LIMIT_BYTES)
    small = [s for s in slices if s.base_size < limit]
    per_partition = Counter(s.partition for s in small)
    single = ((props or {}).get(SINGLE_GROUP_KEY, "true").strip().lower() != "false"
              or bool((props or {}).get(SORT_COLUMNS_KEY, "").strip()))
    return {
        "file_groups": len(slices), "replaced_file_groups": len(replaced),
        "base_files": sum(1 for s in slices if s.base_file),
        "base_bytes": sum(s.base_size for s in slices),
        "log_files": sum(len(s.logs) for s in slices),
        "log_bytes": sum(n for s in slices for _, n in s.logs),
        "slices_with_logs": sum(1 for s in slices if s.logs),
        "small_file_limit_bytes": limit,
        "small_base_files": len(small),
        # the default plan strategy clusters one small file alone only when single-group
        # clustering is on (Hudi's default) or sort columns are set
        "clusterable_file_groups": sum(n for n in per_partition.values() if single or n > 1),
    }


def clean_metrics(s: TimelineSummary, store: Store, root: str,
                  replaced: Mapping[tuple[str, str], str], props: Mapping[str, str] | None,
                  now: datetime, tz: tzinfo, unknown_writer: str = "") -> dict[str, Any]:
    """What the writers' cleaner would delete now, or why that cannot be known
    (``unknown_writer``: why ``props`` is None, naming what to set)."""
    config = hudi_clean.cleaner_config(props, unknown_writer)
    if isinstance(config, str):
        return {"clean_unknown": config}
    out: dict[str, Any] = {"cleaner_policy": config.policy.value,
                           "cleaner_retained": config.retained,
                           "cleaner_retention_key": config.key}
    try:
        groups = all_file_groups(store, root, s.instants, s.table_version)
    except (SlicesError, StorageError) as e:
        return {**out, UNREADABLE: True,
                "clean_unknown": f"cannot list the file versions: {str(e)[:500]}"}
    found = hudi_clean.cleanable(groups, replaced, s.instants, config, now, tz)
    return {**out, "cleanable_files": found.files, "cleanable_bytes": found.bytes,
            "cleanable_file_groups": found.file_groups,
            "earliest_commit_to_retain": found.earliest_retained}


def inspect(s: TimelineSummary, base: str, storage_options: Mapping[str, str],
            props: Mapping[str, str] | None, now: datetime, tz: tzinfo,
            with_clean: bool = True, scrub: Callable[[str], str] = str,
            unknown_writer: str = "") -> dict[str, Any]:
    """The metrics of one look at a table (JSON-serialisable). ``tz``: the writers' zone from
    the policy, unless the table keeps its timeline in UTC (``hoodie.table.timeline.timezone``).
    ``unknown_writer``: why ``props`` is None (what to set), for the clean's reason."""
    tz = UTC if s.timezone == "UTC" else tz
    m = _inspect(s, base, storage_options, props, now, tz, with_clean, unknown_writer)
    for key in ("slices_error", "clean_unknown"):  # errors may quote storage options
        if key in m:
            m[key] = scrub(m[key])
    return m


def _inspect(s: TimelineSummary, base: str, storage_options: Mapping[str, str],
             props: Mapping[str, str] | None, now: datetime, tz: tzinfo,
             with_clean: bool, unknown_writer: str) -> dict[str, Any]:
    store, root = open_table(base, storage_options)
    m = s.metrics()
    m.update(delta_commit_counts(s, tz))
    m["writer_config_known"] = props is not None
    m["heartbeat_expiry_s"] = heartbeat_expiry_s(props)
    m["pending"] = pending_instants(s, store, root)
    try:
        slices, replaced = latest_slices(base, storage_options)
    except SlicesError as e:
        m["slices_error"] = str(e)
        m[UNREADABLE] = True
        if with_clean:
            m["clean_unknown"] = f"the replaced file groups are unknown: {e}"
        return m
    m.update(slice_metrics(slices, replaced, props))
    if with_clean:
        m.update(clean_metrics(s, store, root, replaced, props, now, tz, unknown_writer))
    return m
