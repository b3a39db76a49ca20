"""The Hudi table-format plugin: the timeline for cheap inspection, Hudi's utilities to act.

The trigger policy mirrors Hudi's own inline table services, so a table moved from inline to TMS
maintenance keeps its behaviour: compaction uses Hudi's trigger strategies
(``hoodie.compact.inline.trigger.strategy`` with ``max.delta.commits`` / ``max.delta.seconds``),
clustering counts commits since the last clustering (``hoodie.clustering.inline.max.commits``),
and clean counts commits since the last clean. A plan that is already on the timeline is executed
before a new one is scheduled, as Hudi's own utilities would, so a failed run is finished rather
than piled on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tms.domain import Decision, JobSpec, Operation, Table, TableSpec
from tms.formats.base import DiscoveredTable, TableFormatPlugin, TableNotInCatalog
from tms.formats.hudi_discovery import discover_tables
from tms.formats.hudi_timeline import TimelineError, local_path, read_timeline

if TYPE_CHECKING:
    from tms.catalogs import CatalogAccess
from tms.policy import COMMON_KEYS, PolicyKey

DEFAULT_COMPACTION_DELTA_COMMITS = 5  # Hudi's hoodie.compact.inline.max.delta.commits
DEFAULT_COMPACTION_DELTA_SECONDS = 3600  # Hudi's hoodie.compact.inline.max.delta.seconds
DEFAULT_CLUSTERING_COMMITS = 4  # Hudi's hoodie.clustering.inline.max.commits
# Hudi cleans after every commit (hoodie.clean.max.commits=1) because inline cleaning is cheap;
# here each clean is a spark-submit costing seconds, so it waits for ten commits.
DEFAULT_CLEAN_COMMITS = 10
STRATEGIES = ("NUM_COMMITS", "TIME_ELAPSED", "NUM_AND_TIME", "NUM_OR_TIME")

COMPACTOR = "org.apache.hudi.utilities.HoodieCompactor"
CLUSTERING_JOB = "org.apache.hudi.utilities.HoodieClusteringJob"
CLEANER = "org.apache.hudi.utilities.HoodieCleaner"
MODES = ("scheduleAndExecute", "execute", "schedule")  # --mode of compactor and clustering job
_INSTANT_RE = re.compile(r"\d{14,20}")
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,127}")


@dataclass(frozen=True)
class ChoiceKey:
    """A policy key naming one of a fixed set (PolicyKey covers int and bool only)."""

    key: str
    choices: tuple[str, ...]
    default: str

    def parse(self, raw: str) -> str:
        value = raw.strip().upper()
        if value not in self.choices:
            raise ValueError(f"{self.key} must be one of {', '.join(self.choices)}, got {raw!r}")
        return value

    def get(self, overrides: Mapping[str, str]) -> str:
        raw = overrides.get(self.key)
        return self.default if raw is None else self.parse(raw)


@dataclass(frozen=True)
class ZoneKey:
    """The IANA zone of the writers' clocks: Hudi writes instant times in local time."""

    key: str
    default: str = "UTC"

    def parse(self, raw: str) -> tzinfo:
        name = raw.strip()
        if name.upper() == "UTC":
            return UTC
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{self.key} must be an IANA time zone such as UTC or "
                             f"Europe/Berlin, got {raw!r}") from None

    def get(self, overrides: Mapping[str, str]) -> tzinfo:
        return self.parse(overrides.get(self.key, self.default))


class _Parser(Protocol):
    def parse(self, raw: str) -> object: ...


STRATEGY = ChoiceKey("compaction.trigger-strategy", STRATEGIES, "NUM_COMMITS")
TIMEZONE = ZoneKey("timeline.timezone")
POLICY_KEYS: dict[str, PolicyKey] = {p.key: p for p in (
    PolicyKey("compaction.enabled", bool, True),
    PolicyKey("compaction.delta-commits", int, DEFAULT_COMPACTION_DELTA_COMMITS, 1),
    PolicyKey("compaction.delta-seconds", int, DEFAULT_COMPACTION_DELTA_SECONDS, 1),
    PolicyKey("clustering.enabled", bool, False),
    PolicyKey("clustering.commits", int, DEFAULT_CLUSTERING_COMMITS, 1),
    PolicyKey("clean.enabled", bool, True),
    PolicyKey("clean.commits", int, DEFAULT_CLEAN_COMMITS, 1),
)}
ALL_KEYS: dict[str, _Parser] = {**COMMON_KEYS, **POLICY_KEYS, STRATEGY.key: STRATEGY,
                                TIMEZONE.key: TIMEZONE}


def _int(key: str, policy: Mapping[str, str]) -> int:
    return int(POLICY_KEYS[key].get(policy))


def _on(key: str, policy: Mapping[str, str]) -> bool:
    return bool(POLICY_KEYS[key].get(policy))


class HudiFormat(TableFormatPlugin):
    name = "hudi"
    actions = ("compaction", "clustering", "clean")

    def validate(self, spec: TableSpec) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        try:
            if not spec.base_path or not local_path(spec.base_path).is_absolute():
                problems.append(("table.base_path", "required for hudi: an absolute path or "
                                 "file:// URI of the table (the directory holding .hoodie)"))
        except TimelineError as e:
            problems.append(("table.base_path", str(e)))
        if spec.table_name and not _NAME_RE.fullmatch(spec.table_name):
            problems.append(("table.table_name", "letters, digits, _ - (max 128)"))
        for k, v in spec.policy.items():
            parser = ALL_KEYS.get(k)
            try:
                if parser is None:
                    raise ValueError(f"unknown policy key; known: {', '.join(sorted(ALL_KEYS))}")
                parser.parse(v)
            except ValueError as e:
                problems.append((f"table.policy[{k}]", str(e)))
        return problems

    def locate(self, table: Table, catalog: CatalogAccess) -> str:
        """The base path, when it holds a Hudi table (``.hoodie/hoodie.properties``).
        A base path this process cannot read (an object store) raises
        UnsupportedSchemeError: unknown is not the same as gone."""
        props = local_path(table.base_path) / ".hoodie" / "hoodie.properties"
        if not props.is_file():
            raise TableNotInCatalog(f"no Hudi table at {table.base_path[:300]!r} (no "
                                    ".hoodie/hoodie.properties)")
        return table.base_path

    def discover(self, catalog: CatalogAccess) -> list[DiscoveredTable]:
        return discover_tables(catalog.allowed_locations)

    def inspect(self, table: Table) -> dict[str, Any]:
        return read_timeline(table.base_path, TIMEZONE.get(table.policy)).metrics()

    def evaluate(self, table: Table, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, Operation | None], now: datetime
                 ) -> list[Decision]:
        verdicts = {"compaction": _compaction(table.policy, metrics, now),
                    "clustering": _clustering(table.policy, metrics),
                    "clean": _clean(table.policy, metrics)}
        return [Decision(action, run, reason, dict(metrics), params)
                for action, (run, reason, params) in verdicts.items()]

    def build_job(self, table: Table, operation: Operation) -> JobSpec:
        if operation.action == "clean":
            return JobSpec(kind="jvm", app=CLEANER, args=("--target-base-path", table.base_path))
        if operation.action not in ("compaction", "clustering"):
            raise ValueError(f"hudi has no action {operation.action!r}")
        mode = str(operation.work.params.get("mode", "scheduleAndExecute"))
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
        # HoodieCompactor/HoodieClusteringJob require --table-name but use it only to name the
        # Spark app (in the sources checked): the registered name, else hoodie.table.name as
        # inspected, else the directory name
        name = re.sub(r"[^A-Za-z0-9_-]", "_", table.table_name
                      or str(operation.work.metrics.get("table_name") or "")
                      or PurePosixPath(urlsplit(table.base_path).path).name).lstrip("-")
        args = ["--base-path", table.base_path, "--table-name", name, "--mode", mode]
        if mode == "execute":
            instant = str(operation.work.params.get("instant", ""))
            if not _INSTANT_RE.fullmatch(instant):
                raise ValueError(f"mode execute needs the plan's instant time, got {instant!r}")
            args += ["--instant-time", instant]
        app = COMPACTOR if operation.action == "compaction" else CLUSTERING_JOB
        return JobSpec(kind="jvm", app=app, args=tuple(args))


Verdict = tuple[bool, str, dict[str, Any]]


def _pending(action: str, plans: list[str]) -> Verdict:
    return (True, f"{action} plan {plans[0]} is pending ({len(plans)} pending); executing it "
                  "before scheduling a new one", {"mode": "execute", "instant": plans[0]})


def _compaction(policy: Mapping[str, str], m: Mapping[str, Any], now: datetime) -> Verdict:
    if m["table_type"] != "MERGE_ON_READ":
        return (False, "compaction applies to MERGE_ON_READ tables only; this table is "
                       f"{m['table_type']}", {})
    if not _on("compaction.enabled", policy):
        return False, "compaction is disabled by policy (compaction.enabled=false)", {}
    if m["pending_compactions"]:
        return _pending("compaction", m["pending_compactions"])
    n, since = m["delta_commits_since_compaction"], "since the last compaction"
    if m["last_compaction_instant"] is None:
        since = "since the first delta commit (no compaction on the active timeline)"
    if n == 0:
        return False, f"0 delta commits {since}; nothing to compact", {}
    strategy = STRATEGY.get(policy)
    max_n, max_s = _int("compaction.delta-commits", policy), _int("compaction.delta-seconds",
                                                                  policy)
    clock = m["last_compaction_time"]
    age = None if clock is None else (now - datetime.fromisoformat(clock)).total_seconds()
    num_ok, time_ok = n >= max_n, age is not None and age >= max_s
    age_text = "unknown time" if age is None else f"{int(age)} s"  # never rounds up to a threshold
    if strategy == "NUM_COMMITS":
        run, why = num_ok, f"{n} delta commits {since} (threshold {max_n}, NUM_COMMITS)"
    elif strategy == "TIME_ELAPSED":
        run, why = time_ok, (f"{n} delta commits; {age_text} {since} "
                             f"(threshold {max_s} s, TIME_ELAPSED)")
    else:
        run = num_ok and time_ok if strategy == "NUM_AND_TIME" else num_ok or time_ok
        why = (f"{n} delta commits (threshold {max_n}) and {age_text} (threshold {max_s} s) "
               f"{since}, {strategy}")
    if age is not None and age < 0:
        why += "; the last instant is in the future: check the policy's timeline.timezone"
    return run, why, {"mode": "scheduleAndExecute"} if run else {}


def _clustering(policy: Mapping[str, str], m: Mapping[str, Any]) -> Verdict:
    if not _on("clustering.enabled", policy):
        return False, "clustering is disabled by policy (clustering.enabled=false)", {}
    if m["pending_clusterings"]:
        return _pending("clustering", m["pending_clusterings"])
    n, limit = m["commits_since_clustering"], _int("clustering.commits", policy)
    since = ("since the last clustering" if m["last_clustering_instant"]
             else "with no clustering on the active timeline")
    run = n >= limit
    return run, f"{n} commits {since} (threshold {limit})", (
        {"mode": "scheduleAndExecute"} if run else {})


def _clean(policy: Mapping[str, str], m: Mapping[str, Any]) -> Verdict:
    if not _on("clean.enabled", policy):
        return False, "clean is disabled by policy (clean.enabled=false)", {}
    n, limit = m["commits_since_clean"], _int("clean.commits", policy)
    since = ("since the last clean" if m["last_clean_instant"]
             else "with no clean on the active timeline")
    return n >= limit, f"{n} commits {since} (threshold {limit})", {}
