"""The console as a person uses it, in Debian's headless chromium: sign in, find an unhealthy
table, read why, trigger a compaction and watch it run to its before → after; hostile names
stay inert text; a reader sees no action button; CSRF and the security headers hold; the API
stopped mid-session shows a banner. Real tms-api, scheduler, executor, PostgreSQL and Spark.

The tests of this module run in order on one stack (the last one stops the API).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from tests.console.conftest import (
    ADMIN_TOKEN,
    OWNER_TOKEN,
    READER_TOKEN,
    ConsoleEnv,
    Person,
    open_person,
    sign_in,
)
from tests.helpers import constant_catalog, iceberg_catalog
from tms.local import iceberg_data
from tms.v1 import tms_pb2

pytestmark = pytest.mark.e2e

COMMITS = 12
ORDERS = "sales.orders"
SCRIPT = "<script>window.__pwned=1</script>"
IMG = '"><img src=x onerror="window.__pwned=1">'
JS_URL = "javascript:window.__pwned=1"
RTL = "finance\u202eexe.txt"
LOOKALIKE = "p\u0430yments-team"  # a Cyrillic a
LONG = "n" * 1000
WATCH_TIMEOUT_S = 300.0
DECIDE_TIMEOUT_S = 90.0


@pytest.fixture(scope="module")
def fleet(console_env: ConsoleEnv) -> Iterator[ConsoleEnv]:
    stub, md = console_env.admin_stub()
    catalog, _ = iceberg_catalog(console_env.stack, "shop")
    table = iceberg_data.create_table(catalog, "sales", "orders")
    snapshots = iceberg_data.append_batches(table, COMMITS)
    # The policy holds automatic compaction back (1000 small files needed): the table stays
    # unhealthy, the scheduler says why not, and the person triggers the compaction.
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=ORDERS, table=tms_pb2.Table(
        format="iceberg", catalog="shop", namespace="sales", table_name="orders",
        owner="team-sales", policy={"compaction.min-small-files": "1000"})), metadata=md,
        timeout=10)
    for sid in snapshots:
        stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table=f"tables/{ORDERS}",
                                                      commit_id=str(sid)), metadata=md,
                          timeout=10)
    const = constant_catalog(console_env.stack.database_url)
    hostile = {
        "evil.script": (SCRIPT, IMG, JS_URL),
        "evil.rtl": (RTL, "invoices\u2066x\u2069", LOOKALIKE),
        "evil.long": (LONG, "l" * 1000, "o" * 256),
    }
    for tid, (ns, name, owner) in hostile.items():
        stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=tid, table=tms_pb2.Table(
            format="constant", catalog=const, namespace=ns, table_name=name, owner=owner,
            policy={"constant.files": "5"})), metadata=md, timeout=10)
    stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table="tables/evil.script",
                                                  commit_id=SCRIPT), metadata=md, timeout=10)
    yield console_env


@pytest.fixture(scope="module")
def admin(browser: Any, fleet: ConsoleEnv) -> Iterator[Person]:
    context, person = open_person(browser)
    sign_in(person, fleet.url, ADMIN_TOKEN)
    yield person
    context.close()


def shot(env: ConsoleEnv, person: Person, name: str) -> None:
    person.page.screenshot(path=str(env.screenshots / f"{name}.png"), full_page=True)


def assert_clean(person: Person) -> None:
    assert person.dialogs == [], person.dialogs
    assert person.errors == [], person.errors
    assert person.csp_violations == [], person.csp_violations
    assert person.page.evaluate("() => window.__pwned") is None


def test_sign_in_shows_the_overview(browser: Any, fleet: ConsoleEnv) -> None:
    context, person = open_person(browser)
    page = person.page
    page.goto(f"{fleet.url}/tables")
    assert "/signin" in page.url
    shot(fleet, person, "signin")
    page.fill("#token", "not-a-token")
    page.click("button[type=submit]")
    assert "does not know this token" in page.inner_text("main")
    assert "not-a-token" not in page.content()  # a pasted token is never echoed
    page.fill("#token", ADMIN_TOKEN)
    page.click("button[type=submit]")
    page.wait_for_url(f"{fleet.url}/tables")  # back where the person was going
    page.goto(f"{fleet.url}/")
    text = page.inner_text("main")
    assert "Least healthy tables" in text and ORDERS in text
    assert ADMIN_TOKEN not in page.content()
    cookies = {c["name"]: c for c in context.cookies()}
    session = cookies["tms_console_session"]
    assert session["httpOnly"] and session["sameSite"] == "Strict"
    assert ADMIN_TOKEN not in session["value"]  # sealed, not merely encoded
    shot(fleet, person, "overview")
    assert_clean(person)
    context.close()


def _compaction_row(page: Any) -> str:
    return page.locator("tr", has=page.locator("td", has_text=re.compile(r"^compaction$"))
                        ).first.inner_text()


def test_find_unhealthy_table_read_why_trigger_and_watch(admin: Person,
                                                         fleet: ConsoleEnv) -> None:
    page = admin.page
    page.goto(f"{fleet.url}/tables?order_by=health")
    page.click(f"a[href='/tables/{ORDERS}']")
    page.wait_for_url(f"{fleet.url}/tables/{ORDERS}")
    deadline = time.monotonic() + DECIDE_TIMEOUT_S
    while "not decided yet" in _compaction_row(page):
        assert time.monotonic() < deadline, "the scheduler never decided on the table"
        time.sleep(1)
        page.reload()
    why = _compaction_row(page)
    assert "no need" in why and "1000" in why, why  # why not: the policy's threshold
    assert "compaction.min-small-files" in page.inner_text("main")  # policy with its source
    shot(fleet, admin, "table")

    page.click("text=Trigger an operation…")
    page.select_option("#action", "compaction")
    page.fill("#params", "no-such-param=1")
    page.fill("#reason", "console test")
    page.click("text=Review…")
    assert "Queue compaction on tables/sales.orders" in page.inner_text("main")
    page.click("button[value=confirm]")
    # the API's refusal, next to the field, with what was typed kept
    assert page.locator("#err-params").is_visible()
    assert "no-such-param" in page.inner_text("#err-params")
    assert page.input_value("#params") == "no-such-param=1"
    assert page.input_value("#reason") == "console test"
    shot(fleet, admin, "trigger-error")
    page.fill("#params", "")
    page.click("text=Review…")
    shot(fleet, admin, "confirm")
    page.click("button[value=confirm]")
    page.wait_for_url(re.compile(r".*/operations/sales\.orders/\d+$"))
    assert page.inner_text("#op-state") == "QUEUED"

    fleet.stack.start_executor()
    seen = []
    deadline = time.monotonic() + WATCH_TIMEOUT_S
    while True:  # the page refreshes its progress part by itself (htmx), no reload here
        state = page.inner_text("#op-state")
        if not seen or seen[-1] != state:
            seen.append(state)
            if state == "RUNNING":
                shot(fleet, admin, "operation-running")
        if state not in ("QUEUED", "RUNNING"):
            break
        assert time.monotonic() < deadline, f"the compaction did not end: {seen}"
        time.sleep(0.3)
    assert seen[-1] == "SUCCEEDED", (seen, page.inner_text("main"))
    assert "RUNNING" in seen, seen
    page.reload()  # the outcome is rendered with the finished page
    main = page.inner_text("main")
    assert f"{COMMITS} rewritten → 1 written" in main, main
    assert "Attempt 1 · SUCCEEDED" in main
    shot(fleet, admin, "operation")
    page.goto(f"{fleet.url}/tables/{ORDERS}")
    history = page.locator("tr", has_text="compaction").filter(has_text="SUCCEEDED").first
    assert f"{COMMITS} → 1" in history.inner_text()
    page.goto(f"{fleet.url}/operations?table={ORDERS}&state=SUCCEEDED")
    assert "compaction" in page.inner_text("table.grid")
    shot(fleet, admin, "operations")
    assert_clean(admin)


def test_hostile_names_render_as_inert_text(admin: Person, fleet: ConsoleEnv) -> None:
    page = admin.page
    for path in ("/tables?catalog=const", "/tables/evil.script", "/tables/evil.rtl",
                 "/tables/evil.long", "/", "/operations"):
        response = page.goto(f"{fleet.url}{path}")
        assert response is not None and response.status == 200, path
        assert page.locator("img").count() == 0, path
        assert page.locator("main script").count() == 0, path
        hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        assert not [h for h in hrefs if not h.startswith(fleet.url)], (path, hrefs)
        assert_clean(admin)
    page.goto(f"{fleet.url}/tables?catalog=const")
    shot(fleet, admin, "tables-hostile")
    page.goto(f"{fleet.url}/tables/evil.script")
    text = page.inner_text("main")
    assert SCRIPT in text and IMG in text and JS_URL in text  # shown, as text
    page.goto(f"{fleet.url}/tables/evil.rtl")
    text = page.inner_text("main")
    assert "finance<U+202E>exe.txt" in text  # the override is shown, not obeyed
    assert "mixed script" in text  # the lookalike owner is flagged
    page.goto(f"{fleet.url}/tables/evil.long")
    assert LONG in page.inner_text("main")  # the detail page shows all of it
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 1360 + 20, width  # wrapped, not a page a kilometre wide
    assert_clean(admin)


def test_reader_sees_no_action_buttons(browser: Any, fleet: ConsoleEnv) -> None:
    context, person = open_person(browser)
    sign_in(person, fleet.url, READER_TOKEN)
    page = person.page
    page.goto(f"{fleet.url}/tables/{ORDERS}")
    assert page.locator("form[method=post][action^='/tables/']").count() == 0
    assert page.locator("a[href$='/trigger']").count() == 0
    assert "Health" in page.inner_text("main")
    shot(fleet, person, "reader-table")
    page.goto(f"{fleet.url}/operations?table={ORDERS}")
    page.click("td a[href^='/operations/']")
    assert page.locator("form[action*='/cancel'], form[action*='/retry']").count() == 0
    page.goto(f"{fleet.url}/queues")
    assert page.locator("form[action^='/queues/']").count() == 0
    page.goto(f"{fleet.url}/catalogs")
    assert "admin tokens only" in page.inner_text("main")
    response = page.goto(f"{fleet.url}/tables/{ORDERS}/trigger")
    assert response is not None and response.status == 403
    assert_clean(person)
    context.close()

    # an owner of sales.* may act on its table and not on another one
    context, person = open_person(browser)
    sign_in(person, fleet.url, OWNER_TOKEN)
    person.page.goto(f"{fleet.url}/tables/{ORDERS}")
    assert person.page.locator("a[href$='/trigger']").count() == 1
    person.page.goto(f"{fleet.url}/tables/evil.rtl")
    assert person.page.locator("a[href$='/trigger']").count() == 0
    person.page.goto(f"{fleet.url}/queues")
    assert person.page.locator("form[action^='/queues/']").count() == 0
    context.close()


def test_actions_confirm_and_keep_what_was_typed(admin: Person, fleet: ConsoleEnv) -> None:
    page = admin.page
    page.goto(f"{fleet.url}/queues")
    page.fill("#newqueue input[name=queue]", "batch")
    page.fill("#newqueue input[name=max_running]", "lots")
    page.click("#newqueue button")
    assert "whole number" in page.inner_text("#err-max_running")
    assert page.input_value("#newqueue input[name=max_running]") == "lots"
    page.fill("#newqueue input[name=max_running]", "3")
    page.click("#newqueue button")
    assert "Set queue batch to at most 3 running?" in page.inner_text("main")
    page.click("button[value=confirm]")
    page.wait_for_url(f"{fleet.url}/queues")
    row = page.locator("tr", has_text="batch").first.inner_text()
    assert "3" in row
    shot(fleet, admin, "queues")

    page.goto(f"{fleet.url}/tables/{ORDERS}")
    page.click("text=Pause…")
    assert "Pause tables/sales.orders?" in page.inner_text("main")
    page.click("button[value=confirm]")
    page.wait_for_url(re.compile(r".*/tables/sales\.orders\?done=pause$"))
    assert "PAUSED" in page.inner_text("section.head")
    stub, md = fleet.admin_stub()
    got = stub.GetTable(tms_pb2.GetTableRequest(name=f"tables/{ORDERS}"), metadata=md,
                        timeout=10)
    assert got.state == tms_pb2.Table.PAUSED
    page.click("text=Resume…")
    page.click("button[value=confirm]")
    assert "ACTIVE" in page.inner_text("section.head")

    page.goto(f"{fleet.url}/catalogs")
    page.click("a[href='/catalogs/shop']")
    assert "Secrets (references only)" in page.inner_text("main")
    shot(fleet, admin, "catalog")
    page.goto(f"{fleet.url}/catalogs")
    shot(fleet, admin, "catalogs")
    assert_clean(admin)


def test_csrf_headers_and_sign_out(browser: Any, fleet: ConsoleEnv) -> None:
    context, person = open_person(browser)
    sign_in(person, fleet.url, ADMIN_TOKEN)
    page = person.page
    response = page.goto(f"{fleet.url}/tables")
    assert response is not None
    headers = response.headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "script-src 'self'" in headers["content-security-policy"]
    assert "unsafe-inline" not in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"
    # a POST without the form's CSRF field is refused and changes nothing
    refused = context.request.post(f"{fleet.url}/tables/{ORDERS}/pause",
                                   form={"step": "confirm"}, max_redirects=0)
    assert refused.status == 403
    stub, md = fleet.admin_stub()
    got = stub.GetTable(tms_pb2.GetTableRequest(name=f"tables/{ORDERS}"), metadata=md,
                        timeout=10)
    assert got.state == tms_pb2.Table.ACTIVE
    page.click("text=Sign out")
    page.wait_for_url(re.compile(r".*/signin.*"))
    page.goto(f"{fleet.url}/tables")
    assert "/signin" in page.url
    assert_clean(person)
    context.close()


def _new_rpc(call: Any, name: str) -> Any:
    """The answer of an RPC of the console contract, or a skip naming it while the API answers
    UNIMPLEMENTED (its implementation is merged separately)."""
    try:
        return call()
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.UNIMPLEMENTED:
            pytest.skip(f"{name} answers UNIMPLEMENTED from this tms-api")
        raise


def test_fleet_health_and_trends_when_the_api_has_them(admin: Person,
                                                       fleet: ConsoleEnv) -> None:
    stub, md = fleet.admin_stub()
    status = _new_rpc(lambda: stub.GetFleetStatus(tms_pb2.GetFleetStatusRequest(),
                                                  metadata=md, timeout=10), "GetFleetStatus")
    page = admin.page
    page.goto(f"{fleet.url}/")
    main = page.inner_text("main")
    assert "not available from this API yet" not in main.split("Least healthy")[0]
    for process in status.processes:
        assert process.id in main, process.id
    assert "scheduler-0" in main and "executor-0" in main
    name = f"tables/{ORDERS}"
    explain = stub.ExplainTable(tms_pb2.ExplainTableRequest(name=name), metadata=md,
                                timeout=10)
    history = _new_rpc(lambda: stub.GetTableHistory(tms_pb2.GetTableHistoryRequest(name=name),
                                                    metadata=md, timeout=10),
                       "GetTableHistory")
    page.goto(f"{fleet.url}/tables/{ORDERS}")
    main = page.inner_text("main")
    if explain.HasField("health"):
        assert f"= {explain.health.score}" in main
        for part in explain.health.parts:
            assert part.name in main
    if history.points:
        assert page.locator("svg.chart polyline.series").count() >= 1
    if history.markers:
        assert page.locator("svg.chart line.marker").count() >= 1
    shot(fleet, admin, "table-trends")
    assert_clean(admin)


def test_api_stopped_mid_session_shows_a_banner(admin: Person, fleet: ConsoleEnv) -> None:
    api = next(s for s in fleet.stack.services if s.name == "api")
    api.stop()
    with pytest.raises(grpc.RpcError):
        stub, md = fleet.admin_stub()
        stub.ListQueues(tms_pb2.ListQueuesRequest(), metadata=md, timeout=2)
    page = admin.page
    for path in ("/", "/tables", f"/tables/{ORDERS}", "/operations", "/queues", "/catalogs"):
        response = page.goto(f"{fleet.url}{path}")
        assert response is not None and response.status == 503, path
        banner = page.locator(".banner.lost")
        assert banner.is_visible(), path
        assert "TMS API unreachable" in banner.inner_text()
        assert "Traceback" not in page.content()
    shot(fleet, admin, "api-lost")
    assert_clean(admin)
