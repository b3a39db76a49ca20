"""The `tms` CLI against a real API server and PostgreSQL: every command in both output forms,
the exit codes scripts rely on, TLS, `watch`, and the console entry as a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from tests.helpers import SqlCatalog
from tests.integration.certs import make_pki
from tms.api.auth import Authenticator
from tms.api.server import TlsConfig
from tms.domain import OperationState, Outcome
from tms.local.ports import free_port
from tms_services.cli import main
from tms_services.cli.format import duration

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
RETRY_DELAY_S = 3600.0  # a retry backoff long enough to stay pending for the whole test
PROC_TIMEOUT_S = 60
CATALOG = ["--catalog", "cat", "--namespace", "ns"]  # the make_api fixture's catalog


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("TMS_API", "TMS_TOKEN", "TMS_TLS_CA"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(autouse=True)
def _quiet_server_logs() -> Iterator[None]:
    """The in-process API server logs through structlog, by default to stdout, where it would
    mix with the CLI output under test."""
    before = structlog.get_config()
    structlog.configure(logger_factory=structlog.ReturnLoggerFactory())
    yield
    structlog.configure(**before)


class Cli:
    """Runs `main` in-process against one server; returns (exit code, stdout, stderr)."""

    def __init__(self, capsys: pytest.CaptureFixture[str], address: str,
                 extra: tuple[str, ...] = (), catalog: SqlCatalog | None = None) -> None:
        self.capsys, self.address, self.extra = capsys, address, extra
        self.catalog = catalog  # where `register` makes its tables

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        with pytest.raises(SystemExit) as info:
            main([*argv, "--api", self.address, *self.extra])
        out, err = self.capsys.readouterr()
        code = info.value.code
        return (code if isinstance(code, int) else 1), out, err

    def json(self, *argv: str) -> dict:
        code, out, err = self(*argv, "--json")
        assert code == 0, err
        return json.loads(out)

    def ok(self, *argv: str) -> str:
        code, out, err = self(*argv)
        assert code == 0, err
        return out


@pytest.fixture
def tms(api, capsys) -> Cli:
    return Cli(capsys, api.address, catalog=api.catalog)


def register(tms: Cli, table_id: str, *more: str) -> None:
    """Make ``ns.<table_id>`` in the catalog and register it."""
    name = table_id.replace(".", "_")
    assert tms.catalog is not None
    tms.catalog.table("ns", name)
    tms.ok("tables", "register", table_id, *CATALOG, "--name", name, *more)


def op_id(name: str) -> int:
    return int(name.rsplit("/", 1)[1])


def row(out: str, first: str) -> list[str]:
    """The cells of the table line starting with ``first`` (cells are 2+ spaces apart)."""
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("  ") if c.strip()]
        if cells and cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r} in:\n{out}")


def test_tables_human_and_json(tms: Cli) -> None:
    tms.catalog.table("ns", "orders")
    orders = ["tables", "register", "sales.orders", *CATALOG, "--name", "orders", "--policy",
              "compaction.min-small-files=50", "--owner", "team-a", "--queue", "batch",
              "--priority", "7", "--request-id", "req-1"]
    assert tms.ok(*orders).strip() == (
        "registered tables/sales.orders (iceberg, queue batch, priority 7, ACTIVE)")
    replay = tms.json(*orders)  # same request id: the first result again, exit 0
    assert replay["name"] == "tables/sales.orders" and replay["table_name"] == "orders"
    register(tms, "billing")

    out = tms.ok("tables", "list")
    header = out.splitlines()[0].split()
    assert header[:3] == ["TABLE", "FORMAT", "STATE"]
    assert row(out, "sales.orders")[:6] == ["sales.orders", "iceberg", "ACTIVE", "-", "batch", "7"]
    listed = tms.json("tables", "list", "--queue", "batch")
    assert [t["name"] for t in listed["tables"]] == ["tables/sales.orders"]
    assert listed["tables"][0]["commit_count"] == "0"  # proto3 JSON: int64 as a string
    limited = tms.json("tables", "list", "--limit", "1")
    assert len(limited["tables"]) == 1 and limited["next_page_token"]
    code, out, err = tms("tables", "list", "--limit", "1")
    assert code == 0 and "--all" in err and len(out.splitlines()) == 2

    shown = tms.ok("tables", "show", "sales.orders")
    assert row(shown, "location:")[1].endswith("/warehouse/ns/orders")
    assert row(shown, "catalog:")[1] == "cat"
    assert "policy:" in shown and "compaction.min-small-files=50" in shown
    assert " UTC" in row(shown, "create_time:")[1]
    assert tms.json("tables", "show", "tables/sales.orders")["policy"] == {
        "compaction.min-small-files": "50"}

    assert tms.ok("tables", "pause", "sales.orders").strip() == "tables/sales.orders is PAUSED"
    assert tms.json("tables", "list", "--state", "PAUSED")["tables"][0]["state"] == "PAUSED"
    assert tms.json("tables", "resume", "sales.orders")["state"] == "ACTIVE"
    assert tms.json("tables", "pause", "billing")["state"] == "PAUSED"


def test_explain(tms: Cli) -> None:
    register(tms, "events", "--policy", "compaction.min-small-files=50")
    short = tms.ok("explain", "events")  # the policy as one line unless --policy
    assert "scheduler.pull-interval-s" not in short
    assert "1 set (table: compaction.min-small-files); --policy prints" in short
    out = tms.ok("explain", "events", "--policy")
    assert out.splitlines()[0] == "tables/events  ACTIVE"
    assert row(out, "compaction")[1:3] == ["never", "-"]
    assert row(out, "compaction.min-small-files")[1:5] == ["50", "table", "12", "count"]
    assert row(out, "scheduler.pull-interval-s")[1:5] == ["600", "default", "600", "s"]
    doc = tms.json("explain", "tables/events")
    assert doc["table"] == "tables/events"
    policy = {p["key"]: p for p in doc["policy"]}
    assert policy["compaction.min-small-files"]["source"] == "table"
    assert policy["manifests.enabled"] == {
        "key": "manifests.enabled", "value": "true", "source": "default", "default": "true",
        "unit": "", "doc": "rewrite manifests when there are many"}
    assert {a["action"] for a in doc["actions"]} >= {"compaction", "expire_snapshots"}
    assert all(a["decided"] is False for a in doc["actions"])


def test_operations_lifecycle(tms: Cli, api) -> None:
    register(tms, "events")
    out = tms.ok("operations", "trigger", "events", "compaction", "--reason", "month end",
                 "--param", "target-file-size-bytes=1024")
    assert out.startswith("queued tables/events/operations/")
    first = out.split()[1]
    again = tms.json("operations", "trigger", "events", "rewrite_manifests")
    assert again["state"] == "QUEUED" and again["trigger"] == "manual"

    listed = tms.ok("operations", "list", "--table", "events")
    cells = row(listed, first)  # the full name, as every command prints it
    assert cells[1:5] == ["compaction", "QUEUED", f"0/{again['max_attempts']}", "default"]
    doc = tms.json("operations", "list", "--state", "QUEUED", "--action", "compaction")
    assert [o["name"] for o in doc["operations"]] == [first]
    assert doc["operations"][0]["params"] == {"target-file-size-bytes": "1024"}
    since = tms.json("operations", "list", "--created-after", "2999-01-01T00:00:00")
    assert since["operations"] == []

    op = api.store.operation_claim("exec-1", 30)
    assert op is not None and op.id == op_id(first)
    api.store.operation_finish(op, "exec-1", Outcome(
        OperationState.FAILED, error="OOM", exit_code=137, log_tail="line one\nline two"))
    shown = tms.ok("operations", "show", first)
    assert row(shown, "state:")[1] == "FAILED" and row(shown, "error:")[1] == "OOM"
    assert row(shown, "1")[1:3] == ["FAILED", "exec-1"] and "137" in row(shown, "1")
    assert "log tail:" in shown and "  line two" in shown.splitlines()
    got = tms.json("operations", "show", "events/" + first.rsplit("/", 1)[1])
    assert got["attempts"][0]["executor_id"] == "exec-1" and got["log_tail"].endswith("two")

    retried = tms.ok("operations", "retry", first)
    assert f"retry of {first}" in retried
    new = retried.split()[1]
    cancelled = tms.json("operations", "cancel", new)
    assert cancelled["state"] == "CANCELLED"
    again_retry = tms.json("operations", "retry", new)
    assert again_retry["retry_of"] == new
    out = tms.ok("operations", "cancel", again_retry["name"])
    assert out.strip() == f"{again_retry['name']} is CANCELLED"


def test_cancel_running_is_a_request(tms: Cli, api) -> None:
    register(tms, "events")
    name = tms.json("operations", "trigger", "events", "compaction")["name"]
    assert api.store.operation_claim("exec-9", 30) is not None
    out = tms.ok("operations", "cancel", name)
    assert out.strip() == f"cancel requested for {name} (RUNNING on exec-9)"
    assert tms.json("operations", "show", name)["cancel_requested"] is True


def test_queues(tms: Cli) -> None:
    assert tms.ok("queues", "list").strip() == "no queues with a limit or active operations"
    out = tms.ok("queues", "set", "batch", "--max-running", "2")
    assert out.strip() == "queues/batch: max running 2 (0 running, 0 queued)"
    listed = tms.ok("queues", "list")
    assert row(listed, "batch") == ["batch", "2", "0", "0"]
    doc = tms.json("queues", "set", "queues/batch", "--unlimited")
    assert "max_running" not in doc and doc["name"] == "queues/batch"
    register(tms, "events", "--queue", "urgent")
    tms.ok("operations", "trigger", "events", "compaction")
    queues = tms.json("queues", "list")["queues"]
    assert {q["name"]: (q.get("max_running"), q["queued"]) for q in queues}["queues/urgent"] == (
        None, 1)
    assert row(tms.ok("queues", "list"), "urgent")[1] == "unlimited"


def test_exit_codes_and_error_reports(tms: Cli, api) -> None:
    code, out, err = tms("tables", "show", "nope")
    assert (code, out) == (3, "") and err.strip() == "tms: NOT_FOUND: tables/nope not found"
    code, _, err = tms("operations", "show", "events/1", "--json")
    assert code == 3 and json.loads(err)["error"]["code"] == "NOT_FOUND"

    code, _, err = tms("tables", "register", "Bad Id", *CATALOG, "--name", "x")
    assert code == 2 and err.startswith("tms: INVALID_ARGUMENT") and "table_id:" in err
    code, _, err = tms("queues", "set", "batch", "--max-running", "20000", "--json")
    doc = json.loads(err)["error"]
    assert code == 2 and doc["exit_code"] == 2
    assert [v["field"] for v in doc["field_violations"]] == ["max_running"]

    register(tms, "events")
    code, _, err = tms("tables", "register", "events", *CATALOG, "--name", "events")
    assert code == 4 and "ALREADY_EXISTS" in err
    tms.ok("operations", "trigger", "events", "compaction")
    code, _, err = tms("operations", "trigger", "events", "compaction", "--json")
    doc = json.loads(err)["error"]
    assert code == 4 and doc["reason"] == "OPERATION_ACTIVE" and doc["metadata"]["operation"]
    tms.ok("tables", "pause", "events")
    code, _, err = tms("operations", "trigger", "events", "expire_snapshots")
    assert code == 4 and err.startswith("tms: FAILED_PRECONDITION (TABLE_PAUSED): ")

    for argv in (["tables"], ["tables", "register"], ["queues", "set", "q"],
                 ["operations", "list", "--state", "DONE"], ["watch", "--interval-s", "0"],
                 ["tables", "register", "t", "--policy", "novalue"]):
        code, _, err = tms(*argv)
        assert code == 2 and "tms: USAGE: " in err, argv
    code, _, err = tms("tables", "show", "x", "--tls-cert", "c.pem")
    assert code == 2 and "--tls-key" in err
    code, _, err = tms("tables", "list", "--json", "--limit", "0")
    assert code == 2 and json.loads(err)["error"]["code"] == "USAGE"


def test_unavailable(capsys) -> None:
    closed = Cli(capsys, f"127.0.0.1:{free_port()}")
    code, out, err = closed("tables", "list")
    assert (code, out) == (1, "") and err.startswith("tms: UNAVAILABLE: ")
    code, _, err = closed("watch", "--once", "--json")
    assert code == 1 and json.loads(err)["error"]["code"] == "UNAVAILABLE"


def test_tokens(make_api, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    auth = Authenticator.from_config({"tokens": [
        {"name": "ops", "token": "admin-secret", "roles": ["admin"]},
        {"name": "dash", "token": "reader-secret", "roles": ["reader"]}]})
    api = make_api(auth=auth)
    admin = Cli(capsys, api.address, ("--token", "admin-secret"), api.catalog)
    reader = Cli(capsys, api.address, ("--token", "reader-secret"))
    anonymous = Cli(capsys, api.address)
    register(admin, "events")
    assert reader.json("tables", "list")["tables"][0]["name"] == "tables/events"
    code, _, err = reader("tables", "register", "other", *CATALOG, "--name", "other")
    assert code == 5 and err.startswith("tms: PERMISSION_DENIED")
    code, _, err = reader("queues", "set", "batch", "--max-running", "1", "--json")
    assert code == 5 and json.loads(err)["error"]["code"] == "PERMISSION_DENIED"
    code, _, err = anonymous("tables", "list")
    assert code == 5 and "UNAUTHENTICATED" in err
    monkeypatch.setenv("TMS_TOKEN", "reader-secret")  # the variable works as --token does
    assert anonymous.json("tables", "show", "events")["name"] == "tables/events"


def test_tls_and_mutual_tls(make_api, capsys, tmp_path: Path) -> None:
    ca, server, client = make_pki(tmp_path)
    tls = make_api(tls=TlsConfig(server.cert, server.key))
    assert Cli(capsys, tls.address, ("--tls-ca", str(ca.cert))).json("tables", "list") == {
        "tables": [], "next_page_token": ""}
    code, _, _ = Cli(capsys, tls.address)("tables", "list")
    assert code == 1  # plaintext to a TLS port: UNAVAILABLE
    mtls = make_api(tls=TlsConfig(server.cert, server.key, ca.cert))
    with_cert = Cli(capsys, mtls.address, ("--tls-ca", str(ca.cert), "--tls-cert",
                                           str(client.cert), "--tls-key", str(client.key)))
    assert with_cert.ok("tables", "list").strip() == "no tables"
    code, _, _ = Cli(capsys, mtls.address, ("--tls-ca", str(ca.cert)))("tables", "list")
    assert code == 1
    code, _, err = Cli(capsys, mtls.address, ("--tls-ca", str(tmp_path / "none.pem")))(
        "tables", "list")
    assert code == 2 and "cannot read --tls-ca" in err


def _running_and_retrying(tms: Cli, api) -> tuple[dict, dict]:
    """Two operations: one waiting out a retry backoff after attempt 1 failed on exec-a, and
    one RUNNING its first attempt on exec-b."""
    register(tms, "t1")
    register(tms, "t2")
    retrying = tms.json("operations", "trigger", "t1", "compaction")
    op = api.store.operation_claim("exec-a", 30)
    assert op is not None and op.id == op_id(retrying["name"])
    assert api.store.operation_retry_later(
        op, "exec-a", Outcome(OperationState.FAILED, error="spark died"), RETRY_DELAY_S)
    running = tms.json("operations", "trigger", "t2", "compaction")
    claimed = api.store.operation_claim("exec-b", 30)
    assert claimed is not None and claimed.id == op_id(running["name"])
    return running, retrying


def test_watch_shows_progress(tms: Cli, api) -> None:
    running, retrying = _running_and_retrying(tms, api)
    tms.ok("operations", "trigger", "t1", "expire_snapshots")
    done = tms.json("operations", "trigger", "t2", "rewrite_manifests")
    tms.ok("operations", "cancel", done["name"])

    out = tms.ok("watch", "--once")
    lines = out.splitlines()
    assert lines[0].startswith("tms watch ") and lines[0].endswith("(Ctrl-C to stop)")
    assert lines[1] == "1 running, 2 queued, 1 other shown"
    run_row = row(out, running["name"])
    max_att = running["max_attempts"]
    assert run_row[2:6] == ["RUNNING", f"1/{max_att}", "default", "exec-b"]
    assert run_row[7].endswith("s")  # elapsed of the running attempt, e.g. "0s"
    retry_row = row(out, retrying["name"])
    assert retry_row[2:6] == ["QUEUED", f"1/{max_att}", "default", "exec-a"]
    assert retry_row[-2].startswith("in 59m") and retry_row[-1] == "spark died"
    shown = tms.ok("operations", "show", retrying["name"])
    assert " UTC (in 59m" in row(shown, "next_attempt_time:")[1]
    order = [line.split("  ")[0] for line in lines[4:]]  # lines[3] is the header
    assert order.index(run_row[0]) < order.index(retry_row[0])  # running first

    out = tms.ok("watch", "--iterations", "2", "--interval-s", "0.1", "--table", "t2",
                 "--state", "RUNNING")
    assert out.count("tms watch ") == 2 and "tables/t2, RUNNING" in out
    assert "tables/t1/" not in out

    code, out, _ = tms("watch", "--iterations", "2", "--interval-s", "0.1", "--json")
    frames = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(frames) == 2 and frames[0]["time"].endswith("Z")
    ops = {o["name"]: o for o in frames[1]["operations"]}
    assert ops[running["name"]]["executor_id"] == "exec-b"
    assert ops[running["name"]]["attempt"] == 1
    assert ops[retrying["name"]]["next_attempt_time"]
    code, _, err = tms("watch", "--once", "--table", "nope")
    assert code == 3 and "NOT_FOUND" in err


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def test_console_entry_subprocess(tms: Cli) -> None:
    register(tms, "events")
    script = Path(sys.executable).with_name("tms")
    entry = [str(script)] if script.exists() else [sys.executable, "-m", "tms_services.cli"]
    for cmd in (entry, [sys.executable, "-m", "tms_services.cli"]):
        done = subprocess.run([*cmd, "--api", tms.address, "tables", "list", "--json"],
                              capture_output=True, text=True, env=_env(), timeout=PROC_TIMEOUT_S)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["tables"][0]["name"] == "tables/events"
    done = subprocess.run([*entry, "tables", "show", "nope"], capture_output=True, text=True,
                          env={**_env(), "TMS_API": tms.address}, timeout=PROC_TIMEOUT_S)
    assert done.returncode == 3 and "NOT_FOUND" in done.stderr
    help_ = subprocess.run([*entry, "--help"], capture_output=True, text=True, env=_env(),
                           timeout=PROC_TIMEOUT_S)
    assert help_.returncode == 0 and "exit codes:" in help_.stdout


def test_watch_ends_cleanly_on_ctrl_c(tms: Cli) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tms_services.cli", "--api", tms.address, "watch",
         "--interval-s", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=_env())
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # a frame is out: the loop is running
        assert first.startswith("tms watch ")
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=PROC_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "Traceback" not in err


@pytest.mark.parametrize("seconds,text", [
    (0, "0s"), (7.9, "7s"), (65, "1m 05s"), (3599, "59m 59s"), (7390, "2h 03m 10s"),
    (3 * 86400 + 4 * 3600 + 5 * 60, "3d 04h 05m"), (-5, "0s")])
def test_duration_format(seconds: float, text: str) -> None:
    assert duration(seconds) == text
