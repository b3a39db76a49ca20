"""Tables: the search list and a table's detail (health, policy, why / why not, trends,
files per partition, operations with their before → after)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.timestamp_pb2 import Timestamp

from tms.console import charts, forms
from tms.console.web import Ctx, Page
from tms.v1 import tms_pb2

TABLE_ORDERS = ("", "name", "health", "-health", "last_commit_time", "-last_commit_time")
TABLE_STATES = ("", "ACTIVE", "PAUSED", "MISSING")
DETAIL_OPERATIONS = 20
TREND_DAYS = 30
TRENDS = (("health_score", "Health score"), ("data_files", "Data files"),
          ("small_files", "Small files"), ("mean_file_bytes", "Mean file size (bytes)"),
          ("delete_files", "Delete files"), ("snapshots", "Snapshots"),
          ("manifests", "Manifests"), ("total_bytes", "Bytes"))
PARTITION_BARS = 30
FILTERS = ("catalog", "namespace", "search", "owner", "format", "state", "min_health",
           "max_health", "order_by", "page_size")


def tables(ctx: Ctx) -> Page:
    q = ctx.request.query_params
    p: forms.Problems = {}
    f = {
        "catalog": forms.pattern(p, "catalog", q.get("catalog"), forms.CATALOG_RE,
                                 "a catalog id"),
        "namespace": forms.text(p, "namespace", q.get("namespace")),
        "search": forms.text(p, "search", q.get("search")),
        "owner": forms.text(p, "owner", q.get("owner"), 256),
        "format": forms.pattern(p, "format", q.get("format"), forms.ACTION_RE, "a format name"),
        "state": forms.choice(p, "state", q.get("state"), TABLE_STATES),
        "order_by": forms.choice(p, "order_by", q.get("order_by"), TABLE_ORDERS),
    }
    min_h = forms.integer(p, "min_health", q.get("min_health"), 0, 100)
    max_h = forms.integer(p, "max_health", q.get("max_health"), 0, 100)
    size = forms.integer(p, "page_size", q.get("page_size"), 1, forms.MAX_PAGE_SIZE)
    typed = {k: q.get(k, "") for k in FILTERS}
    if p:
        return Page("tables.html", {"title": "Tables", "problems": p, "typed": typed,
                                    "tables": [], "next_token": ""}, 400)
    req = tms_pb2.ListTablesRequest(
        page_size=size or forms.DEFAULT_PAGE_SIZE, page_token=q.get("page_token", ""),
        catalog=f["catalog"], namespace=f["namespace"], search=f["search"], owner=f["owner"],
        format=f["format"], order_by=f["order_by"],
        state=tms_pb2.Table.State.Value(f["state"]) if f["state"] else 0)  # type: ignore
    if min_h is not None:
        req.min_health = min_h
    if max_h is not None:
        req.max_health = max_h
    resp = ctx.call("ListTables", req)
    rows = list(resp.tables)
    ctx.notes += _unapplied(rows, f, min_h, max_h)
    return Page("tables.html", {"title": "Tables", "problems": {}, "typed": typed,
                                "tables": rows, "next_token": resp.next_page_token,
                                "page_token": q.get("page_token", ""),
                                "manage": ctx.powers().manage})


def _unapplied(rows: list[Any], f: dict[str, str], min_h: int | None,
               max_h: int | None) -> list[str]:
    """Filters the API answered without applying (an API older than its contract): said on
    the page rather than shown as if they held."""
    notes = []
    if f["namespace"] and any(t.namespace != f["namespace"] for t in rows):
        notes.append("namespace filter " + _not_applied)
    if f["search"] and any(f["search"].lower() not in
                           f"{t.name} {t.namespace} {t.table_name}".lower() for t in rows):
        notes.append("text search " + _not_applied)
    if (min_h is not None or max_h is not None) and any(
            not t.HasField("health_score")
            or (min_h is not None and t.health_score < min_h)
            or (max_h is not None and t.health_score > max_h) for t in rows):
        notes.append("health filter " + _not_applied)
    if f["order_by"] in ("health", "-health") and not any(t.HasField("health_score")
                                                          for t in rows):
        notes.append("sorting by health " + _not_applied)
    return notes


_not_applied = "not applied: not available from this API yet"


def table_detail(ctx: Ctx) -> Page:
    tid = ctx.request.path_params["table"]
    p: forms.Problems = {}
    forms.pattern(p, "table", tid, forms.TABLE_ID_RE, "a table id")
    if p:
        return Page("error.html", {"title": "No such table", "message": p["table"]}, 404)
    name = f"tables/{tid}"
    table = ctx.call("GetTable", tms_pb2.GetTableRequest(name=name))
    explain = ctx.call("ExplainTable", tms_pb2.ExplainTableRequest(name=name))
    start = Timestamp()
    now = dt.datetime.now(dt.UTC)
    start.FromDatetime(now - dt.timedelta(days=TREND_DAYS))
    history = ctx.optional("GetTableHistory",
                           tms_pb2.GetTableHistoryRequest(name=name, start_time=start))
    ops = ctx.call("ListOperations", tms_pb2.ListOperationsRequest(
        parent=name, page_size=DETAIL_OPERATIONS)).operations
    may_act, actions = ctx.table_actions(name)
    return Page("table.html", {
        "title": f"Table {tid}", "t": table, "tid": tid, "explain": explain,
        "hp": explain.health if explain.HasField("health") else None,
        "trends": _trends(history, (now - dt.timedelta(days=TREND_DAYS)).timestamp(),
                          now.timestamp()) if history is not None else None,
        "partitions": charts.bars([(pf.partition, pf.data_files, pf.small_files)
                                   for pf in explain.partitions[:PARTITION_BARS]]),
        "partition_rows": explain.partitions, "ops": [(o, outcome(o)) for o in ops],
        "may_act": may_act, "actions": actions, "figures": _figures(explain)})


def _figures(explain: tms_pb2.ExplainTableResponse) -> dict[str, Any]:
    """The inspection figures the decisions looked at (every action sees the same
    inspection; an action's own extra figures are merged in)."""
    out: dict[str, Any] = {}
    for a in explain.actions:
        out.update(MessageToDict(a.metrics))
    return out


def _trends(history: tms_pb2.TableHistory, t0: float, t1: float) -> list[Any]:
    markers = [charts.Marker(m.time.seconds, f"{m.action} {tms_pb2.Operation.State.Name(m.state)}"
                             f" ({m.operation})", m.state == tms_pb2.Operation.SUCCEEDED)
               for m in history.markers]
    out = []
    for field, title in TRENDS:
        pts = [(pt.time.seconds, float(getattr(pt, field))) for pt in history.points
               if field != "health_score" or pt.HasField("health_score")]
        out.append(charts.trend(title, pts, markers, (t0, t1)))
    return out


def outcome(op: tms_pb2.Operation) -> dict[str, Any] | None:
    """Before → after figures from an operation's result outcome, when it has one."""
    result = MessageToDict(op.result) if op.HasField("result") else {}
    o = result.get("outcome")
    if not isinstance(o, dict):
        return None

    def num(key: str) -> float | None:
        v = o.get(key)
        return float(v) if isinstance(v, int | float) else None

    rewritten, added = num("data_files_rewritten"), num("data_files_added")
    b_rewritten, b_added = num("data_bytes_rewritten"), num("data_bytes_added")
    return {
        "files_before": rewritten, "files_after": added,
        "bytes_before": b_rewritten, "bytes_after": b_added,
        "write_amplification": (b_added / b_rewritten) if b_added is not None
        and b_rewritten else None,
        "delete_files_removed": num("delete_files_removed"),
        "partitions": num("partitions_touched"),
        "snapshot_before": o.get("snapshot_before"), "snapshot_after": o.get("snapshot_after"),
        "codec": result.get("codec") or o.get("codec"),
        "data_path": result.get("data_path") or o.get("data_path"),
        "changed_nothing": bool(o.get("changed_nothing")),
    }
