"""Overview, catalogs and queues: the fleet at a glance."""

from __future__ import annotations

import datetime as dt
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from tms.console import forms
from tms.console.web import Ctx, Page
from tms.v1 import tms_pb2
from tms_client import TmsError

LEAST_HEALTHY = 20
OVERVIEW_OPS = 15
DAY_S = 86400
SUMMARY_DAYS = 7


def _since(seconds: int) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds))
    return ts


def _ops(ctx: Ctx, state: int, **extra: Any) -> tuple[list[Any], bool]:
    resp = ctx.call("ListOperations", tms_pb2.ListOperationsRequest(
        parent="tables/-", page_size=OVERVIEW_OPS, state=state, **extra))  # type: ignore
    return list(resp.operations), bool(resp.next_page_token)


def overview(ctx: Ctx) -> Page:
    fleet = ctx.optional("GetFleetStatus", tms_pb2.GetFleetStatusRequest())
    summary = ctx.optional("SummarizeOperations",
                           tms_pb2.SummarizeOperationsRequest(days=SUMMARY_DAYS))
    least = ctx.call("ListTables", tms_pb2.ListTablesRequest(page_size=LEAST_HEALTHY,
                                                             order_by="health"))
    tables = list(least.tables)
    scored = [t for t in tables if t.HasField("health_score")]
    running, more_running = _ops(ctx, tms_pb2.Operation.RUNNING)
    queued, more_queued = _ops(ctx, tms_pb2.Operation.QUEUED)
    failed, more_failed = _ops(ctx, tms_pb2.Operation.FAILED, created_after=_since(DAY_S))
    queues = ctx.call("ListQueues", tms_pb2.ListQueuesRequest()).queues
    reasons = {t.name: _why(ctx, t) for t in scored[:LEAST_HEALTHY] if (t.health_score < 80)}
    return Page("overview.html", {
        "title": "Overview", "fleet": fleet, "summary": summary, "tables": tables,
        "health_known": bool(scored), "reasons": reasons,
        "running": running, "more_running": more_running, "queued": queued,
        "more_queued": more_queued, "failed": failed, "more_failed": more_failed,
        "queues": queues})


def _why(ctx: Ctx, table: tms_pb2.Table) -> str:
    """The worst health part's sentence, else the last decision."""
    return table.last_decision


def catalogs(ctx: Ctx) -> Page:
    q = ctx.request.query_params
    if not ctx.powers().admin:
        return Page("catalogs.html", {"title": "Catalogs", "denied": True, "catalogs": []})
    resp = ctx.call("ListCatalogs", tms_pb2.ListCatalogsRequest(
        page_size=forms.DEFAULT_PAGE_SIZE, page_token=q.get("page_token", "")))
    return Page("catalogs.html", {"title": "Catalogs", "catalogs": resp.catalogs,
                                  "next_token": resp.next_page_token,
                                  "page_token": q.get("page_token", "")})


def catalog_detail(ctx: Ctx) -> Page:
    cid = ctx.request.path_params["catalog"]
    p: forms.Problems = {}
    forms.pattern(p, "catalog", cid, forms.CATALOG_RE, "a catalog id")
    if p:
        return Page("error.html", {"title": "No such catalog", "message": p["catalog"]}, 404)
    cat = ctx.call("GetCatalog", tms_pb2.GetCatalogRequest(name=f"catalogs/{cid}"))
    tables = ctx.call("ListTables", tms_pb2.ListTablesRequest(catalog=cid, page_size=20))
    return Page("catalog.html", {"title": f"Catalog {cid}", "cat": cat, "cid": cid,
                                 "tables": tables.tables, "more": bool(tables.next_page_token)})


def queues(ctx: Ctx, problems: forms.Problems | None = None,
           typed: dict[str, str] | None = None, error: str = "") -> Page:
    resp = ctx.call("ListQueues", tms_pb2.ListQueuesRequest())
    oldest: dict[str, Any] = {}
    for qu in resp.queues:
        short = qu.name.removeprefix("queues/")
        if qu.queued:
            try:
                page = ctx.call("ListOperations", tms_pb2.ListOperationsRequest(
                    parent="tables/-", state=tms_pb2.Operation.QUEUED, queue=short,
                    order_by="create_time", page_size=1))
            except TmsError as e:
                if e.code != grpc.StatusCode.INVALID_ARGUMENT:
                    raise
                page = None
            if page is not None and page.operations:
                op = page.operations[0]
                # an API that ignores the queue filter answers with another queue's operation
                oldest[qu.name] = op if op.queue == short else None
    return Page("queues.html", {"title": "Queues", "queues": resp.queues, "oldest": oldest,
                                "admin": ctx.powers().admin, "problems": problems or {},
                                "typed": typed or {}, "error": error}, 400 if problems or error
                else 200)
