"""tms-console's server-side render time per page, side by side with the bare API calls the
page needs, and each page's weight.

A real PostgreSQL, tms-api and tms-console on loopback; 100,000 tables and 1,000,000 finished
operations (plus queued ones) seeded with ``generate_series`` (registration is not measured).
For each page: ``--requests`` sequential GETs through the console (signed in, as a browser
would), and the same number of rounds of the gRPC calls that page makes, straight to the API
with the same token. Reported: p50/p95 of both, the console's p95 as a ratio of the API's
(its own cost: templates, HTTP, the extra hop), and the page's bytes (HTML; the stylesheet
and htmx are fetched once and cached, listed apart).

    python bench/console_bench.py [--tables 100000] [--operations 1000000] [--requests 60]

The history behind the trends (GetTableHistory) and the fleet status are measured as the API
answers them: while it answers UNIMPLEMENTED, their share of the page is that fast answer.
"""

from __future__ import annotations

import argparse
import functools
import http.cookiejar
import re
import shutil
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common.procs import constant_catalog  # noqa: E402
from bench.common.stats import percentile  # noqa: E402
from tms.local.stack import LocalStack  # noqa: E402
from tms.v1 import tms_pb2, tms_pb2_grpc  # noqa: E402

DEFAULT_TABLES = 100_000
DEFAULT_OPERATIONS = 1_000_000
DEFAULT_REQUESTS = 60
QUEUED = 2_000  # operations waiting, one per table (one active per table and action)
OWNERS = 50
NAMESPACES = 100
TOKEN = "bench"
MS = 1000.0
KIB = 1024.0

Call = tuple[str, Any]


def seed(dsn: str, tables: int, operations: int) -> None:
    catalog = constant_catalog(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO tms_tables (table_id, format, catalog, namespace, table_name, owner, "
            "next_check_at) SELECT 't' || lpad(g::text, 6, '0'), 'iceberg', %s, "
            "'ns' || (g %% %s), 't' || lpad(g::text, 6, '0'), 'team-' || (g %% %s), "
            "now() + interval '1 day' FROM generate_series(1, %s) g",
            (catalog, NAMESPACES, OWNERS, tables))
        conn.execute(
            "INSERT INTO tms_operations (table_pk, action, state, attempt, reason, created_at, "
            "started_at, finished_at, result, queue) "
            "SELECT t.id, 'compaction', 'SUCCEEDED', 1, 'bench: 40 of 40 data files small', "
            "now() - make_interval(secs => g * 30), now() - make_interval(secs => g * 30 - 5), "
            "now() - make_interval(secs => g * 30 - 60), "
            "jsonb_build_object('outcome', jsonb_build_object('data_files_rewritten', 40, "
            "'data_files_added', 1, 'data_bytes_rewritten', 41943040, 'data_bytes_added', "
            "40000000, 'snapshot_before', '1', 'snapshot_after', '2')), 'default' "
            "FROM generate_series(1, %s) g JOIN tms_tables t ON t.id = 1 + (g %% %s)",
            (operations, tables))
        conn.execute(
            "INSERT INTO tms_operations (table_pk, action, state, reason, queue) "
            "SELECT id, 'rewrite_manifests', 'QUEUED', 'bench', 'batch' FROM tms_tables "
            "ORDER BY id LIMIT %s", (QUEUED,))
        conn.execute("ANALYZE")


class Browser:
    """urllib with a cookie jar: signs in like the sign-in form does."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def get(self, path: str) -> tuple[int, bytes]:
        with self.opener.open(self.base + path, timeout=60) as r:
            return r.status, r.read()

    def sign_in(self, token: str) -> None:
        _, body = self.get("/signin")
        csrf = re.search(rb'name="csrf_token" value="([^"]+)"', body)
        assert csrf is not None
        data = urllib.parse.urlencode({"csrf_token": csrf.group(1).decode(), "next": "/",
                                       "token": token}).encode()
        with self.opener.open(self.base + "/signin", data=data, timeout=60) as r:
            assert r.status == 200 and "/signin" not in r.url, r.url


def page_calls(stub: Any, table: str) -> dict[str, list[Call]]:
    """The gRPC calls each page makes (the console's role probes are cached for a minute and
    left out)."""
    day_ago = tms_pb2.ListOperationsRequest().created_after
    day_ago.FromSeconds(int(time.time()) - 86400)
    tname = f"tables/{table}"
    return {
        "/": [("GetFleetStatus", tms_pb2.GetFleetStatusRequest()),
              ("SummarizeOperations", tms_pb2.SummarizeOperationsRequest(days=7)),
              ("ListTables", tms_pb2.ListTablesRequest(page_size=20, order_by="health")),
              ("ListOperations", tms_pb2.ListOperationsRequest(
                  parent="tables/-", page_size=15, state=tms_pb2.Operation.RUNNING)),
              ("ListOperations", tms_pb2.ListOperationsRequest(
                  parent="tables/-", page_size=15, state=tms_pb2.Operation.QUEUED)),
              ("ListOperations", tms_pb2.ListOperationsRequest(
                  parent="tables/-", page_size=15, state=tms_pb2.Operation.FAILED,
                  created_after=day_ago)),
              ("ListQueues", tms_pb2.ListQueuesRequest())],
        "/tables": [("ListTables", tms_pb2.ListTablesRequest(page_size=50))],
        "/tables?owner=team-7": [("ListTables", tms_pb2.ListTablesRequest(
            page_size=50, owner="team-7"))],
        "/tables?namespace=ns5&order_by=health": [("ListTables", tms_pb2.ListTablesRequest(
            page_size=50, namespace="ns5", order_by="health"))],
        f"/tables/{table}": [
            ("GetTable", tms_pb2.GetTableRequest(name=tname)),
            ("ExplainTable", tms_pb2.ExplainTableRequest(name=tname)),
            ("GetTableHistory", tms_pb2.GetTableHistoryRequest(name=tname)),
            ("ListOperations", tms_pb2.ListOperationsRequest(parent=tname, page_size=20)),
            ("TriggerOperation", tms_pb2.TriggerOperationRequest(parent=tname,
                                                                  action="console-probe"))],
        "/operations": [("ListOperations", tms_pb2.ListOperationsRequest(
            parent="tables/-", page_size=50))],
        "/operations?state=QUEUED": [("ListOperations", tms_pb2.ListOperationsRequest(
            parent="tables/-", page_size=50, state=tms_pb2.Operation.QUEUED))],
        f"/operations?table={table}": [("ListOperations", tms_pb2.ListOperationsRequest(
            parent=tname, page_size=50))],
    }


def timed(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return sorted(out)


def api_round(stub: Any, calls: list[Call]) -> Callable[[], None]:
    md = (("authorization", f"Bearer {TOKEN}"),)

    def run() -> None:
        for method, req in calls:
            try:
                getattr(stub, method)(req, metadata=md, timeout=60)
            except grpc.RpcError as e:  # UNIMPLEMENTED, or the probe's INVALID_ARGUMENT
                if e.code() not in (grpc.StatusCode.UNIMPLEMENTED,
                                    grpc.StatusCode.INVALID_ARGUMENT):
                    raise
    return run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", type=int, default=DEFAULT_TABLES)
    p.add_argument("--operations", type=int, default=DEFAULT_OPERATIONS)
    p.add_argument("--requests", type=int, default=DEFAULT_REQUESTS)
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="tms-console-bench-"))
    stack = LocalStack(root, ROOT / ".tms")
    try:
        stack.start_servers()
        t0 = time.monotonic()
        seed(stack.database_url, args.tables, args.operations)
        print(f"seeded {args.tables:,} tables and {args.operations + QUEUED:,} operations in "
              f"{time.monotonic() - t0:.0f} s")
        stack.start_api()
        stack.start_console()
        browser = Browser(stack.console_url)
        browser.sign_in(TOKEN)
        stub = tms_pb2_grpc.TableManagementServiceStub(grpc.insecure_channel(stack.api_address))
        table = f"t{args.tables // 2:06d}"
        print(f"{'page':<42}{'console p50':>12}{'p95':>9}{'API p50':>10}{'p95':>9}"
              f"{'ratio p95':>11}{'KiB':>8}")
        for path, calls in page_calls(stub, table).items():
            status, body = browser.get(path)
            assert status == 200, (path, status)
            rnd = api_round(stub, calls)
            rnd()  # warm both the same way
            console = timed(functools.partial(browser.get, path), args.requests)
            api = timed(rnd, args.requests)
            c50, c95 = percentile(console, 50) * MS, percentile(console, 95) * MS
            a50, a95 = percentile(api, 50) * MS, percentile(api, 95) * MS
            print(f"{path:<42}{c50:>10.1f}ms{c95:>7.1f}ms{a50:>8.1f}ms{a95:>7.1f}ms"
                  f"{c95 / a95:>10.2f}x{len(body) / KIB:>8.1f}")
        for asset in ("/static/console.css", "/static/vendor/htmx-2.0.11.min.js"):
            _, body = browser.get(asset)
            print(f"{asset:<42} {len(body) / KIB:.1f} KiB once, then cached")
        return 0
    finally:
        stack.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
