"""A third-party table-format plugin, as another team would ship it: TMS finds it through the
``tms.formats`` entry point declared in its dist-info, with no change to TMS.

Its inspection costs nothing (the "file count" is a catalog property), which also makes it the
constant-time inspector for scheduler tests and benchmarks.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tms.domain import Decision, JobSpec, Operation, Table, TableSpec
from tms.formats.base import TableFormatPlugin

THRESHOLD_FILES = 10


class ConstantFormat(TableFormatPlugin):
    name = "constant"
    actions = ("compaction",)

    def validate(self, spec: TableSpec) -> list[tuple[str, str]]:
        if not spec.catalog_properties.get("files", "").isdigit():
            return [("table.catalog_properties[files]", "an integer file count is required")]
        return []

    def inspect(self, table: Table) -> dict[str, Any]:
        return {"files": int(table.catalog_properties["files"])}

    def evaluate(self, table: Table, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, Operation | None], now: datetime
                 ) -> list[Decision]:
        files = metrics["files"]
        return [Decision("compaction", files >= THRESHOLD_FILES,
                         f"{files} files (threshold {THRESHOLD_FILES})", dict(metrics))]

    def build_job(self, table: Table, operation: Operation) -> JobSpec:
        return JobSpec(kind="pyspark", app="constant_job.py", spec={"table": table.table_id})
