"""What Hudi's cleaner would delete, under the *writer's* cleaner policy and retention.

Retention is a writer setting (never in ``hoodie.properties``): a clean run with Hudi's defaults
(keep the latest 10 commits) on a table whose writers keep 30 deletes file versions that long
queries and incremental readers still use. So the policy comes from the writer's configuration
(:func:`tms.formats.hudi.writer.writer_properties`) and, when it is unknown or lacks the
retention, :func:`cleaner_config` says which keys to set instead of guessing.

:func:`cleanable` follows Hudi's ``CleanPlanner`` / ``CleanerUtils.getEarliestCommitToRetain``:

- KEEP_LATEST_COMMITS: with more than N completed commits (commit, deltacommit, replacecommit),
  the earliest commit to retain is the N-th newest, moved back before the earliest pending
  write or table service; in each file group the latest slice and the newest slice before that
  commit are kept, older ones go.
- KEEP_LATEST_BY_HOURS: the same with the earliest commit at or after ``now - hours`` (instant
  times in the writers' zone).
- KEEP_LATEST_FILE_VERSIONS: the newest N slices of each file group are kept.
- File groups a completed replacecommit replaced (clustering, insert_overwrite) go entirely,
  for the commit policies only when replaced before the earliest commit to retain.

Pending compaction plans and savepoints are honoured conservatively: without reading the Avro
plan, every file group is taken to be in a pending compaction (its newest slice before the plan
and every later one are kept), and the slice each file group had at a savepoint is kept. So
TMS may find less to clean than Hudi would, never more.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from tms.formats.hudi.slices import FileSlice
from tms.formats.hudi.timeline import WRITE_ACTIONS, Instant, State
from tms.formats.hudi.writer import FILE_PROPERTY as WRITER_FILE_PROPERTY
from tms.formats.hudi.writer import PREFIX as WRITER_PREFIX

POLICY_KEY = "hoodie.cleaner.policy"
COMMITS_KEY = "hoodie.cleaner.commits.retained"
VERSIONS_KEY = "hoodie.cleaner.fileversions.retained"
HOURS_KEY = "hoodie.cleaner.hours.retained"
KEEP_MIN_KEY = "hoodie.keep.min.commits"
KEEP_MAX_KEY = "hoodie.keep.max.commits"
DEFAULT_KEEP_MIN_COMMITS = 20  # Hudi's archival defaults
DEFAULT_KEEP_MAX_COMMITS = 30
MAX_RETAINED = 1_000_000


class CleanerPolicy(enum.StrEnum):
    KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
    KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
    KEEP_LATEST_BY_HOURS = "KEEP_LATEST_BY_HOURS"


RETENTION_KEY = {CleanerPolicy.KEEP_LATEST_COMMITS: COMMITS_KEY,
                 CleanerPolicy.KEEP_LATEST_FILE_VERSIONS: VERSIONS_KEY,
                 CleanerPolicy.KEEP_LATEST_BY_HOURS: HOURS_KEY}
_MIN_RETAINED = {COMMITS_KEY: 1, VERSIONS_KEY: 1, HOURS_KEY: 1}


@dataclass(frozen=True)
class CleanerConfig:
    policy: CleanerPolicy
    retained: int  # commits, file versions or hours, as the policy counts

    @property
    def key(self) -> str:
        return RETENTION_KEY[self.policy]


def cleaner_config(props: Mapping[str, str] | None, unknown: str = ""
                   ) -> CleanerConfig | str:
    """The writer's cleaner policy and retention, or why TMS cannot know them (a reason that
    names the keys to set). The policy defaults to Hudi's (KEEP_LATEST_COMMITS); the retention
    never does: Hudi's default is exactly what must not be assumed. ``unknown``: why ``props``
    is None, naming the catalog properties to set (:func:`tms.formats.hudi.writer.
    unknown_reason`)."""
    keys = (f"{POLICY_KEY} and {COMMITS_KEY} (or {VERSIONS_KEY} / {HOURS_KEY} for "
            "KEEP_LATEST_FILE_VERSIONS / KEEP_LATEST_BY_HOURS)")
    if props is None:
        why = unknown or ("no writer configuration for this table: set catalog properties "
                          f"{WRITER_PREFIX}<hoodie key> or {WRITER_FILE_PROPERTY}")
        return (f"the writers' cleaner retention is unknown: {why}; the cleaner needs {keys} "
                f"(as catalog properties: {WRITER_PREFIX}{POLICY_KEY} and "
                f"{WRITER_PREFIX}{COMMITS_KEY} ...)")
    raw = props.get(POLICY_KEY, CleanerPolicy.KEEP_LATEST_COMMITS.value).strip().upper()
    try:
        policy = CleanerPolicy(raw)
    except ValueError:
        return (f"the writer configuration's {POLICY_KEY}={raw[:80]!r} is not one of "
                f"{', '.join(p.value for p in CleanerPolicy)}")
    key = RETENTION_KEY[policy]
    value = props.get(key)
    if value is None:
        return (f"the writer configuration has {POLICY_KEY}={policy.value} but no {key}: set "
                f"{key} to the writers' retention (catalog property {WRITER_PREFIX}{key}, or "
                f"in the writer properties file; TMS never cleans with Hudi's default)")
    value = value.strip()
    if not value.isdigit() or not _MIN_RETAINED[key] <= int(value) <= MAX_RETAINED:
        return (f"the writer configuration's {key}={value[:40]!r} is not a whole number "
                f"from {_MIN_RETAINED[key]} to {MAX_RETAINED}")
    if policy is CleanerPolicy.KEEP_LATEST_COMMITS:
        archival = _archival_problem(props, int(value))
        if archival:
            return archival
    return CleanerConfig(policy, int(value))


def _archival_problem(props: Mapping[str, str], retained: int) -> str | None:
    """Hudi refuses a writer configuration whose archival keeps fewer instants than the
    cleaner retains (keep.min.commits must exceed commits.retained, keep.max.commits must
    exceed keep.min.commits): the jobs would fail, so the clean is not decided either."""
    raw_min = props.get(KEEP_MIN_KEY, str(DEFAULT_KEEP_MIN_COMMITS)).strip()
    raw_max = props.get(KEEP_MAX_KEY, str(DEFAULT_KEEP_MAX_COMMITS)).strip()
    if not (raw_min.isdigit() and raw_max.isdigit()):
        return f"the writer configuration's {KEEP_MIN_KEY} / {KEEP_MAX_KEY} are not numbers"
    keep_min, keep_max = int(raw_min), int(raw_max)
    if keep_min <= retained or keep_max <= keep_min:
        return (f"{KEEP_MIN_KEY} ({keep_min}) must exceed {COMMITS_KEY} ({retained}) and "
                f"{KEEP_MAX_KEY} ({keep_max}) must exceed it: Hudi refuses this writer "
                "configuration")
    return None


@dataclass(frozen=True)
class Cleanable:
    """What a clean would delete now."""

    files: int
    bytes: int
    file_groups: int  # file groups losing at least one version
    earliest_retained: str | None  # the commit policies' earliest commit to retain


def earliest_commit_to_retain(instants: Iterable[Instant], config: CleanerConfig,
                              now: datetime, timezone: tzinfo) -> str | None:
    """Hudi's earliest commit to retain (None: nothing is old enough to clean)."""
    instants = list(instants)
    done = [i.time for i in instants if i.state is State.COMPLETED and i.action in WRITE_ACTIONS]
    if config.policy is CleanerPolicy.KEEP_LATEST_COMMITS:
        if len(done) <= config.retained:
            return None
        nth = done[len(done) - config.retained]
        pending = [i.time for i in instants if i.state is not State.COMPLETED
                   and i.action in WRITE_ACTIONS | {"compaction", "clustering", "logcompaction"}]
        if pending and nth > pending[0]:
            before = [t for t in done if t < pending[0]]
            return before[-1] if before else None
        return nth
    if config.policy is CleanerPolicy.KEEP_LATEST_BY_HOURS:
        cutoff = (now - timedelta(hours=config.retained)).astimezone(timezone)
        text = cutoff.strftime("%Y%m%d%H%M%S") + f"{cutoff.microsecond // 1000:03d}"
        return next((t for t in done if t >= text), None)
    return None


def cleanable(groups: Mapping[tuple[str, str], list[FileSlice]],
              replaced: Mapping[tuple[str, str], str], instants: Iterable[Instant],
              config: CleanerConfig, now: datetime, timezone: tzinfo) -> Cleanable:
    """What Hudi's cleaner would delete from ``groups`` (every slice, newest first) given the
    file groups ``replaced`` (by the completed replacecommit's instant)."""
    instants = list(instants)
    earliest = earliest_commit_to_retain(instants, config, now, timezone)
    by_commits = config.policy is not CleanerPolicy.KEEP_LATEST_FILE_VERSIONS
    if by_commits and earliest is None:
        return Cleanable(0, 0, 0, None)
    compactions = [i.time for i in instants
                   if i.state is not State.COMPLETED and i.action == "compaction"]
    savepoints = [i.time for i in instants if i.state is State.COMPLETED
                  and i.action == "savepoint"]
    files = size = touched = 0
    for key, slices in groups.items():
        keep = _kept(slices, compactions, savepoints)
        if key in replaced:
            if by_commits and not (earliest is not None and replaced[key] < earliest):
                continue
            gone = [s for s in slices if s.base_instant not in keep]
        elif by_commits:
            gone = _by_commits(slices, earliest or "", keep)
        else:
            gone = _by_versions(slices, config.retained, keep, bool(compactions))
        if gone:
            touched += 1
            for s in gone:
                files += len(s.files())
                size += sum(n for _, n in s.files())
    return Cleanable(files, size, touched, earliest)


def _kept(slices: list[FileSlice], compactions: list[str], savepoints: list[str]) -> set[str]:
    """Slices no policy may delete: those a pending compaction may need and savepointed ones."""
    keep: set[str] = set()
    for t in compactions:
        keep |= {s.base_instant for s in slices if s.base_instant >= t}
        keep |= _newest(slices, t, inclusive=False)
    for t in savepoints:
        keep |= _newest(slices, t, inclusive=True)
    return keep


def _newest(slices: list[FileSlice], t: str, inclusive: bool) -> set[str]:
    """The base instant of the newest slice before ``t`` (or at it), as a set of none or one."""
    return next(({s.base_instant} for s in slices
                 if s.base_instant < t or (inclusive and s.base_instant == t)), set())


def _by_commits(slices: list[FileSlice], earliest: str, keep: set[str]) -> list[FileSlice]:
    if not slices:
        return []
    latest = slices[0].base_instant
    before = next((s.base_instant for s in slices if s.base_instant < earliest), None)
    return [s for s in slices if s.base_instant not in keep | {latest, before}
            and s.base_instant < earliest]


def _by_versions(slices: list[FileSlice], versions: int, keep: set[str],
                 pending_compaction: bool) -> list[FileSlice]:
    rest = [s for s in slices if s.base_instant not in keep]
    if pending_compaction:  # Hudi: the pending compaction's slice is one of the kept versions
        versions -= 1
    return rest[max(versions, 0):]
