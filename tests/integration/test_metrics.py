"""/metrics of running processes, parsed as Prometheus text format, with the series operators
alert on: API requests and latency, commits, decisions, queue depth and age, overdue tables,
ZooKeeper session and leadership, attempts and final states."""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import constant_catalog, stub_for, wait_for
from tms.local.ports import free_port
from tms.v1 import tms_pb2

pytestmark = pytest.mark.integration
PLUGINS = Path(__file__).resolve().parent.parent / "plugins"


def scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Samples by name from one /metrics endpoint (a parse error fails the test)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        text = r.read().decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def try_scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Like scrape, but empty while the process is still starting its endpoint."""
    try:
        return scrape(port)
    except OSError:
        return {}


def value(samples: dict[str, list[tuple[dict[str, str], float]]], name: str,
          **labels: str) -> float:
    return sum(v for lab, v in samples.get(name, [])
               if all(lab.get(k) == want for k, want in labels.items()))


def test_metrics_of_every_process(make_stack, monkeypatch: pytest.MonkeyPatch) -> None:
    old = os.environ.get("PYTHONPATH")  # the constant test plugin, in every process
    monkeypatch.setenv("PYTHONPATH", f"{PLUGINS}{os.pathsep}{old}" if old else str(PLUGINS))
    ports = {name: free_port() for name in ("api", "scheduler", "executor")}

    def flag(name: str) -> list[str]:
        return ["--metrics-listen", f"127.0.0.1:{ports[name]}"]

    stack = make_stack(api_args=flag("api"),
                       scheduler_args=[*flag("scheduler"), "--shard-settle-s", "0.5",
                                       "--poll-interval-s", "0.2"],
                       executor_args=[*flag("executor"), "--poll-interval-s", "0.2"])
    stack.start_api()
    stack.start_scheduler(0)
    stub = stub_for(stack)
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id="m1", table=tms_pb2.Table(
        format="constant", catalog=constant_catalog(stack.database_url), table_name="m1",
        policy={"constant.files": "20", "execution.max-attempts": "1"})), timeout=10)
    stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table="tables/m1", commit_id="1"), timeout=10)
    stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table="tables/m1", commit_id="1"), timeout=10)
    with pytest.raises(grpc.RpcError):
        stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table="tables/Bad!", commit_id="c"),
                          timeout=10)

    queued = wait_for(lambda: (s := try_scrape(ports["scheduler"])).get("tms_queue_depth") and s,
                      "the leader to report the queued operation")
    assert value(queued, "tms_queue_depth", queue="default", action="compaction") == 1
    assert value(queued, "tms_queue_oldest_age_seconds", queue="default",
                 action="compaction") >= 0
    assert value(queued, "tms_scheduler_decisions_total", action="compaction",
                 outcome="queued") == 1
    assert value(queued, "tms_zookeeper_session_up") == 1
    assert value(queued, "tms_scheduler_leader") == 1
    assert value(queued, "tms_scheduler_shards_held") > 0
    assert "tms_tables_overdue" in queued and "tms_lease_expiries_total" in queued

    api = scrape(ports["api"])
    assert value(api, "tms_api_requests_total", method="NotifyCommit", code="OK") == 2
    assert value(api, "tms_api_requests_total", method="NotifyCommit",
                 code="INVALID_ARGUMENT") == 1
    assert value(api, "tms_api_request_duration_seconds_count", method="NotifyCommit") == 3
    assert "tms_api_request_duration_seconds_bucket" in api
    assert value(api, "tms_commits_received_total", result="new") == 1
    assert value(api, "tms_commits_received_total", result="duplicate") == 1

    stack.start_executor(0)  # the constant plugin's job does not exist: the attempt fails
    done = wait_for(lambda: (s := try_scrape(ports["executor"])).get(
        "tms_operations_finished_total") and s, "the executor to finish the operation", 120)
    assert value(done, "tms_attempts_started_total", action="compaction", queue="default") == 1
    assert value(done, "tms_operations_finished_total", action="compaction",
                 state="FAILED") == 1
    assert value(done, "tms_attempt_duration_seconds_count", action="compaction",
                 outcome="failed") == 1
