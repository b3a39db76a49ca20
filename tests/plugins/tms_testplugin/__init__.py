"""A third-party table-format plugin, as another team would ship it: TMS finds it through the
``tms.formats`` entry point declared in its dist-info, with no change to TMS.

Its inspection costs nothing (the "file count" is the table's policy key ``constant.files``),
which also makes it the constant-time inspector for scheduler tests and benchmarks. Its tables
live in any catalog, at ``<the catalog's first allowed location>/<namespace>/<table_name>``
(or their base path); nothing is read there.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tms.catalogs import CatalogAccess
from tms.domain import Decision, JobSpec, Operation, Table, TableSpec
from tms.formats.base import TableFormatPlugin, TableNotInCatalog
from tms.policy.schema import by_key, integer

THRESHOLD_FILES = 10
FILES_KEY = "constant.files"
MAX_FILES = 999_999_999


class ConstantFormat(TableFormatPlugin):
    name = "constant"
    actions = ("compaction",)
    # a plugin's own key, declared with the schema's types like the built-in formats' keys
    policy_keys = by_key((integer(FILES_KEY, None, 0, MAX_FILES, "count",
                                  "the table's file count (required; nothing is inspected)"),))

    def validate(self, spec: TableSpec) -> list[tuple[str, str]]:
        if FILES_KEY not in spec.policy:  # its value is checked against policy_keys
            return [(f"table.policy[{FILES_KEY}]", "an integer file count is required")]
        return []

    def locate(self, table: Table, catalog: CatalogAccess) -> str:
        if table.base_path:
            return table.base_path
        if not catalog.allowed_locations:
            raise TableNotInCatalog(f"catalog {catalog.catalog_id} has no allowed locations")
        root = catalog.allowed_locations[0].rstrip("/")
        return f"{root}/{table.namespace or 'default'}/{table.table_name}"

    def inspect(self, table: Table, catalog: CatalogAccess) -> dict[str, Any]:
        return {"files": self.policy_keys[FILES_KEY].as_int(table.policy)}

    def evaluate(self, table: Table, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, Operation | None], now: datetime
                 ) -> list[Decision]:
        files = metrics["files"]
        return [Decision("compaction", files >= THRESHOLD_FILES,
                         f"{files} files (threshold {THRESHOLD_FILES})", dict(metrics))]

    def build_job(self, table: Table, catalog: CatalogAccess, operation: Operation) -> JobSpec:
        return JobSpec(kind="pyspark", app="constant_job.py", spec={"table": table.table_id})
