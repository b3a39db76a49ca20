"""CommitHook called by a metaserver, and the receiver as the process a deployment runs."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.client.events_support import post, snapshot, update_table
from tests.client.support import commit_rows, iceberg_table
from tests.helpers import wait_for
from tests.integration.conftest import Api
from tms.local.ports import free_port
from tms_client import CommitHook, CommitNotifier, EventError, EventMapping, TmsClient

pytestmark = pytest.mark.integration

FLUSH_TIMEOUT_S = 15.0
PROCESS_READY_TIMEOUT_S = 30.0
PROCESS_STOP_TIMEOUT_S = 10.0


def test_hook_on_a_notifier_never_raises(api: Api, db_dsn: str) -> None:
    client = TmsClient(api.address)
    client.register_table("wh1.sales.orders", iceberg_table(api, "sales", "orders"))
    notifier = CommitNotifier(client)
    hook = CommitHook(notifier, EventMapping(table_id_template="{warehouse}.{namespace}.{name}"))
    # a metaserver's own event dict, and a catalog's CloudEvent (warehouse from its attribute)
    assert hook({"namespace": "sales", "name": "orders", "warehouse": "wh1",
                 "commit_id": "10", "commit_time": "2026-11-01T10:00:00Z",
                 "files_added": 3, "operation": "append"}) == 1
    event = update_table(["sales"], "orders", [snapshot(11), snapshot(12)], "e")
    event["warehouse-id"] = "WH1"
    assert hook(event) == 2
    assert hook({"name": "orders", "commit_id": "x"}) == 0  # no warehouse: logged, not raised
    assert hook({"table_id": "wh1.sales.orders"}) == 0  # no commit id
    assert notifier.flush(FLUSH_TIMEOUT_S)
    rows = commit_rows(db_dsn, "wh1.sales.orders")
    assert [r[0] for r in rows] == ["10", "11", "12"]
    assert rows[0][2:] == (3, 0, "append")
    strict = CommitHook(notifier, raise_errors=True)
    with pytest.raises(EventError) as info:
        strict({"table_id": "wh1.sales.orders"})
    assert info.value.field == "commit_id"
    notifier.close(FLUSH_TIMEOUT_S)


@pytest.fixture
def receiver_process(api: Api, tmp_path: Path) -> Iterator[int]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("TMS_TOKEN", "TMS_RECEIVER_TOKEN")}
    log = (tmp_path / "receiver.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tms_client.cloudevents_receiver", "--listen",
         f"127.0.0.1:{port}", "--api", api.address], stdout=log, stderr=subprocess.STDOUT,
        env=env)

    def healthy() -> bool:
        assert proc.poll() is None, (tmp_path / "receiver.log").read_text()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/healthz")
            return conn.getresponse().status == 200
        except OSError:
            return False

    try:
        wait_for(healthy, "the receiver to listen", PROCESS_READY_TIMEOUT_S)
        yield port
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(PROCESS_STOP_TIMEOUT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def test_receiver_process(api: Api, receiver_process: int) -> None:
    client = TmsClient(api.address)
    client.register_table("lake.orders", iceberg_table(api, "lake", "orders"))
    start = time.monotonic()
    status, body = post(receiver_process,
                        [update_table(["lake"], "orders", [snapshot(1), snapshot(2)], "p")],
                        "application/cloudevents-batch+json")
    assert (status, body["accepted"]) == (202, 2)
    assert time.monotonic() - start < PROCESS_STOP_TIMEOUT_S
    status, body = post(receiver_process, {"specversion": "1.0"},
                        "application/cloudevents+json")
    assert status == 400 and body["field"] == "id"
    assert client.get_table("lake.orders").last_commit_id == "2"
