"""One trace follows a commit: the writer's NotifyCommit, the scheduler's decision and the
executor's attempt, across three processes that only share the database; every log line of
the attempt carries the trace id."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import constant_catalog, stub_for, wait_for
from tms.v1 import tms_pb2

pytestmark = pytest.mark.integration
PLUGINS = Path(__file__).resolve().parent.parent / "plugins"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
WRITER_SPAN = "00f067aa0ba902b7"


def spans(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_commit_decision_attempt_share_one_trace(make_stack, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", f"{PLUGINS}{os.pathsep}{old}" if old else str(PLUGINS))
    out = tmp_path / "spans.jsonl"
    monkeypatch.setenv("TMS_TRACES_EXPORTER", f"jsonl:{out}")
    stack = make_stack(scheduler_args=["--shard-settle-s", "0.5", "--poll-interval-s", "0.2"],
                       executor_args=["--poll-interval-s", "0.2"])
    stack.start_api()
    stub = stub_for(stack)
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id="traced", table=tms_pb2.Table(
        format="constant", catalog=constant_catalog(stack.database_url), table_name="traced",
        policy={"constant.files": "20", "execution.max-attempts": "1"})), timeout=10)
    stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table="tables/traced", commit_id="1"),
                      metadata=(("traceparent", f"00-{TRACE_ID}-{WRITER_SPAN}-01"),), timeout=10)
    stack.start_scheduler(0)
    executor = stack.start_executor(0)

    def chain() -> dict[str, dict] | None:
        found = {s["name"]: s for s in spans(out) if s["trace_id"] == TRACE_ID}
        return found if {"NotifyCommit", "decide", "attempt"} <= set(found) else None

    found = wait_for(chain, "the attempt's span in the commit's trace", 120)
    notify, decide, attempt = found["NotifyCommit"], found["decide"], found["attempt"]
    assert notify["parent_span_id"] == WRITER_SPAN and notify["service"] == "tms-api"
    assert decide["parent_span_id"] == notify["span_id"]
    assert decide["service"] == "tms-scheduler" and decide["attributes"]["tms.table"] == "traced"
    assert attempt["parent_span_id"] == decide["span_id"]
    assert attempt["service"] == "tms-executor" and attempt["attributes"]["tms.attempt"] == 1
    lines = [json.loads(x) for x in executor.log_path.read_text().splitlines()
             if x.startswith("{")]
    started = [x for x in lines if x.get("event") == "operation started"]
    assert started and started[0]["trace_id"] == TRACE_ID
