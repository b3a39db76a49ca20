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
        """Add one batch's increments: three statements whatever the number of tables (one
        round trip each), in one transaction."""
        if not increments:
            return
        base = {"now": now, "half_life_s": READ_HALF_LIFE_S}
        pks = sorted(increments)
        preds = [(pk, key, float(w)) for pk in pks
                 for key, w in sorted(increments[pk].predicates.items())]
        sets = [(pk, SET_SEPARATOR.join(cols), float(w)) for pk in pks
                for cols, w in sorted(increments[pk].column_sets.items())]
        incs = [increments[pk] for pk in pks]
        with self._pool.connection() as conn, conn.transaction():
            if preds:
                conn.execute(q("read_add_predicates"), {
                    **base, "cap": MAX_PREDICATE_KEYS, "table_pks": [p[0] for p in preds],
                    "columns": [p[1][0] for p in preds], "operators": [p[1][1] for p in preds],
                    "weights": [p[2] for p in preds]})
            if sets:
                conn.execute(q("read_add_column_sets"), {
                    **base, "cap": MAX_COLUMN_SETS, "table_pks": [s[0] for s in sets],
                    "sets": [s[1] for s in sets], "weights": [s[2] for s in sets]})
            conn.execute(q("read_add_scans"), {
                **base, "table_pks": pks, "scans": [float(i.scans) for i in incs],
                "filtered": [float(i.filtered_scans) for i in incs],
                "result_files": [float(i.result_files) for i in incs],
                "skipped_files": [float(i.skipped_files) for i in incs],
                "result_bytes": [float(i.result_bytes) for i in incs],
                "reports": [i.scans for i in incs]})

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
