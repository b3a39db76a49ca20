"""Read statistics from engines' scan reports (tms.reads): per-table decayed weights, capped
in rows per table; SQL in ``sql/queries/reads.sql``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from tms.reads.profile import (
    MAX_COLUMN_SETS,
    MAX_PREDICATE_KEYS,
    READ_HALF_LIFE_S,
    SET_SEPARATOR,
    ColumnUse,
    ReadProfile,
    TableIncrement,
)
from tms.storage.postgres.db import Db
from tms.storage.queries import q
from tms.storage.roles import ReportedTable


class ReadsMixin(Db):
    def read_resolve_tables(self, catalog: str, keys: Sequence[tuple[str, str]]
                            ) -> list[ReportedTable]:
        if not keys:
            return []
        rows = self._all("read_resolve_tables", {
            "catalog": catalog, "namespaces": [k[0] for k in keys],
            "names": [k[1] for k in keys]})
        return [ReportedTable(r["id"], r["table_id"], r["owner"], r["namespace"],
                              r["table_name"]) for r in rows]

    def read_add(self, increments: dict[int, TableIncrement], now: datetime) -> None:
        """Add one batch's increments, every table in one transaction."""
        with self._pool.connection() as conn, conn.transaction():
            for table_pk, inc in sorted(increments.items()):  # a fixed order: no deadlocks
                base = {"table_pk": table_pk, "now": now, "half_life_s": READ_HALF_LIFE_S}
                if inc.predicates:
                    keys = sorted(inc.predicates)
                    conn.execute(q("read_add_predicates"), {
                        **base, "cap": MAX_PREDICATE_KEYS, "columns": [k[0] for k in keys],
                        "operators": [k[1] for k in keys],
                        "weights": [float(inc.predicates[k]) for k in keys]})
                if inc.column_sets:
                    sets = sorted(inc.column_sets)
                    conn.execute(q("read_add_column_sets"), {
                        **base, "cap": MAX_COLUMN_SETS,
                        "sets": [SET_SEPARATOR.join(s) for s in sets],
                        "weights": [float(inc.column_sets[s]) for s in sets]})
                conn.execute(q("read_add_scans"), {
                    **base, "scans": float(inc.scans), "filtered": float(inc.filtered_scans),
                    "result_files": float(inc.result_files),
                    "skipped_files": float(inc.skipped_files),
                    "result_bytes": float(inc.result_bytes), "reports": inc.scans})

    def read_profile(self, table_pk: int, now: datetime) -> ReadProfile | None:
        params = {"table_pk": table_pk, "now": now, "half_life_s": READ_HALF_LIFE_S}
        with self._pool.connection() as conn:
            scans = conn.execute(q("read_profile_scans"), params).fetchone()
            if scans is None:
                return None
            preds = conn.execute(q("read_profile_predicates"), params).fetchall()
            sets = conn.execute(q("read_profile_column_sets"), params).fetchall()
        s = dict(scans)  # type: ignore[call-overload]
        return ReadProfile(
            s["scans"], s["filtered_scans"], s["result_files"], s["skipped_files"],
            s["result_bytes"], s["reports"],
            tuple(ColumnUse(r["column_name"], r["operator"], r["weight"])  # type: ignore[call-overload]
                  for r in preds),
            tuple((tuple(r["columns"]), r["weight"]) for r in sets))  # type: ignore[call-overload]
