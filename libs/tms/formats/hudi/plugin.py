"""The Hudi table-format plugin: the timeline for cheap inspection, Hudi's utilities to act.

The policy (:mod:`.hudi_policy`) mirrors Hudi's own inline table services; inspection
(:mod:`.hudi_inspect`) reads the timeline, the file slices and the writers' cleaner retention; the
decisions (:mod:`.hudi_decide`) schedule a plan only when it would hold work and run a plan
already on the timeline first.

The base path is a table owner's claim: before the timeline is read or a job built, it is
resolved (symlinks followed) and checked against the allowed locations (``checked_base_path``),
and only the resolved path is used afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import structlog

from tms import locations, table_boundary
from tms.domain import CatalogType, Decision, JobSpec, Operation, Table, TableSpec
from tms.formats.base import (
    CatalogUnreachable,
    DiscoveredTable,
    TableFormatPlugin,
    TableNotInCatalog,
)
from tms.formats.hudi import clean_guard as hudi_clean_guard
from tms.formats.hudi import decide as hudi_decide
from tms.formats.hudi import inspect as hudi_inspect
from tms.formats.hudi import jobs as hudi_jobs
from tms.formats.hudi import plan_guard as hudi_plan_guard
from tms.formats.hudi import props_guard as hudi_props_guard
from tms.formats.hudi.discovery import discover_tables
from tms.formats.hudi.instants import instant_time
from tms.formats.hudi.policy import (  # noqa: F401 (re-exported: the plugin's schema)
    DEFAULT_CLEAN_COMMITS,
    DEFAULT_CLUSTERING_COMMITS,
    DEFAULT_COMPACTION_DELTA_COMMITS,
    DEFAULT_COMPACTION_DELTA_SECONDS,
    INSTANT_PATTERN,
    MODES,
    PARAMS,
    POLICY_KEYS,
    STRATEGIES,
    TIMEZONE,
)
from tms.formats.hudi.timeline import (
    TimelineError,
    UnsupportedSchemeError,
    local_path,
    open_table,
    read_timeline,
)
from tms.formats.hudi.writer import (
    is_writer_key,
    lock_key_warning,
    property_problems,
    unknown_reason,
    writer_properties,
    writer_zone,
)
from tms.formats.storage import StorageError
from tms.locations import LOCAL_SCHEME, Location, LocationError
from tms.policy.schema import zone_of

if TYPE_CHECKING:
    from tms.catalogs import CatalogAccess

COMPACTOR = "org.apache.hudi.utilities.HoodieCompactor"
CLUSTERING_JOB = "org.apache.hudi.utilities.HoodieClusteringJob"
CLEANER = "org.apache.hudi.utilities.HoodieCleaner"
_INSTANT_RE = re.compile(INSTANT_PATTERN)
PLANS_REFUSED = "pending_plans_refused"  # metric: why the timeline's pending plans are refused
CLEAN_REFUSED = "clean_refused"  # metric: why no job that cleans may run (hudi_clean_guard)
PROPS_REFUSED = "table_properties_refused"  # metric: why hoodie.properties is refused
AUTO_CLEAN = "auto_clean"  # metric: whether compaction and clustering clean after they commit
# metric: the writer configuration locks under another key than the writers (hudi_writer)
LOCK_KEY_WARNING = "writer_lock_key_warning"
log = structlog.get_logger("tms.formats.hudi")
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,127}")


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


class HudiFormat(TableFormatPlugin):
    name = "hudi"
    actions = ("compaction", "clustering", "clean")
    policy_keys = POLICY_KEYS
    action_params = PARAMS
    catalog_types = (CatalogType.HADOOP,)  # path tables: the catalog gives storage and bounds

    def __init__(self, clock: Callable[[], datetime] | None = None) -> None:
        # the time inspection sees (cleaner hours, heartbeat ages); injectable for tests
        self.clock = clock or (lambda: datetime.now(UTC))

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

    def catalog_property_problems(self, properties: Mapping[str, str],
                                  secrets: Mapping[str, str], field: str
                                  ) -> list[tuple[str, str]]:
        """The ``hudi.*`` properties and secrets: the writers' settings against the writer
        schema (:mod:`tms.formats.hudi.writer_keys`), the jars, the properties file's name."""
        return property_problems(properties, secrets, field)

    def owns_catalog_property(self, key: str) -> bool:
        return is_writer_key(key)

    def boundary_own(self, table: Table, catalog: CatalogAccess
                     ) -> tuple[tuple[str, ...], bool]:
        """The base path's ``.hoodie`` is the table's own."""
        return (), True

    def check_commit_id(self, commit_id: str) -> str | None:
        """A Hudi commit is an instant time: ``yyyyMMddHHmmss`` or ``yyyyMMddHHmmssSSS``,
        a real date and time."""
        if instant_time(commit_id) is not None:
            return None
        return ("a Hudi commit id is the commit's instant time: 14 or 17 digits, a real date "
                f"and time (yyyyMMddHHmmss[SSS], e.g. 20240501093000123), got "
                f"{commit_id[:40]!r}")

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
        """The timeline, the latest file slices, pending plans with their heartbeats and what
        the writers' cleaner would delete (:mod:`tms.formats.hudi.inspect`). The file versions
        are listed only when a clean may be decided (clean enabled, or a clean pending). Instant
        times are read in the writers' zone as the operator stated it in the writer
        configuration, else in the policy's ``timeline.timezone`` (a UTC timeline: UTC)."""
        tz = zone_of(writer_zone(table, catalog) or TIMEZONE.as_str(table.policy))
        base = table.location or table.base_path
        opts, allowed = catalog.storage_options, catalog.allowed_locations
        try:  # first: the timeline is found through these files (a hostile one stops here)
            hudi_props_guard.check_table(base, opts, allowed)
        except hudi_plan_guard.PlanRefused as e:
            return {PROPS_REFUSED: catalog.scrub(str(e))[:2000]}
        except (TimelineError, StorageError):
            pass  # left to the timeline's read below, and to the executor
        summary = read_timeline(base, tz, catalog.storage_options)
        with_clean = bool(POLICY_KEYS["clean.enabled"].get(table.policy)) or any(
            i.action == "clean" and i.state.value != "COMPLETED" for i in summary.instants)
        props = writer_properties(table, catalog)
        metrics = hudi_inspect.inspect(summary, base, catalog.storage_options, props,
                                       self.clock(), tz, with_clean, catalog.scrub,
                                       unknown_reason(table, catalog) if props is None else "")
        metrics[AUTO_CLEAN] = hudi_jobs.auto_clean(props)
        warning = lock_key_warning(props, summary.table_name)
        if warning:
            metrics[LOCK_KEY_WARNING] = warning
            log.warning("hudi writer lock key differs from the table's", table=table.table_id,
                        catalog=table.catalog)
        # what the executor will refuse, shown now (it checks again before each run); the
        # cleaner's partitions (a walk of a local tree, every completed instant) only when a
        # job that cleans can be decided
        guards: list[Any] = [(hudi_plan_guard, PLANS_REFUSED)]
        if with_clean or metrics[AUTO_CLEAN]:
            guards.append((hudi_clean_guard, CLEAN_REFUSED))
        for guard, key in guards:
            try:
                guard.check_table(base, opts)
            except hudi_plan_guard.PlanRefused as e:
                metrics[key] = catalog.scrub(str(e))[:2000]
            except (TimelineError, StorageError):
                pass  # the timeline was just read: a passing failure, left to the executor
        return metrics

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
        if metrics.get(PROPS_REFUSED):  # every utility loads the table config first
            return [Decision(action, False, f"not run: {metrics[PROPS_REFUSED]}", dict(metrics),
                             {}) for action in self.actions]
        verdicts = {"compaction": hudi_decide.compaction(table.policy, metrics, now),
                    "clustering": hudi_decide.clustering(table.policy, metrics, now),
                    "clean": hudi_decide.clean(table.policy, metrics, now)}
        cleaning = metrics.get(CLEAN_REFUSED)
        if cleaning:  # only the jobs that clean are refused
            verdicts["clean"] = (False, f"not run: {cleaning}", {})
            if metrics.get(AUTO_CLEAN):
                for action in ("compaction", "clustering"):
                    verdicts[action] = (False, "not run (it cleans after it commits): "
                                        f"{cleaning}", {})
        refused = metrics.get(PLANS_REFUSED)
        if refused:  # every utility would execute the plan first: none may run
            verdicts = {a: (False, f"not run: {refused}", {}) for a in verdicts}
        warning = metrics.get(LOCK_KEY_WARNING)
        if warning:  # said with every decision, so ExplainTable shows it where it is read
            verdicts = {a: (run, f"{reason} (warning: {warning})", params)
                        for a, (run, reason, params) in verdicts.items()}
        return [Decision(action, run, reason, dict(metrics), params)
                for action, (run, reason, params) in verdicts.items()]

    def unchanged_since(self, table: Table, metrics: Mapping[str, Any], decision: Decision,
                        last: Operation | None) -> str | None:
        """Not again while nothing changed: the same run last found nothing to plan
        (:func:`tms.formats.hudi.decide.no_plan_hold`)."""
        return hudi_decide.no_plan_hold(decision.action, decision.params, metrics, last)

    def recheck(self, table: Table, catalog: CatalogAccess, operation: Operation
                ) -> str | None:
        """Right before a policy-queued operation runs, the decision taken again on the table
        as it is now (:func:`tms.formats.hudi.decide.stale`). A decision not to run taken
        without the file slices or versions (a read that failed) cannot tell: the operation
        runs as decided, and Hudi's own planner meets the table (no plan ends SKIPPED)."""
        now = self.clock()
        metrics = self.inspect(table, catalog)
        if metrics.get(PROPS_REFUSED) or metrics.get(PLANS_REFUSED) or (
                metrics.get(CLEAN_REFUSED) and (
                operation.action == "clean" or metrics.get(AUTO_CLEAN))):
            return None  # not stale: refused, and the job's build says so (FAILED, final)
        found = [d for d in self.evaluate(table, metrics, {}, now)
                 if d.action == operation.action]
        if found and not found[0].should_run and metrics.get(hudi_inspect.UNREADABLE) and any(
                str(metrics.get(k) or "\0") in found[0].reason
                for k in ("slices_error", "clean_unknown")):
            return None  # refused because of the failed read: cannot tell
        return hudi_decide.stale(
            (found[0].should_run, found[0].reason, found[0].params) if found else None,
            operation.work.params)

    def build_job(self, table: Table, catalog: CatalogAccess, operation: Operation) -> JobSpec:
        """The utility's job, built only when both ``hoodie.properties`` files, read again now,
        keep Hudi's paths in the table and its classes Hudi's own
        (:mod:`tms.formats.hudi.props_guard`), every pending plan on the timeline stays inside
        the table (:mod:`tms.formats.hudi.plan_guard`): the utility executes them first; and,
        for a job that cleans, when every partition Hudi's cleaner could pick does
        (:mod:`tms.formats.hudi.clean_guard`); and when the base path holds no other table
        nor a root other tables are made under (:mod:`tms.table_boundary`). A refused or
        unreadable plan or partition, a refused base path, or a timeline that cannot be read
        from here, is final (ValueError); storage that cannot be reached now is retried."""
        base = self.checked_base_path(table, catalog)
        job = hudi_jobs.build(table, catalog, operation, base)
        try:
            hudi_props_guard.check_table(base, catalog.storage_options,
                                         catalog.allowed_locations)
            hudi_plan_guard.check_table(base, catalog.storage_options)
            if hudi_jobs.can_clean(operation.action, job.spec["hudi"]["properties"]):
                hudi_clean_guard.check_table(base, catalog.storage_options)
            # the base path reaches no further than the table (no warehouse root, no other
            # table's files below it: the utility cleans and rolls back under it)
            table_boundary.check(self, table, catalog, base)
        except TimelineError as e:
            raise ValueError(f"the pending plans cannot be checked: {e}") from None
        except StorageError as e:
            raise CatalogUnreachable(catalog.scrub(f"the pending plans cannot be read: {e}")
                                     [:1000]) from None
        return job

