"""The Hudi table-format plugin: the timeline for cheap inspection, Hudi's utilities to act.

The trigger policy mirrors Hudi's own inline table services, so a table moved from inline to TMS
maintenance keeps its behaviour: compaction uses Hudi's trigger strategies
(``hoodie.compact.inline.trigger.strategy`` with ``max.delta.commits`` / ``max.delta.seconds``),
clustering counts commits since the last clustering (``hoodie.clustering.inline.max.commits``),
and clean counts commits since the last clean. A plan that is already on the timeline is executed
before a new one is scheduled, as Hudi's own utilities would, so a failed run is finished rather
than piled on.

The base path is a table owner's claim: before the timeline is read or a job built, it is
resolved (symlinks followed) and checked against the allowed locations (``checked_base_path``),
and only the resolved path is used afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tms.domain import CatalogType, Decision, JobSpec, Operation, Table, TableSpec
from tms.formats import hudi_jobs
from tms.formats.base import (
    CatalogUnreachable,
    DiscoveredTable,
    TableFormatPlugin,
    TableNotInCatalog,
)
from tms.formats.hudi_discovery import discover_tables
from tms.formats.hudi_timeline import (
    TimelineError,
    UnsupportedSchemeError,
    local_path,
    open_table,
    read_timeline,
)
from tms.formats.storage import StorageError
from tms.jobs import locations
from tms.jobs.locations import LOCAL_SCHEME, Location, LocationError
from tms.policy_types import PolicyKey, boolean, by_key, choice, integer, text, zone, zone_of

if TYPE_CHECKING:
    from tms.catalogs import CatalogAccess

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
_INSTANT_RE = re.compile(r"[0-9]{14,20}")
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,127}")


FORMAT = ("hudi",)
MAX_COMMITS = 100_000
MAX_SECONDS = 30 * 86_400
STRATEGY = choice("compaction.trigger-strategy", STRATEGIES, "NUM_COMMITS",
                  "Hudi's compaction trigger: count, time, both or either", FORMAT)
TIMEZONE = zone("timeline.timezone", "UTC", "the zone of the writers' clocks (Hudi instant "
                "times are local time)", FORMAT)
POLICY_KEYS: dict[str, PolicyKey] = by_key((
    boolean("compaction.enabled", True, "compact MERGE_ON_READ tables", FORMAT),
    integer("compaction.delta-commits", DEFAULT_COMPACTION_DELTA_COMMITS, 1, MAX_COMMITS,
            "count", "delta commits that trigger a compaction (NUM_* strategies)", FORMAT),
    integer("compaction.delta-seconds", DEFAULT_COMPACTION_DELTA_SECONDS, 1, MAX_SECONDS, "s",
            "time since the last compaction that triggers one (*_TIME strategies)", FORMAT),
    boolean("clustering.enabled", False, "cluster the table (Hudi's clustering job)", FORMAT),
    integer("clustering.commits", DEFAULT_CLUSTERING_COMMITS, 1, MAX_COMMITS, "count",
            "commits since the last clustering that trigger the next", FORMAT),
    boolean("clean.enabled", True, "clean old file versions", FORMAT),
    integer("clean.commits", DEFAULT_CLEAN_COMMITS, 1, MAX_COMMITS, "count",
            "commits since the last clean that trigger the next", FORMAT),
    STRATEGY, TIMEZONE,
))
_PLAN_PARAMS = by_key((
    choice("mode", MODES, None, "schedule and execute a plan, or execute the pending one",
           FORMAT),
    text("instant", None, _INSTANT_RE.pattern, "a Hudi instant time (14-20 digits)",
         "the pending plan to execute (mode execute)", FORMAT),
))
PARAMS: dict[str, dict[str, PolicyKey]] = {"compaction": _PLAN_PARAMS,
                                           "clustering": _PLAN_PARAMS, "clean": {}}


def resolve_base_path(base_path: str, allowed: Sequence[str]) -> tuple[str, Location]:
    """(the base path to use, the checked location): a local path with every symlink followed
    (kept a plain path or a ``file://`` URI, as given), an object-store path as given (no
    symlinks there, and Hadoop needs its own scheme: s3a stays s3a). Hadoop takes a path
    literally while the normaliser decodes percent-escapes once, so a local path with ``%`` is
    refused rather than guessed at, and other schemes are checked literally. LocationError (a
    ValueError) says why a path is refused."""
    literal = locations.parse(base_path, literal=True).scheme != LOCAL_SCHEME
    if not literal and "%" in base_path:
        raise LocationError(f"base path {base_path[:200]!r}: '%' is not allowed in a local path")
    where = locations.check(base_path, allowed, literal=literal)
    if literal:
        return base_path, where
    if "%" in where.path:
        raise LocationError(f"base path {base_path[:200]!r} resolves to {where.path[:200]!r}, "
                            "which contains '%'")
    return (where.path if base_path.startswith("/") else f"file://{where.path}"), where


def _int(key: str, policy: Mapping[str, str]) -> int:
    return int(POLICY_KEYS[key].get(policy))


def _on(key: str, policy: Mapping[str, str]) -> bool:
    return bool(POLICY_KEYS[key].get(policy))


class HudiFormat(TableFormatPlugin):
    name = "hudi"
    actions = ("compaction", "clustering", "clean")
    policy_keys = POLICY_KEYS
    action_params = PARAMS
    catalog_types = (CatalogType.HADOOP,)  # path tables: the catalog gives storage and bounds

    def validate(self, spec: TableSpec) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        try:
            if not spec.base_path:
                problems.append(("table.base_path", "required for hudi: an absolute path, "
                                 "file:// or object-store URI of the table (the directory "
                                 "holding .hoodie)"))
            elif locations.parse(spec.base_path, literal=True).local:
                local_path(spec.base_path)  # a file: URI on another host is refused
        except (TimelineError, LocationError) as e:
            problems.append(("table.base_path", str(e)))
        if spec.table_name and not _NAME_RE.fullmatch(spec.table_name):
            problems.append(("table.table_name", "letters, digits, _ - (max 128)"))
        return problems

    def locate(self, table: Table, catalog: CatalogAccess) -> str:
        """The base path, when it holds a Hudi table (``.hoodie/hoodie.properties``), read
        where it lives with the catalog's storage options. A base path whose storage cannot
        be read from here raises UnsupportedSchemeError, and one that cannot be reached
        CatalogUnreachable: unknown is not the same as gone. The base path is the table
        owner's claim: it is checked against the allowed locations before anything is read
        there (LocationError), so storage outside them is never probed."""
        resolve_base_path(table.base_path, catalog.allowed_locations)
        try:
            store, root = open_table(table.base_path, catalog.storage_options)
        except UnsupportedSchemeError:
            raise
        except TimelineError as e:
            raise TableNotInCatalog(str(e)) from None
        try:
            found = store.kind(store.join(root, ".hoodie", "hoodie.properties")) == "file"
        except StorageError as e:
            raise CatalogUnreachable(catalog.scrub(str(e))[:1000]) from None
        if not found:
            raise TableNotInCatalog(f"no Hudi table at {table.base_path[:300]!r} "
                                    "(.hoodie/hoodie.properties is missing)")
        return table.base_path

    def inspect(self, table: Table, catalog: CatalogAccess) -> dict[str, Any]:
        return read_timeline(table.location or table.base_path,
                             zone_of(TIMEZONE.as_str(table.policy)),
                             catalog.storage_options).metrics()

    @staticmethod
    def checked_base_path(table: Table, catalog: CatalogAccess) -> str:
        """The base path with every symlink resolved, inside the catalog's allowed locations
        and where the table was registered (LocationError / ValueError otherwise: a job must
        never run on a directory a symlink swapped in since)."""
        base, where = resolve_base_path(table.base_path, catalog.allowed_locations)
        if table.location and str(where) != table.location:
            raise ValueError(f"base path {table.base_path[:300]!r} now resolves to "
                             f"{str(where)!r}, not {table.location!r} where the table was checked")
        return base

    def discover(self, catalog: CatalogAccess) -> list[DiscoveredTable]:
        return discover_tables(catalog.allowed_locations, catalog.storage_options)

    def evaluate(self, table: Table, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, Operation | None], now: datetime
                 ) -> list[Decision]:
        verdicts = {"compaction": _compaction(table.policy, metrics, now),
                    "clustering": _clustering(table.policy, metrics),
                    "clean": _clean(table.policy, metrics)}
        return [Decision(action, run, reason, dict(metrics), params)
                for action, (run, reason, params) in verdicts.items()]

    def build_job(self, table: Table, catalog: CatalogAccess, operation: Operation) -> JobSpec:
        return hudi_jobs.build(table, catalog, operation, self.checked_base_path(table, catalog))


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
    strategy = STRATEGY.as_str(policy)
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
