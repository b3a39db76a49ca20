"""Health, history, liveness and the fleet's counts (HealthStore, FleetStore, LivenessStore)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from tms.domain.fleet import (
    RESOLUTIONS,
    DaySummary,
    FleetCounts,
    HistoryPoint,
    OperationMarker,
    ProcessBeat,
    ProcessStatus,
    StoredHealth,
)
from tms.health.figures import Inspection
from tms.storage.postgres.db import Db


def _parts(ins: Inspection) -> list[dict[str, Any]]:
    return [{"name": p.name, "value": p.value, "unit": p.unit, "penalty": p.penalty,
             "max_penalty": p.max_penalty, "detail": p.detail} for p in ins.health.parts]


class HealthMixin(Db):
    def health_record_batch(self, inspections: Sequence[Inspection], min_spacing_s: float,
                            keepalive_s: float) -> None:
        if not inspections:
            return
        f = [i.figures for i in inspections]
        self._write("health_record_batch", {
            "pks": [i.table_pk for i in inspections],
            "scores": [i.health.score for i in inspections],
            "parts": [Jsonb(_parts(i)) for i in inspections],
            "partitions": [Jsonb(list(i.partitions)) for i in inspections],
            "data_files": [x.data_files for x in f],
            "small_files": [x.small_files or 0 for x in f],
            "mean_file_bytes": [x.mean_file_bytes for x in f],
            "total_bytes": [x.total_bytes for x in f],
            "delete_files": [min(x.delete_files, 2**31 - 1) for x in f],
            "snapshots": [min(x.snapshots, 2**31 - 1) for x in f],
            "manifests": [min(x.manifests, 2**31 - 1) for x in f],
            "min_spacing_s": min_spacing_s, "keepalive_s": keepalive_s})

    def health_get(self, table_pk: int) -> StoredHealth | None:
        row = self._one("health_get", {"pk": table_pk})
        if row is None:
            return None
        return StoredHealth(row["inspected_at"], int(row["score"]), list(row["parts"] or []),
                            list(row["partitions"] or []))

    def health_bands(self) -> dict[str, int]:
        return {r["band"]: int(r["n"]) for r in self._all("health_bands", {})}

    def health_histogram(self) -> dict[int, int]:
        """Tables scoring at most ``le`` for le = 10, 20, ..., 100 (cumulative)."""
        return {int(r["le"]): int(r["n"]) for r in self._all("health_scores_histogram", {})}

    def health_scores(self, limit: int) -> list[tuple[str, int]]:
        return [(r["table_id"], int(r["health_score"]))
                for r in self._all("health_scores_by_table", {"limit": limit})]

    def history_list(self, table_pk: int, start: datetime, end: datetime, limit: int
                     ) -> list[HistoryPoint]:
        found = self._all("history_list", {"pk": table_pk, "start": start, "end": end,
                                           "limit": limit})
        return [HistoryPoint(
            at=r["at"], resolution=RESOLUTIONS[int(r["resolution"])],
            data_files=int(r["data_files"]), small_files=int(r["small_files"]),
            mean_file_bytes=int(r["mean_file_bytes"]), total_bytes=int(r["total_bytes"]),
            delete_files=int(r["delete_files"]), snapshots=int(r["snapshots"]),
            manifests=int(r["manifests"]), health_score=r["health_score"]) for r in found]

    def history_markers(self, table_pk: int, start: datetime, end: datetime, limit: int
                        ) -> list[OperationMarker]:
        found = self._all("history_markers", {"pk": table_pk, "start": start, "end": end,
                                              "limit": limit})
        return [OperationMarker(int(r["id"]), r["action"], r["state"], r["finished_at"])
                for r in found]

    def history_downsample(self, after_pk: int, tables: int, raw_s: float, hourly_s: float,
                           keep_s: float) -> tuple[int | None, int]:
        """One step over ``tables`` tables after ``after_pk``: (the last pk looked at, None
        past the last table; rows deleted or downsampled)."""
        row = self._one("history_downsample", {
            "after_pk": after_pk, "tables": tables, "raw_s": raw_s, "hourly_s": hourly_s,
            "keep_s": keep_s})
        if row is None:
            return None, 0
        last = row["last_pk"]
        return (int(last) if last is not None else None,
                int(row["deleted"]) + int(row["downsampled"]))

    # liveness -------------------------------------------------------------------------------
    def heartbeat_record(self, beat: ProcessBeat) -> None:
        self._write("heartbeat_record", {
            "id": beat.process_id, "kind": beat.kind, "host": beat.host[:255],
            "started_at": beat.started_at, "interval_s": beat.interval_s,
            "leader": beat.leader, "shards": list(beat.shards),
            "running": list(beat.running)})

    def heartbeat_forget(self, process_id: str) -> None:
        self._write("heartbeat_forget", {"id": process_id})

    def heartbeat_list(self, within_s: float, limit: int) -> list[ProcessStatus]:
        return [ProcessStatus(
            process_id=r["id"], kind=r["kind"], host=r["host"], started_at=r["started_at"],
            heartbeat_at=r["heartbeat_at"], alive=bool(r["alive"]), leader=bool(r["leader"]),
            shards=tuple(r["shards"] or ()), running=tuple(r["running_operations"] or ()))
            for r in self._all("heartbeat_list", {"within_s": within_s, "limit": limit})]

    # the fleet ------------------------------------------------------------------------------
    def fleet_counts(self) -> FleetCounts:
        row = self._one("fleet_counts", {})
        assert row is not None
        return FleetCounts(
            tables_by_state={k: int(v) for k, v in row["tables_by_state"].items()},
            health_bands=self.health_bands(), queued=int(row["queued"]),
            running=int(row["running"]),
            ended_24h={k: int(v) for k, v in row["ended_24h"].items()},
            commits_1h=int(row["commits_1h"]), db_now=row["db_now"])

    def operation_summary_by_day(self, start: datetime, table_pk: int | None
                                 ) -> list[DaySummary]:
        return [DaySummary(
            day=r["day"], succeeded=int(r["succeeded"]), failed=int(r["failed"]),
            skipped=int(r["skipped"]), cancelled=int(r["cancelled"]),
            data_files_before=int(r["data_files_before"]),
            data_files_after=int(r["data_files_after"]),
            bytes_rewritten=int(r["bytes_rewritten"]))
            for r in self._all("operation_summary_by_day", {"start": start,
                                                            "table_pk": table_pk})]
