"""The `tms` commands a new user reaches for beyond the basics, against a real API server and
PostgreSQL: field-mask updates, deregistration with its confirmation, commits by hand, explain
with an active operation, integer counts, case-insensitive enum flags, and help on every flag.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import sys

import pytest

from tests.integration.test_cli import (  # noqa: F401 (fixtures)
    Cli,
    _clean_env,
    _quiet_server_logs,
    register,
    row,
)
from tms.api.auth import Authenticator
from tms.domain import Decision, OperationState, Outcome
from tms.storage.roles import EnqueueParams
from tms_services.cli import build_parser

pytestmark = pytest.mark.integration


@pytest.fixture
def cli(api, capsys) -> Cli:
    return Cli(capsys, api.address, catalog=api.catalog)


def test_update_changes_only_the_flags_given(cli: Cli, api) -> None:
    register(cli, "events", "--owner", "team-a", "--priority", "3",
             "--policy", "compaction.min-small-files=50")
    out = cli.ok("tables", "update", "events", "--priority", "9")
    assert row(out, "priority:")[1] == "9" and row(out, "owner:")[1] == "team-a"
    doc = cli.json("tables", "update", "tables/events", "--owner", "team-b",
                   "--policy", "compaction.quiet-s=60")
    assert doc["owner"] == "team-b" and doc["priority"] == 9
    assert doc["policy"] == {"compaction.min-small-files": "50", "compaction.quiet-s": "60"}
    doc = cli.json("tables", "update", "events", "--unset-policy",
                   "compaction.min-small-files")
    assert doc["policy"] == {"compaction.quiet-s": "60"}
    code, _, err = cli("tables", "update", "events", "--catalog-property", "extra=1")
    assert code == 2  # catalogs are resources now: no such flag
    code, _, err = cli("tables", "update", "events")
    assert code == 2 and "at least one field" in err
    code, _, err = cli("tables", "update", "events", "--priority", "5000")
    assert code == 2 and "INVALID_ARGUMENT" in err


def test_deregister_asks_or_needs_yes(cli: Cli, api, monkeypatch: pytest.MonkeyPatch) -> None:
    register(cli, "events")
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal
    code, _, err = cli("tables", "deregister", "events")
    assert code == 2 and "--yes" in err
    assert cli.json("tables", "show", "events")["name"] == "tables/events"

    cli.ok("operations", "trigger", "events", "compaction")
    assert api.store.operation_claim("exec-1", 30) is not None
    code, _, err = cli("tables", "deregister", "events", "--yes")
    assert code == 4 and "OPERATION_RUNNING" in err
    assert cli.ok("tables", "deregister", "events", "--yes", "--force").strip() == (
        "deregistered tables/events")
    code, _, _ = cli("tables", "show", "events")
    assert code == 3

    register(cli, "other")
    tty = io.StringIO("y\n")
    tty.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(sys, "stdin", tty)
    code, out, _ = cli("tables", "deregister", "other")
    assert code == 0 and out.strip().endswith("deregistered tables/other")
    assert cli("tables", "show", "other")[0] == 3


def test_commits_notify(cli: Cli) -> None:
    register(cli, "events")
    out = cli.ok("commits", "notify", "events", "101", "--files-added", "3",
                 "--operation", "append", "--commit-time", "2026-01-02T03:04:05")
    assert out.strip() == "tables/events: commit 101 recorded"
    assert cli.json("commits", "notify", "tables/events", "101")["duplicate"] is True
    shown = cli.json("tables", "show", "events")
    assert shown["last_commit_id"] == "101" and shown["commit_count"] == "1"
    out = cli.ok("commits", "notify", "events", "102", "103")
    assert out.splitlines() == ["tables/events: commit 102 recorded",
                                "tables/events: commit 103 recorded"]
    code, _, err = cli("commits", "notify", "nope", "1")
    assert code == 3 and "NOT_FOUND" in err
    code, out, _ = cli("commits", "notify", "nope", "1", "2", "--json")
    doc = json.loads(out)
    assert code == 3 and [r["error"].split(":")[0] for r in doc["results"]] == ["NOT_FOUND"] * 2


def test_explain_shows_metrics_once_and_the_active_operation(cli: Cli, api) -> None:
    register(cli, "events")
    table = api.store.table_get("events").table
    compaction = Decision("compaction", True, "30 of 30 data files are small",
                          {"small_files": 30, "data_files": 30})
    manifests = Decision("rewrite_manifests", False, "3 manifests",
                         {"small_files": 30, "data_files": 30, "manifests": 3})
    op_id = api.store.operation_enqueue(EnqueueParams(
        table, "compaction", "policy", compaction.reason, 3, 0, metrics=compaction.metrics))
    api.store.decision_finish_batch("sched-1", [(table.pk, compaction, op_id),
                                                (table.pk, manifests, None)], [])
    name = f"tables/events/operations/{op_id}"

    out = cli.ok("explain", "events")
    assert out.count("small_files") == 1  # once, not per action
    assert "metrics: data_files=30, manifests=3, small_files=30" in out.splitlines()
    assert ".0" not in out
    assert row(out, "compaction")[2:4] == ["QUEUED", name]
    assert row(out, "rewrite_manifests")[2:4] == ["no", "-"]
    assert api.store.operation_claim("exec-1", 30) is not None
    assert row(cli.ok("explain", "events"), "compaction")[2:4] == ["RUNNING", name]
    doc = cli.json("explain", "events")
    assert doc["actions"][0]["metrics"] == {"small_files": 30, "data_files": 30}
    assert "30.0" not in json.dumps(doc)


def test_counts_are_integers(cli: Cli, api) -> None:
    register(cli, "events")
    name = cli.json("operations", "trigger", "events", "compaction")["name"]
    op = api.store.operation_claim("exec-1", 30)
    assert op is not None
    api.store.operation_finish(op, "exec-1", Outcome(OperationState.SUCCEEDED,
                                                     {"rewritten_files": 12, "ratio": 0.5}))
    shown = cli.ok("operations", "show", name)
    assert row(shown, "result:")[1] == '{"ratio": 0.5, "rewritten_files": 12}'
    assert cli.json("operations", "show", name)["result"]["rewritten_files"] == 12
    assert ": 12.0" not in json.dumps(cli.json("operations", "list"))


def test_enum_flags_take_any_case(cli: Cli) -> None:
    register(cli, "events")
    cli.ok("tables", "pause", "events")
    assert cli.json("tables", "list", "--state", "paused")["tables"][0]["name"] == (
        "tables/events")
    cli.ok("tables", "resume", "events")
    name = cli.json("operations", "trigger", "events", "Compaction")["name"]
    doc = cli.json("operations", "list", "--state", "queued", "--action", "COMPACTION")
    assert [o["name"] for o in doc["operations"]] == [name]
    assert cli.ok("watch", "--once", "--state", "Queued").count(name) == 1
    code, _, err = cli("operations", "list", "--state", "done")
    assert code == 2 and "invalid choice" in err


def _actions(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, argparse.Action]]:
    found: list[tuple[str, argparse.Action]] = []
    for action in parser._actions:
        found.append((path, action))
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found += _actions(child, f"{path} {name}")
    return found


def test_every_flag_and_argument_has_help() -> None:
    actions = _actions(build_parser(), "tms")
    missing = [f"{path}: {a.option_strings or a.dest}" for path, a in actions
               if not a.help or a.help == argparse.SUPPRESS]
    assert missing == []
    commands = {path for path, _ in actions}
    for needed in ("tms tables update", "tms tables deregister", "tms commits notify",
                   "tms queues list", "tms queues set"):
        assert needed in commands


def test_attempts_hold_and_progress_as_an_operator_reads_them(cli: Cli, api) -> None:
    """Attempts show as used/allowed with hand-backs apart; a QUEUED operation says what holds
    it; a RUNNING one on an engine that reports progress shows its stages."""
    register(cli, "events")
    first = cli.json("operations", "trigger", "events", "compaction")["name"]
    op = api.store.operation_claim("exec-1", 30)
    assert op is not None and op.name == first
    assert api.store.operation_release(op, "exec-1", "executor shutting down")
    shown = cli.ok("operations", "show", first)
    assert row(shown, "attempts:")[1] == "0/3 +1 handed back"
    assert row(shown, "held:")[1].startswith("waiting for an executor")

    op = api.store.operation_claim("exec-2", 30)
    assert op is not None and op.lease.attempt == 2 and op.lease.attempts_used == 1
    sample = {"stages": [{"id": 4, "name": "rewrite data files", "tasks": 8, "completed": 3,
                          "active": 2, "failed": 0}], "sampled_at": "2026-06-01T00:00:00+00:00"}
    assert api.store.attempt_set_progress(op, "exec-2", sample)
    shown = cli.ok("operations", "show", first)
    assert row(shown, "attempts:")[1] == "1/3 +1 handed back"
    assert row(shown, "progress:")[1] == "stage 4 rewrite data files: 3/8 tasks, 2 active"
    listed = cli.ok("operations", "list", "--table", "events")
    assert "stage 4 rewrite data files: 3/8 tasks" in row(listed, first)[-1]

    second = cli.json("operations", "trigger", "events", "expire_snapshots")["name"]
    held = row(cli.ok("operations", "show", second), "held:")[1]
    assert held == f"table busy: {first} is running"
    assert f"held: table busy: {first} is running" in cli.ok("operations", "list")
    assert api.store.operation_finish(op, "exec-2", Outcome(OperationState.SUCCEEDED, {}))
    shown = cli.ok("operations", "show", first)
    assert row(shown, "progress:")[1] == "-" and row(shown, "held:")[1] == "-"


def test_operator_input_forms(cli: Cli, api) -> None:
    """Relative times for --created-after, --api as http:// URL, unknown keys named whole."""
    register(cli, "events")
    name = cli.json("operations", "trigger", "events", "compaction")["name"]
    recent = cli.json("operations", "list", "--created-after", "12 hours ago")
    assert [o["name"] for o in recent["operations"]] == [name]
    assert cli.json("operations", "list", "--created-before", "2d")["operations"] == []
    code, _, err = cli("operations", "list", "--created-after", "last tuesday")
    assert code == 2 and "'12 hours ago'" in err

    code, out, err = cli("tables", "list", "--api", f"http://{api.address}")
    assert code == 0 and row(out, "events")[0] == "events", err
    code, _, err = cli("tables", "update", "events", "--policy", "compaction.min-smal-files=3")
    assert code == 2
    assert "did you mean compaction.min-small-files" in err
    assert err.rstrip().endswith("tms tables policy-keys or docs/policy.md)")


def test_show_prints_logs_on_failure_or_when_asked(cli: Cli, api) -> None:
    register(cli, "events")
    log = "\n".join(f"26/11/28 12:00:{i:02d} INFO SparkContext: step {i}" for i in range(60))
    done = cli.json("operations", "trigger", "events", "compaction")["name"]
    op = api.store.operation_claim("exec-1", 30)
    assert op is not None
    assert api.store.operation_finish(op, "exec-1", Outcome(OperationState.SUCCEEDED, {},
                                                            log_tail=log))
    shown = cli.ok("operations", "show", done)
    assert "SparkContext" not in shown and "log tail: 60 lines (--logs prints them)" in shown
    assert cli.ok("operations", "show", done, "--logs").count("SparkContext") == 60
    assert cli.json("operations", "show", done)["log_tail"] == log  # JSON: always all of it

    failed = cli.json("operations", "trigger", "events", "rewrite_manifests")["name"]
    op = api.store.operation_claim("exec-1", 30)
    assert op is not None
    assert api.store.operation_finish(op, "exec-1", Outcome(OperationState.FAILED,
                                                            error="boom", log_tail=log))
    shown = cli.ok("operations", "show", failed)
    assert shown.count("SparkContext") == 30 and "step 59" in shown and "step 29" not in shown


def test_a_catalog_whose_discovery_fails_says_so_in_the_list(cli: Cli, api) -> None:
    catalog = api.catalog.catalog_id
    at = dt.datetime(2026, 11, 28, 9, 30, tzinfo=dt.UTC)
    api.store.catalog_finish_discovery(catalog, at, "cannot list namespaces: timed out", 0, 0)
    cells = row(cli.ok("catalogs", "list"), catalog)
    assert cells[-1] == "FAILED 2026-11-28 09:30:00: cannot list namespaces: timed out"
    api.store.catalog_finish_discovery(catalog, at, None, 1200, 3)
    cells = row(cli.ok("catalogs", "list"), catalog)
    assert cells[-1] == "2026-11-28 09:30:00: +1,200 registered, 3 missing"


def test_authentication_failures_name_tms_token(make_api, capsys) -> None:
    auth = Authenticator.from_config({"tokens": [
        {"name": "ops", "token": "admin-secret", "roles": ["admin"]},
        {"name": "dash", "token": "reader-secret", "roles": ["reader"]}]})
    api = make_api(auth=auth)
    code, _, err = Cli(capsys, api.address)("tables", "list")
    assert code == 5 and err.startswith("tms: UNAUTHENTICATED")
    assert "export TMS_TOKEN=<token> or pass --token" in err
    code, _, err = Cli(capsys, api.address, ("--token", "wrong"))("tables", "list")
    assert code == 5 and "TMS_TOKEN / --token was refused" in err
    reader = Cli(capsys, api.address, ("--token", "reader-secret"))
    code, _, err = reader("queues", "set", "batch", "--max-running", "1")
    assert code == 5 and "PERMISSION_DENIED" in err and "TMS_TOKEN" in err
    code, _, err = Cli(capsys, api.address)("tables", "list", "--json")
    assert json.loads(err)["error"]["hint"].startswith("no token was sent")
