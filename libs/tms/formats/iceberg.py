"""The Iceberg table-format plugin: pyiceberg for cheap inspection, Spark procedures to act.

Inspection reads the current snapshot's summary first (file counts and sizes with no manifest
I/O); manifests are read for file sizes only when the summary cannot rule compaction out.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from datetime import datetime
from importlib import resources
from typing import Any

from tms.domain import Decision, OperationRecord, TableRecord, TableSpec
from tms.formats.base import JobSpec, TableFormatPlugin
from tms.formats.policy import PolicyKey, validate_policy

MIB = 1024 * 1024
DEFAULT_TARGET_FILE_SIZE_BYTES = 128 * MIB
DEFAULT_SMALL_FILE_BYTES = 16 * MIB  # target / 8, Amoro's fragment ratio
DEFAULT_MIN_SMALL_FILES = 12
DEFAULT_COMPACTION_MIN_INTERVAL_S = 60

POLICY_KEYS: dict[str, PolicyKey] = {p.key: p for p in (
    PolicyKey("compaction.enabled", bool, True),
    PolicyKey("compaction.target-file-size-bytes", int, DEFAULT_TARGET_FILE_SIZE_BYTES, 1),
    PolicyKey("compaction.small-file-bytes", int, DEFAULT_SMALL_FILE_BYTES, 1),
    PolicyKey("compaction.min-small-files", int, DEFAULT_MIN_SMALL_FILES, 2),
    PolicyKey("compaction.min-interval-s", int, DEFAULT_COMPACTION_MIN_INTERVAL_S, 0),
)}
_CATALOG_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_IDENT_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$")


def _job_app() -> str:
    return str(resources.files("tms.jobs").joinpath("iceberg_maintenance.py"))


class IcebergFormat(TableFormatPlugin):
    name = "iceberg"
    actions = ("compaction",)

    def __init__(self) -> None:
        self._catalogs: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}
        self._lock = threading.Lock()

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
        if "type" not in spec.catalog_properties and "uri" not in spec.catalog_properties:
            problems.append(("table.catalog_properties",
                             "iceberg needs the catalog's 'type' or 'uri'"))
        problems += validate_policy(POLICY_KEYS, spec.policy)
        return problems

    # inspection -----------------------------------------------------------------------------
    def _catalog(self, table: TableRecord) -> Any:
        from pyiceberg.catalog import load_catalog

        key = (table.catalog, tuple(sorted(table.catalog_properties.items())))
        with self._lock:
            cat = self._catalogs.get(key)
            if cat is None:
                cat = load_catalog(table.catalog, **table.catalog_properties)
                self._catalogs[key] = cat
            return cat

    def inspect(self, table: TableRecord) -> dict[str, Any]:
        tbl = self._catalog(table).load_table((*table.namespace.split("."), table.table_name))
        snap = tbl.current_snapshot()
        small_limit = int(POLICY_KEYS["compaction.small-file-bytes"].get(table.policy))
        min_small = int(POLICY_KEYS["compaction.min-small-files"].get(table.policy))
        metrics: dict[str, Any] = {"snapshot_id": None, "data_files": 0, "delete_files": 0,
                                   "total_bytes": 0, "records": 0, "small_files": 0,
                                   "small_file_bytes": small_limit, "manifests_read": 0}
        if snap is None:
            return metrics
        summary = snap.summary.additional_properties if snap.summary else {}
        metrics.update(
            snapshot_id=str(snap.snapshot_id),
            data_files=int(summary.get("total-data-files", 0)),
            delete_files=int(summary.get("total-delete-files", 0)),
            total_bytes=int(summary.get("total-files-size", 0)),
            records=int(summary.get("total-records", 0)),
        )
        if metrics["data_files"] < min_small:
            # fewer files than the threshold: no need to know which are small
            metrics["small_files"] = None
            return metrics
        small = 0
        manifests = snap.manifests(tbl.io)
        for manifest in manifests:
            for entry in manifest.fetch_manifest_entry(tbl.io, discard_deleted=True):
                df = entry.data_file
                if df.content == 0 and df.file_size_in_bytes < small_limit:
                    small += 1
        metrics["small_files"] = small
        metrics["manifests_read"] = len(manifests)
        return metrics

    # policy ---------------------------------------------------------------------------------
    def evaluate(self, table: TableRecord, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, OperationRecord | None], now: datetime
                 ) -> list[Decision]:
        return [self._compaction(table, metrics, last_runs.get("compaction"), now)]

    def _compaction(self, table: TableRecord, metrics: Mapping[str, Any],
                    last: OperationRecord | None, now: datetime) -> Decision:
        pol = table.policy
        min_small = int(POLICY_KEYS["compaction.min-small-files"].get(pol))
        interval = int(POLICY_KEYS["compaction.min-interval-s"].get(pol))
        target = int(POLICY_KEYS["compaction.target-file-size-bytes"].get(pol))
        limit = metrics["small_file_bytes"]
        seen = dict(metrics)
        params = {"target-file-size-bytes": str(target)}
        if not POLICY_KEYS["compaction.enabled"].get(pol):
            return Decision("compaction", False, "compaction is disabled by policy", seen)
        small = metrics["small_files"]
        if small is None or small < min_small:
            count = metrics["data_files"] if small is None else small
            return Decision("compaction", False,
                            f"{count} small data files (< {limit} bytes); "
                            f"compaction starts at {min_small}", seen)
        if last is not None and last.finished_at is not None:
            age = (now - last.finished_at).total_seconds()
            if age < interval:
                return Decision("compaction", False,
                                f"{small} small data files, but the last compaction finished "
                                f"{age:.0f} s ago (minimum interval {interval} s)", seen)
        return Decision("compaction", True,
                        f"{small} of {metrics['data_files']} data files are smaller than "
                        f"{limit} bytes (threshold {min_small} small files)", seen, params)

    # execution ------------------------------------------------------------------------------
    def build_job(self, table: TableRecord, operation: OperationRecord) -> JobSpec:
        return JobSpec(kind="pyspark", app=_job_app(), spec={
            "catalog_name": table.catalog,
            "catalog_properties": dict(table.catalog_properties),
            "table": f"{table.namespace}.{table.table_name}",
            "action": operation.action,
            "options": {k: str(v) for k, v in operation.params.items()},
        })
