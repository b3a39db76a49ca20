"""The fleet's answers: a table's history (GetTableHistory), the fleet now (GetFleetStatus),
finished operations per UTC day (SummarizeOperations), and the health block of ExplainTable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import grpc

from tms.api import validate as v
from tms.api.auth import Principal
from tms.api.base import ServicerBase, rpc
from tms.api.convert import _ts
from tms.api.errors import invalid
from tms.domain.fleet import StoredHealth
from tms.health.score import BANDS, UNKNOWN_BAND
from tms.v1 import tms_pb2

DEFAULT_HISTORY_S = 30 * 86_400  # GetTableHistory's window when none is given
MAX_HISTORY_S = 400 * 86_400  # the longest window one call may ask for
MAX_HISTORY_POINTS = 20_000  # a year of daily points plus 30 days hourly plus a raw day
MAX_MARKERS = 2_000
PROCESSES_WITHIN_S = 3600.0  # processes shown: heartbeat within the last hour
MAX_PROCESSES = 1_000
DEFAULT_SUMMARY_DAYS = 7
MAX_SUMMARY_DAYS = 90


def health_to_pb(h: StoredHealth) -> tms_pb2.TableHealth:
    out = tms_pb2.TableHealth(score=h.score, inspect_time=_ts(h.inspected_at))
    for part in h.parts:
        out.parts.append(tms_pb2.HealthPart(
            name=str(part.get("name", "")), value=float(part.get("value", 0.0)),
            unit=str(part.get("unit", "")), penalty=int(part.get("penalty", 0)),
            max_penalty=int(part.get("max_penalty", 0)), detail=str(part.get("detail", ""))))
    return out


def partitions_to_pb(h: StoredHealth) -> list[tms_pb2.PartitionFiles]:
    return [tms_pb2.PartitionFiles(
        partition=str(p.get("partition", "")), data_files=int(p.get("data_files", 0)),
        small_files=int(p.get("small_files", 0)), bytes=int(p.get("bytes", 0)),
        delete_files=int(p.get("delete_files", 0))) for p in h.partitions]


class FleetMixin(ServicerBase):
    @rpc
    def GetTableHistory(self, request: tms_pb2.GetTableHistoryRequest,
                        context: grpc.ServicerContext,
                        principal: Principal) -> tms_pb2.TableHistory:
        p: v.Problems = []
        table_id = v.table_name(p, "name", request.name)
        now = datetime.now(UTC)
        end = now
        if request.HasField("end_time"):
            end = v.timestamp(p, "end_time", request.end_time) or now
        try:
            start = end - timedelta(seconds=DEFAULT_HISTORY_S)
        except OverflowError:  # an end_time in the first days of year 1
            start = datetime.min.replace(tzinfo=UTC)
        if request.HasField("start_time"):
            start = v.timestamp(p, "start_time", request.start_time) or start
        if not p and start >= end:
            p.append(("start_time", "must be before end_time"))
        elif not p and (end - start).total_seconds() > MAX_HISTORY_S:
            p.append(("start_time", f"the window may span at most {MAX_HISTORY_S // 86_400} "
                                    "days"))
        if p:
            raise invalid(p)
        table = self.load_table(table_id, principal, request.name).table
        out = tms_pb2.TableHistory(table=request.name)
        for pt in self.store.history_list(table.pk, start, end, MAX_HISTORY_POINTS):
            out.points.append(tms_pb2.TableHistoryPoint(
                time=_ts(pt.at), resolution=pt.resolution, data_files=pt.data_files,
                small_files=pt.small_files, mean_file_bytes=pt.mean_file_bytes,
                delete_files=pt.delete_files, snapshots=pt.snapshots, manifests=pt.manifests,
                total_bytes=pt.total_bytes, health_score=pt.health_score))
        for m in self.store.history_markers(table.pk, start, end, MAX_MARKERS):
            out.markers.append(tms_pb2.OperationMarker(
                time=_ts(m.finished_at), operation=f"tables/{table_id}/operations/{m.op_id}",
                action=m.action, state=tms_pb2.Operation.State.Value(m.state)))
        return out

    @rpc
    def GetFleetStatus(self, request: tms_pb2.GetFleetStatusRequest,
                       context: grpc.ServicerContext,
                       principal: Principal) -> tms_pb2.FleetStatus:
        counts = self.store.fleet_counts()
        out = tms_pb2.FleetStatus(
            time=_ts(counts.db_now), operations_queued=counts.queued,
            operations_running=counts.running,
            commits_per_minute=round(counts.commits_1h / 60.0, 3))
        out.tables_by_state.update(counts.tables_by_state)
        out.operations_last_24h.update(counts.ended_24h)
        for name, low, high in BANDS:
            out.health_bands.append(tms_pb2.HealthBand(
                band=name, min_score=low, max_score=high,
                tables=counts.health_bands.get(name, 0)))
        out.health_bands.append(tms_pb2.HealthBand(
            band=UNKNOWN_BAND, tables=counts.health_bands.get(UNKNOWN_BAND, 0)))
        for proc in self.store.heartbeat_list(PROCESSES_WITHIN_S, MAX_PROCESSES):
            out.processes.append(tms_pb2.ProcessStatus(
                id=proc.process_id, kind=proc.kind, host=proc.host,
                start_time=_ts(proc.started_at), heartbeat_time=_ts(proc.heartbeat_at),
                alive=proc.alive, leader=proc.leader, shards=list(proc.shards),
                running_operations=list(proc.running)))
        return out

    @rpc
    def SummarizeOperations(self, request: tms_pb2.SummarizeOperationsRequest,
                            context: grpc.ServicerContext,
                            principal: Principal) -> tms_pb2.SummarizeOperationsResponse:
        p: v.Problems = []
        table_id: str | None = None
        if request.parent not in ("", "tables/-"):
            table_id = v.table_name(p, "parent", request.parent) or None
        days = request.days or DEFAULT_SUMMARY_DAYS
        if not 1 <= days <= MAX_SUMMARY_DAYS:
            p.append(("days", f"must be between 1 and {MAX_SUMMARY_DAYS}, got {request.days}"))
        if p:
            raise invalid(p)
        table_pk = None
        if table_id is not None:
            table_pk = self.load_table(table_id, principal, request.parent).table.pk
        elif principal.scoped:  # a scoped token may only summarise its own tables
            raise invalid([("parent", "a token limited to some tables must name one")])
        today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        start = today - timedelta(days=days - 1)
        found = {d.day: d for d in self.store.operation_summary_by_day(start, table_pk)}
        out = tms_pb2.SummarizeOperationsResponse()
        for i in range(days):  # every day of the window, oldest first, zeros included
            day = (start + timedelta(days=i)).strftime("%Y-%m-%d")
            d = found.get(day)
            out.days.append(tms_pb2.DaySummary(day=day) if d is None else tms_pb2.DaySummary(
                day=day, succeeded=d.succeeded, failed=d.failed, skipped=d.skipped,
                cancelled=d.cancelled, data_files_before=d.data_files_before,
                data_files_after=d.data_files_after, bytes_rewritten=d.bytes_rewritten))
        return out
