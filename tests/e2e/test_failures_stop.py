"""Failures that stop, on the real processes and real Spark: a table with one data file deleted
behind Iceberg's back.

Each compaction the scheduler queues fails at once, not retried, with the root cause in its
error (the missing file's path and the hint to restore it or remove it from the table; Spark's
stage-failure wrapper only in the log); after ``execution.hold-after-failures`` (default 3)
such operations the action is held: no fourth is queued, ExplainTable, ListHeldActions and the
CLI say why, until when and what releases it; ResumeTable releases it and the scheduler queues
again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.helpers import iceberg_catalog, stub_for, wait_for
from tms.local import iceberg_data
from tms.scheduler.holds import HOLD_BASE_S
from tms.v1 import tms_pb2

pytestmark = pytest.mark.e2e

CATALOG = "tms_holds"
FAST = ["--lease-s", "6", "--heartbeat-s", "1", "--poll-interval-s", "0.2",
        "--retry-base-delay-s", "2", "--retry-max-delay-s", "2"]
PULL_S = 2  # the table's pull interval: the scheduler looks again every 2 s
QUIET_S = 5 * PULL_S  # how long the test watches for a fourth operation that must not come
OP = tms_pb2.Operation
REPO = Path(__file__).resolve().parents[2]
HINT = "restore it or remove it from the table"


def _compactions(stub, table_id: str) -> list[tms_pb2.Operation]:
    return [o for o in stub.ListOperations(tms_pb2.ListOperationsRequest(
        parent=f"tables/{table_id}"), timeout=10).operations if o.action == "compaction"]


def _explain(stub, table_id: str) -> tms_pb2.ActionExplanation:
    r = stub.ExplainTable(tms_pb2.ExplainTableRequest(name=f"tables/{table_id}"), timeout=10)
    return next(a for a in r.actions if a.action == "compaction")


def _cli(address: str, *argv: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-m", "tms_services.cli", "--api", address, *argv],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("data_path", ["arrow", "spark"])
def test_missing_data_file_fails_at_once_and_the_action_is_held(
        make_stack, monkeypatch: pytest.MonkeyPatch, data_path: str) -> None:
    if data_path == "spark":  # Spark's own rewrite: a Java FileNotFoundException in a task
        monkeypatch.setenv("TMS_ARROW_REWRITE", "0")
    stack = make_stack(executor_args=FAST)
    stack.start_api()
    catalog, _ = iceberg_catalog(stack, CATALOG)
    table = iceberg_data.create_table(catalog, "hf", "broken")
    iceberg_data.append_batches(table, 6, rows_per_commit=11)
    table = table.refresh()
    files = [t.file.file_path for t in table.scan().plan_files()]
    assert len(files) == 6
    gone = files[2]
    Path(gone.removeprefix("file://").removeprefix("file:")).unlink()  # behind Iceberg's back
    gone_path = gone.removeprefix("file://").removeprefix("file:")

    stub = stub_for(stack)
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id="broken", table=tms_pb2.Table(
        format="iceberg", catalog=CATALOG, namespace="hf", table_name="broken",
        policy={"compaction.min-small-files": "3",
                "scheduler.pull-interval-s": str(PULL_S)})), timeout=10)
    stack.start_scheduler()
    stack.start_executor()
    stub.NotifyCommit(tms_pb2.NotifyCommitRequest(
        table="tables/broken", commit_id=str(table.current_snapshot().snapshot_id)), timeout=10)

    failed = wait_for(lambda: len(ops := [o for o in _compactions(stub, "broken")
                                          if o.state == OP.FAILED]) >= 3 and ops,
                      "three compactions to fail", 600)
    print(f"{data_path} path, the error recorded: {failed[0].error}")
    for op in failed:
        # not retried: one attempt each; the root cause, not Spark's wrapper, in the error
        assert op.attempts_used == 1 and len(op.attempts) == 1, op
        assert op.error.startswith("not retryable: missing file (the table references a "
                                   "missing file: "), op.error
        assert gone_path in op.error and HINT in op.error, op.error
        assert "Job aborted due to stage failure" not in op.error, op.error
        assert "FileNotFound" in op.error, op.error
        # the wrapper stays in the log
        assert "Job aborted due to stage failure" in op.log_tail or \
            "[tms-job] root cause:" in op.log_tail, op.log_tail[-3000:]

    # held: the decision says so, with why, until when and what releases it
    held = wait_for(lambda: (a := _explain(stub, "broken")).HasField("hold") and a,
                    "ExplainTable to show the hold", 120)
    hold = held.hold
    assert hold.failures == 3 and hold.holds == 1
    assert gone_path in hold.reason and "3 compaction operations failed in a row" in hold.reason
    until = hold.held_until.ToDatetime().replace(tzinfo=UTC)
    assert until - datetime.now(UTC) > timedelta(seconds=HOLD_BASE_S - 120)
    released = " ".join(hold.released_by)
    assert "new commit" in released and "policy" in released and "tms tables resume" in released
    assert hold.last_operation == max(failed, key=lambda o: o.create_time.ToDatetime()).name
    assert not held.should_run and "held until" in held.reason, held.reason

    # no fourth operation while held, though the table is looked at every PULL_S seconds
    time.sleep(QUIET_S)
    assert len(_compactions(stub, "broken")) == 3
    assert not _explain(stub, "broken").should_run

    # an operator lists it, through the API and the CLI
    listed = stub.ListHeldActions(tms_pb2.ListHeldActionsRequest(parent="tables/-"),
                                  timeout=10).holds
    assert [(h.table, h.action) for h in listed] == [("tables/broken", "compaction")]
    out = _cli(stack.api_address, "tables", "held")
    assert "tables/broken" in out and "compaction" in out
    out = _cli(stack.api_address, "explain", "broken")
    assert "held until" in out and "tms tables resume" in out and gone_path in out

    # ResumeTable releases it: the scheduler queues again
    stub.ResumeTable(tms_pb2.ResumeTableRequest(name="tables/broken"), timeout=10)
    assert not stub.ListHeldActions(tms_pb2.ListHeldActionsRequest(parent="tables/-"),
                                    timeout=10).holds
    assert not _explain(stub, "broken").HasField("hold")
    wait_for(lambda: len(_compactions(stub, "broken")) >= 4,
             "the scheduler to queue a compaction after the resume", 120)
