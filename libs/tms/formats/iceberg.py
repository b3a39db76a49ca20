"""The Iceberg table-format plugin: pyiceberg for cheap inspection, Spark procedures to act.

Inspection reads the current snapshot's summary first (file counts and sizes with no manifest
I/O); manifests are read for file sizes only when the summary cannot rule compaction out.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from datetime import datetime
from importlib import resources
from typing import Any

from tms.catalogs import CatalogAccess, PyicebergCatalogs, job_catalog
from tms.domain import CatalogType, Decision, JobSpec, Operation, Table, TableSpec
from tms.formats import iceberg_hadoop, iceberg_recheck
from tms.formats.base import (
    CatalogUnreachable,
    DiscoveredTable,
    TableFormatPlugin,
    TableNotInCatalog,
)
from tms.formats.iceberg_discovery import list_tables
from tms.formats.iceberg_params import PARAMS
from tms.formats.iceberg_policy import RULES, K
from tms.jobs import locations

POLICY_KEYS = K
DEFAULT_MIN_SMALL_FILES = K["compaction.min-small-files"].as_int({})
# A table loaded to locate it serves the inspection that follows for this long (one catalog
# round trip per decision, not two).
RECENT_LOAD_S = 5.0
_CATALOG_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_IDENT_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$")


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

    def __init__(self) -> None:
        self._catalogs = PyicebergCatalogs()
        self._recent = threading.local()  # (key, loaded at, pyiceberg table) per thread

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

    # catalog --------------------------------------------------------------------------------
    def _load(self, table: Table, catalog: CatalogAccess) -> Any:
        """The pyiceberg table; TableNotInCatalog / CatalogUnreachable (secrets scrubbed)."""
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        ident = (*table.namespace.split("."), table.table_name)
        try:
            if catalog.type is CatalogType.HADOOP:  # no catalog server: the files themselves
                tbl = iceberg_hadoop.load_table(iceberg_hadoop.table_location(
                    iceberg_hadoop.warehouse_of(catalog.properties), table.namespace,
                    table.table_name), catalog.storage_options)
            else:
                tbl = self._catalogs.get(catalog).load_table(ident)
        except TableNotInCatalog as e:
            raise TableNotInCatalog(catalog.scrub(str(e))[:500]) from None
        except (NoSuchTableError, NoSuchNamespaceError) as e:
            raise TableNotInCatalog(catalog.scrub(str(e))[:500]) from None
        except ValueError:  # CatalogUnsupported and the like: bad configuration
            raise
        except Exception as e:  # the catalog or its storage could not be asked
            raise CatalogUnreachable(
                catalog.scrub(f"catalog {catalog.catalog_id}: {type(e).__name__}: {e}")[:1000]
            ) from None
        self._recent.entry = ((catalog.fingerprint(), ident), time.monotonic(), tbl)
        return tbl

    def _loaded(self, table: Table, catalog: CatalogAccess) -> Any:
        """The table :meth:`locate` just loaded on this thread, else a fresh load."""
        entry = getattr(self._recent, "entry", None)
        self._recent.entry = None
        key = (catalog.fingerprint(), (*table.namespace.split("."), table.table_name))
        if entry is not None and entry[0] == key and time.monotonic() - entry[1] < RECENT_LOAD_S:
            return entry[2]
        return self._load(table, catalog)

    def locate(self, table: Table, catalog: CatalogAccess) -> str:
        return str(self._load(table, catalog).metadata.location)

    def discover(self, catalog: CatalogAccess) -> list[DiscoveredTable]:
        if catalog.type is CatalogType.HADOOP:
            if not catalog.properties.get(iceberg_hadoop.WAREHOUSE_KEY):
                return []  # a hadoop catalog of Hudi tables only
            return iceberg_hadoop.discover(iceberg_hadoop.warehouse_of(catalog.properties),
                                           catalog.storage_options)
        return list_tables(self._catalogs.get(catalog))

    # inspection -----------------------------------------------------------------------------
    def inspect(self, table: Table, catalog: CatalogAccess) -> dict[str, Any]:
        return self._measure(table, self._loaded(table, catalog))

    def _measure(self, table: Table, tbl: Any) -> dict[str, Any]:
        """The metrics of one loaded pyiceberg table (``inspect`` decides whether to load)."""
        snap = tbl.current_snapshot()
        small_limit = K["compaction.small-file-bytes"].as_int(table.policy)
        min_small = K["compaction.min-small-files"].as_int(table.policy)
        times = [s.timestamp_ms for s in tbl.metadata.snapshots]
        metrics: dict[str, Any] = {"snapshot_id": None, "data_files": 0, "delete_files": 0,
                                   "total_bytes": 0, "records": 0, "small_files": 0,
                                   "small_file_bytes": small_limit, "manifests": 0,
                                   "snapshots": len(times), "_snapshot_times_ms": times,
                                   "oldest_snapshot_ms": min(times, default=None)}
        if snap is None:
            return metrics
        manifests = snap.manifests(tbl.io)  # the manifest list: one small file
        metrics["manifests"] = len(manifests)
        summary = snap.summary.additional_properties if snap.summary else {}
        metrics.update(
            snapshot_id=str(snap.snapshot_id),
            data_files=int(summary.get("total-data-files", 0)),
            delete_files=int(summary.get("total-delete-files", 0)),
            total_bytes=int(summary.get("total-files-size", 0)),
            records=int(summary.get("total-records", 0)),
        )
        metrics["last_commit_ms"] = snap.timestamp_ms
        quiet_s = K["compaction.quiet-s"].as_int(table.policy)
        quiet = bool(quiet_s) and time.time() - snap.timestamp_ms / 1000 >= quiet_s
        if metrics["data_files"] < min_small and not (quiet and metrics["data_files"] >= 2):
            # fewer files than any threshold: no need to know which are small
            metrics["small_files"] = None
            return metrics
        small = 0
        for manifest in manifests:
            for entry in manifest.fetch_manifest_entry(tbl.io, discard_deleted=True):
                df = entry.data_file
                if df.content == 0 and df.file_size_in_bytes < small_limit:
                    small += 1
        metrics["small_files"] = small
        return metrics

    # policy ---------------------------------------------------------------------------------
    def evaluate(self, table: Table, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, Operation | None], now: datetime
                 ) -> list[Decision]:
        return [rule(table.policy, metrics, last_runs.get(action), now)
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
