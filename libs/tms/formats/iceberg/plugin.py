"""The Iceberg table-format plugin: pyiceberg for cheap inspection, Spark procedures to act.

Inspection reads the current snapshot's summary first (file counts and sizes with no manifest
I/O); manifests are read for file sizes only when the summary cannot rule compaction out.
A table whose catalog still names the metadata file last inspected, under the same policy,
reuses its last metrics: one catalog call and no metadata read (``unchanged``).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from importlib import resources
from typing import Any

from tms import locations
from tms.catalogs import CatalogAccess, PyicebergCatalogs, job_catalog
from tms.domain import CatalogType, Decision, JobSpec, Operation, Table, TableSpec
from tms.formats.base import (
    CatalogUnreachable,
    DiscoveredTable,
    TableFormatPlugin,
    TableNotInCatalog,
)
from tms.formats.iceberg import avro as iceberg_avro
from tms.formats.iceberg import boundary as iceberg_boundary
from tms.formats.iceberg import confined as iceberg_confined
from tms.formats.iceberg import current as iceberg_current
from tms.formats.iceberg import deletes as iceberg_deletes
from tms.formats.iceberg import hadoop as iceberg_hadoop
from tms.formats.iceberg import pointers as iceberg_pointers
from tms.formats.iceberg import recheck as iceberg_recheck
from tms.formats.iceberg import stats as iceberg_stats
from tms.formats.iceberg.discovery import list_tables
from tms.formats.iceberg.params import PARAM_BOUNDS, PARAMS
from tms.formats.iceberg.policy import RULES, K, Measured, level_problems, write_codec
from tms.formats.iceberg.policy_keys import (
    POLICY_BOUNDS,
    TABLE_TARGET_METRIC,
    table_target,
    with_table_target,
)
from tms.formats.iceberg.unchanged import (
    MAX_UNCHANGED_ENTRIES,
    VALID_UNTIL,
    Key,
    UnchangedTables,
    valid_until_s,
)
from tms.jobs import partition_filter

POLICY_KEYS = K
DEFAULT_MIN_SMALL_FILES = K["compaction.min-small-files"].as_int({})
# A table loaded to locate it serves the inspection that follows for this long (one catalog
# round trip per decision, not two).
RECENT_LOAD_S = 5.0
_CATALOG_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_IDENT_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$")
# A snapshot id as Iceberg writes it (a Java long in decimal): no sign but a minus, no
# leading zero, no blanks; its range is checked after the match.
_SNAPSHOT_ID_RE = re.compile(r"0|-?[1-9][0-9]{0,18}")
MIN_SNAPSHOT_ID, MAX_SNAPSHOT_ID = -(2**63), 2**63 - 1
SORT_PARAM, ZORDER_PARAM = "sort-order", "zorder-columns"


def _job_app() -> str:
    return str(resources.files("tms.jobs").joinpath("iceberg_maintenance.py"))


class IcebergFormat(TableFormatPlugin):
    name = "iceberg"
    actions = tuple(RULES)
    policy_keys = K
    action_params = PARAMS
    catalog_types = (CatalogType.SQL, CatalogType.JDBC, CatalogType.REST, CatalogType.HIVE,
                     CatalogType.GLUE, CatalogType.HADOOP)
    waits_for = iceberg_recheck.WAITS_FOR
    policy_bounds = POLICY_BOUNDS
    param_bounds = PARAM_BOUNDS

    def __init__(self, unchanged_entries: int = MAX_UNCHANGED_ENTRIES) -> None:
        """``unchanged_entries`` 0: every inspection loads and measures (no reuse)."""
        self._catalogs = PyicebergCatalogs()
        # per thread: (key, at, metadata location, pyiceberg table or None if not loaded)
        self._recent = threading.local()
        self.unchanged = UnchangedTables(unchanged_entries)
        self.prefetched = iceberg_pointers.Prefetched()

    # registration ---------------------------------------------------------------------------
    def validate(self, spec: TableSpec) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        if not _CATALOG_RE.fullmatch(spec.catalog):
            problems.append(("table.catalog", "required for iceberg: letters, digits, _ (max 64)"))
        parts = spec.namespace.split(".") if spec.namespace else []
        if not parts or not all(_IDENT_RE.fullmatch(p) for p in parts):
            problems.append(("table.namespace",
                             "required for iceberg: dot-separated names of letters, digits, _ -"))
        if not _IDENT_RE.fullmatch(spec.table_name):
            problems.append(("table.table_name",
                             "required for iceberg: letters, digits, _ - (max 128)"))
        return problems

    def check_policy(self, policy: Mapping[str, str], field: str = "table.policy"
                     ) -> list[tuple[str, str]]:
        """The schema's checks, then a codec and level set together that its writer refuses."""
        return super().check_policy(policy, field) or level_problems(
            policy.get("compaction.compression-codec"), policy.get("compaction.compression-level"),
            f"{field}[compaction.compression-level]", "compaction.compression-codec")

    def check_params(self, action: str, params: Mapping[str, str], field: str = "params"
                     ) -> list[tuple[str, str]]:
        """The schema's checks, then the structure of a ``partitions`` parameter (JSON whose
        every value is typed and bounded: tms.jobs.partition_filter) and a codec and level
        its writer refuses."""
        problems = super().check_params(action, params, field)
        raw = params.get(partition_filter.PARAM)
        if raw is not None and not problems and partition_filter.PARAM in self.action_params.get(
                action, {}):
            try:
                partition_filter.parse_partitions(raw)
            except partition_filter.PartitionFilterError as e:
                problems.append((f"{field}[{partition_filter.PARAM}]", str(e)))
        return problems or level_problems(
            params.get("compression-codec"), params.get("compression-level"),
            f"{field}[compression-level]", "compression-codec")

    def check_commit_id(self, commit_id: str) -> str | None:
        """An Iceberg commit is a snapshot id: a 64-bit signed integer in decimal."""
        if _SNAPSHOT_ID_RE.fullmatch(commit_id) and \
                MIN_SNAPSHOT_ID <= int(commit_id) <= MAX_SNAPSHOT_ID:
            return None
        return ("an Iceberg commit id is the snapshot id: a 64-bit integer in decimal "
                f"(e.g. 3051729675574597004), got {commit_id[:40]!r}")

    def check_trigger(self, table: Table, action: str, params: Mapping[str, str],
                      policy: Mapping[str, str], catalog: CatalogAccess | None
                      ) -> tuple[list[tuple[str, str]], dict[str, str]]:
        """Clustering needs an order: the request's ``sort-order`` or ``zorder-columns``
        (one of them), else the policy's ``clustering.sort-order`` /
        ``clustering.zorder-columns`` (added to the parameters), else the table's own sort
        order (the job then lets Iceberg use it). None of them: refused now, not at run time."""
        if action != "clustering":
            return [], {}
        if SORT_PARAM in params and ZORDER_PARAM in params:
            return [(f"params[{ZORDER_PARAM}]", f"give {SORT_PARAM} or {ZORDER_PARAM}, "
                                                "not both")], {}
        if SORT_PARAM in params or ZORDER_PARAM in params:
            return [], {}
        zorder = K["clustering.zorder-columns"].as_str(policy)
        if zorder:
            return [], {ZORDER_PARAM: zorder}
        sort = K["clustering.sort-order"].as_str(policy)
        if sort:
            return [], {SORT_PARAM: sort}
        if catalog is not None:
            tbl = self._load(table, catalog)
            if not tbl.sort_order().is_unsorted:
                return [], {}
        return [(f"params[{SORT_PARAM}]", (
            f"clustering needs an order: params {SORT_PARAM} (e.g. 'id DESC NULLS LAST, kind') "
            f"or {ZORDER_PARAM} (e.g. 'a,b'); neither is given, the policy sets neither "
            "clustering.sort-order nor clustering.zorder-columns, and the table has no sort "
            "order of its own to fall back on"))], {}

    # catalog --------------------------------------------------------------------------------
    @staticmethod
    def _key(table: Table, catalog: CatalogAccess) -> Key:
        return catalog.fingerprint(), (*table.namespace.split("."), table.table_name)

    def _asking(self, catalog: CatalogAccess, call: Any) -> Any:
        """``call()`` against the catalog, its errors as TableNotInCatalog /
        CatalogUnreachable (secrets scrubbed)."""
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        try:
            return call()
        except (TableNotInCatalog, NoSuchTableError, NoSuchNamespaceError) as e:
            raise TableNotInCatalog(catalog.scrub(str(e))[:500]) from None
        except ValueError:  # CatalogUnsupported and the like: bad configuration
            raise
        except Exception as e:  # the catalog or its storage could not be asked
            raise CatalogUnreachable(
                catalog.scrub(f"catalog {catalog.catalog_id}: {type(e).__name__}: {e}")[:1000]
            ) from None

    def _load(self, table: Table, catalog: CatalogAccess, where: str | None = None) -> Any:
        """The pyiceberg table (from ``where``, its current metadata file just read from the
        catalog, when given); TableNotInCatalog / CatalogUnreachable (secrets scrubbed)."""
        key = self._key(table, catalog)

        def load() -> Any:
            if catalog.type is CatalogType.HADOOP:  # no catalog server: the files themselves
                return iceberg_hadoop.load_table(iceberg_hadoop.table_location(
                    iceberg_hadoop.warehouse_of(catalog.properties), table.namespace,
                    table.table_name), catalog.storage_options)
            client = self._catalogs.get(catalog)
            found = where
            if found is None and catalog.type in iceberg_current.POINTER_TYPES:
                # the pointer (a light query) and the file: less work than the catalog's load
                found = iceberg_current.current_metadata_location(client, catalog, key[1])
            if found is not None:
                return iceberg_current.load_at(client, catalog, key[1], found)
            return iceberg_current.load_table(client, catalog, key[1])

        tbl = self._asking(catalog, load)
        self._recent.entry = (key, time.monotonic(), str(tbl.metadata_location), tbl)
        return tbl

    def prepare(self, tables: Sequence[Table], catalog: CatalogAccess) -> set[int]:
        """The current metadata locations of a batch of the catalog's tables in one call
        where the catalog has one (``pointers``); errors scrubbed as in
        :meth:`_asking`, and then every table asks on its own. Returns the pks of the tables
        whose metadata file is the one last inspected (no metadata read expected)."""
        if catalog.type not in iceberg_pointers.BATCH_TYPES or not tables:
            return set()
        fingerprint = catalog.fingerprint()
        idents = [self._key(t, catalog)[1] for t in tables]
        self.prefetched.forget(fingerprint, idents)  # an earlier batch's, if never taken
        found = self._asking(catalog, lambda: iceberg_pointers.lookup(
            self._catalogs.get(catalog), catalog, idents))
        if found is None:
            return set()
        self.prefetched.put(fingerprint, idents, found)
        return {t.pk for t, ident in zip(tables, idents, strict=True)
                if (where := found.get(ident)) and
                self.unchanged.table_location((fingerprint, ident), where) is not None}

    def _current(self, table: Table, catalog: CatalogAccess, key: Key) -> str | None:
        """The current metadata location: looked up with its batch (:meth:`prepare`), else
        in one cheap catalog call; None where there is none (REST), when reuse is off or the
        table was never inspected (a load is due anyway: no call spent on the pointer
        alone)."""
        found, where = self.prefetched.take(key)
        if found:
            if where == iceberg_pointers.MISSING:
                raise TableNotInCatalog(f"Table does not exist: {table.namespace}."
                                        f"{table.table_name}")
            return where
        if self.unchanged.max_entries <= 0 or not self.unchanged.knows(key):
            return None
        client = None if catalog.type is CatalogType.HADOOP else self._asking(
            catalog, lambda: self._catalogs.get(catalog))
        where = self._asking(catalog, lambda: iceberg_current.current_metadata_location(
            client, catalog, key[1]))
        return None if where is None else str(where)

    def _take_recent(self, key: Key) -> tuple[str, Any] | None:
        """(metadata location, table or None) :meth:`locate` just found on this thread."""
        entry = getattr(self._recent, "entry", None)
        self._recent.entry = None
        if entry is not None and entry[0] == key and time.monotonic() - entry[1] < RECENT_LOAD_S:
            return entry[2], entry[3]
        return None

    def locate(self, table: Table, catalog: CatalogAccess) -> str:
        """The table's location: for a table whose metadata file is the one last inspected,
        the location then (one catalog call, no metadata read); else from a load."""
        key = self._key(table, catalog)
        where = self._current(table, catalog, key)
        if where is not None:
            known = self.unchanged.table_location(key, where)
            if known is not None:
                self._recent.entry = (key, time.monotonic(), where, None)
                return known
        return str(self._load(table, catalog, where).metadata.location)

    def located_state(self, table: Table, catalog: CatalogAccess) -> str | None:
        """The metadata file :meth:`locate` just found on this thread (not consumed: the
        inspection that follows takes it)."""
        entry = getattr(self._recent, "entry", None)
        if entry is not None and entry[0] == self._key(table, catalog):
            return str(entry[2])
        return None

    def boundary_roots(self, table: Table, catalog: CatalogAccess) -> list[tuple[str, str]]:
        """The catalog's warehouse and the locations of the table's namespaces
        (``iceberg_boundary``)."""
        client = None if catalog.type is CatalogType.HADOOP else self._catalogs.get(catalog)
        return iceberg_boundary.roots(table, catalog, client)

    def boundary_own(self, table: Table, catalog: CatalogAccess
                     ) -> tuple[tuple[str, ...], bool]:
        """The metadata path the table's properties name (its own metadata directory)."""
        return iceberg_boundary.own_metadata(self._load(table, catalog)), False

    def discover(self, catalog: CatalogAccess) -> list[DiscoveredTable]:
        if catalog.type is CatalogType.HADOOP:
            if not catalog.properties.get(iceberg_hadoop.WAREHOUSE_KEY):
                return []  # a hadoop catalog of Hudi tables only
            return iceberg_hadoop.discover(iceberg_hadoop.warehouse_of(catalog.properties),
                                           catalog.storage_options)
        return list_tables(self._catalogs.get(catalog))

    # inspection -----------------------------------------------------------------------------
    def inspect(self, table: Table, catalog: CatalogAccess) -> dict[str, Any]:
        """The last metrics again if the table's metadata file and policy are those last
        inspected (and the metrics have not expired), else a load and a measurement."""
        key = self._key(table, catalog)
        recent = self._take_recent(key)
        where, tbl = recent if recent is not None else (self._current(table, catalog, key),
                                                         None)
        if where is not None:
            hit = self.unchanged.metrics(key, where, table.policy)
            if hit is not None:
                return hit
        if tbl is None:
            tbl = self._load(table, catalog, where)
            self._recent.entry = None
        now_s = time.time()
        metrics = self._measure(table, tbl)
        until = valid_until_s(metrics, K["compaction.quiet-s"].as_int(table.policy), now_s)
        if until is not None:
            metrics[VALID_UNTIL] = until
        self.unchanged.remember(key, str(tbl.metadata_location), str(tbl.metadata.location),
                                table.policy, metrics)
        return metrics

    def _measure(self, table: Table, tbl: Any) -> dict[str, Any]:
        """The metrics of one loaded pyiceberg table (``inspect`` decides whether to load).

        The snapshot summary gives the table-wide counts; the manifests, read only when the
        summary cannot rule compaction out, give per-partition statistics (``_partitions``,
        see ``stats``) from which compaction is planned partition by partition."""
        snap = tbl.current_snapshot()
        own_target = table_target(tbl.properties)
        pol = with_table_target(table.policy, own_target)
        small_limit = K["compaction.small-file-bytes"].as_int(pol)
        min_small = K["compaction.min-small-files"].as_int(pol)
        times = [s.timestamp_ms for s in tbl.metadata.snapshots]
        metrics: dict[str, Any] = {"snapshot_id": None, "data_files": 0, "delete_files": 0,
                                   "total_bytes": 0, "records": 0, "small_files": 0,
                                   "small_file_bytes": small_limit, "manifests": 0,
                                   "manifest_bytes": 0, "partitions": None,
                                   "mergeable_small_files": 0, "position_delete_files": 0,
                                   "equality_delete_files": 0,
                                   "snapshots": len(times), "_snapshot_times_ms": times,
                                   "oldest_snapshot_ms": min(times, default=None)}
        metrics["write_codec"] = write_codec(table.policy, tbl.properties)
        if own_target is not None:
            metrics[TABLE_TARGET_METRIC] = own_target
        metrics["delete_granularity"] = iceberg_deletes.granularity(tbl.properties)
        if snap is None:
            metrics["partitions"] = 0
            return metrics
        io = iceberg_confined.confined(tbl, table.location)  # never another tenant's files
        manifests = iceberg_avro.manifests(snap, io)  # the manifest list: one small file
        metrics["manifests"] = len(manifests)
        metrics["manifest_bytes"] = sum(int(m.manifest_length) for m in manifests)
        summary = snap.summary.additional_properties if snap.summary else {}
        metrics.update(
            snapshot_id=str(snap.snapshot_id),
            data_files=int(summary.get("total-data-files", 0)),
            delete_files=int(summary.get("total-delete-files", 0)),
            total_bytes=int(summary.get("total-files-size", 0)),
            records=int(summary.get("total-records", 0)),
        )
        metrics["last_commit_ms"] = snap.timestamp_ms
        quiet_s = K["compaction.quiet-s"].as_int(pol)
        quiet = bool(quiet_s) and time.time() - snap.timestamp_ms / 1000 >= quiet_s
        if (metrics["data_files"] < min_small and not (quiet and metrics["data_files"] >= 2)
                and not metrics["delete_files"]):
            # fewer files than any threshold and no deletes: no need to know which are small
            metrics.update(small_files=None, mergeable_small_files=None)
            return metrics
        target = K["compaction.target-file-size-bytes"].as_int(pol)
        ratio = float(K["compaction.min-file-ratio"].get(pol))
        limits = iceberg_stats.Limits(small_limit, int(ratio * target))
        parts = iceberg_stats.table_partitions(manifests, io, limits)
        metrics.update(
            partitions=sum(1 for p in parts.values() if p.data_files),
            small_files=sum(p.small_files for p in parts.values()),
            mergeable_small_files=sum(p.small_files for p in parts.values()
                                      if p.small_files >= 2),
            position_delete_files=sum(p.position_delete_files for p in parts.values()),
            equality_delete_files=sum(p.equality_delete_files for p in parts.values()),
            _partitions=iceberg_stats.encode(parts),
            _specs=iceberg_stats.spec_fields(tbl.metadata),
            _snapshot_seqs=[[s.timestamp_ms, int(s.sequence_number or 0)]
                            for s in tbl.metadata.snapshots],
        )
        return metrics

    # policy ---------------------------------------------------------------------------------
    def evaluate(self, table: Table, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, Operation | None], now: datetime
                 ) -> list[Decision]:
        measured = metrics if isinstance(metrics, Measured) else Measured(metrics)
        pol = with_table_target(table.policy, measured.get(TABLE_TARGET_METRIC))
        return [rule(pol, measured, last_runs.get(action), now)
                for action, rule in RULES.items()]

    # execution ------------------------------------------------------------------------------
    def build_job(self, table: Table, catalog: CatalogAccess, operation: Operation) -> JobSpec:
        """The job's spec names the checked location and the catalog's allowed locations:
        the job checks the location it reads from the catalog again before it touches
        storage. The catalog's secrets travel as references the job resolves in its driver
        (the spec goes on spark-submit's command line). A location never checked yet (a table
        not inspected since it was migrated) is read from the catalog here."""
        raw = table.location
        if not raw:
            try:
                raw = self.locate(table, catalog)
            except TableNotInCatalog as e:
                raise ValueError(f"the catalog no longer holds the table: {e}") from None
        location = str(locations.check(raw, catalog.allowed_locations))
        properties, secrets = job_catalog(catalog)  # references only: the spec is inline
        return JobSpec(kind="pyspark", app=_job_app(), spec={
            "catalog_name": catalog.catalog_id,
            "catalog_properties": properties,
            "catalog_secrets": secrets,
            "table": f"{table.namespace}.{table.table_name}",
            "action": operation.action,
            "options": {k: str(v) for k, v in operation.work.params.items()},
            "location": location,
            "allowed_locations": list(catalog.allowed_locations),
        })

    # no stale work (iceberg_recheck) ----------------------------------------------------------
    def unchanged_since(self, table: Table, metrics: Mapping[str, Any], decision: Decision,
                        last: Operation | None) -> str | None:
        return iceberg_recheck.unchanged_since(metrics, decision, last)

    def recheck(self, table: Table, catalog: CatalogAccess, operation: Operation
                ) -> str | None:
        return iceberg_recheck.recheck(self, table, catalog, operation)
