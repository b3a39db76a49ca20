"""TMS on a standalone Spark cluster (a master and two 1-core workers on 127.0.0.1, started
by ``tests/servers/spark_cluster.py``): the real API, scheduler and executor processes, the
executor's spark-submit in client deploy mode against ``spark://`` (Spark runs Python jobs on
standalone clusters in client mode only: the driver runs in the executor, the work on the
workers).

- A compaction runs on the cluster: its handle is the cluster's ``app-...`` id (not
  ``local-``), the master lists the application FINISHED, and the result came back through
  the API (ReportJobResult), not a file.
- A cancel reaches the driver: another application holds every core, so TMS's application
  is registered and waiting; the cancel ends the driver (the master sees the application end)
  and no driver process is left.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import iceberg_catalog, stub_for, wait_for
from tests.servers.spark_cluster import SparkCluster, spark_cluster
from tms.local import iceberg_data
from tms.spark.settings import SparkSettings
from tms.storage.postgres import PostgresStore
from tms.v1 import tms_pb2

pytestmark = pytest.mark.e2e

CATALOG = "tms_cluster"
COMMITS = 6
EXECUTOR_MEMORY = "512m"  # two fit on a 1g worker
LOOPBACK_CONF = "spark.driver.host=127.0.0.1,spark.driver.bindAddress=127.0.0.1"
FAST_LEASE = ["--lease-s", "3", "--heartbeat-s", "1", "--poll-interval-s", "0.3"]
ENDED_APP_STATES = ("FINISHED", "KILLED")
BLOCKER = """\
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("tms-test-blocker").getOrCreate()
print("BLOCKER", spark.sparkContext.applicationId, flush=True)
sys.stdin.read()  # holds its executors until stdin closes
spark.stop()
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    with spark_cluster(tmp_path_factory.mktemp("spark-cluster")) as c:
        print(f"standalone cluster ready in {c.started_s:.1f} s")
        yield c


@pytest.fixture
def on_cluster(cluster: SparkCluster, monkeypatch: pytest.MonkeyPatch) -> SparkCluster:
    """The executor processes (started later) run Spark on ``cluster`` in client mode."""
    monkeypatch.setenv("TMS_SPARK_MASTER", cluster.master_url)
    monkeypatch.setenv("TMS_SPARK_DEPLOY_MODE", "client")
    monkeypatch.setenv("TMS_SPARK_EXECUTOR_MEMORY", EXECUTOR_MEMORY)
    monkeypatch.setenv("TMS_SPARK_CONF", LOOPBACK_CONF)
    return cluster


def _op(stub, table_id: str) -> tms_pb2.Operation | None:
    ops = stub.ListOperations(tms_pb2.ListOperationsRequest(parent=f"tables/{table_id}"),
                              timeout=10).operations
    assert len(ops) <= 1
    return ops[0] if ops else None


def _register(stub, catalog, table_id: str, commits: int) -> tuple[object, list[int]]:
    table = iceberg_data.create_table(catalog, "cl", table_id)
    snaps = iceberg_data.append_batches(table, commits, rows_per_commit=9)
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=tms_pb2.Table(
        format="iceberg", catalog=CATALOG, namespace="cl", table_name=table_id)), timeout=10)
    return table, snaps


def _driver_pids(marker: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    return out.split()


def test_compaction_runs_on_the_cluster_and_reports_through_the_api(make_stack,
                                                                     on_cluster) -> None:
    started = time.monotonic()
    stack = make_stack()
    stack.start_api()
    catalog, _ = iceberg_catalog(stack, CATALOG)
    stub = stub_for(stack)
    table, _ = _register(stub, catalog, "events", COMMITS)
    before = iceberg_data.stats(table)
    stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
        parent="tables/events", action="compaction", reason="on a cluster"), timeout=10)
    stack.start_executor()
    done = wait_for(lambda: (o := _op(stub, "events")) and o.state in (
        tms_pb2.Operation.SUCCEEDED, tms_pb2.Operation.FAILED) and o, "the compaction to end")
    assert done.state == tms_pb2.Operation.SUCCEEDED, (done.error, done.log_tail[-3000:])
    assert done.engine_handle.startswith("app-"), done.engine_handle
    app = on_cluster.app(done.engine_handle)
    assert app is not None and app["state"] == "FINISHED", app
    assert done.result["rewritten_data_files_count"] == COMMITS
    after = iceberg_data.stats(table)
    assert after["data_files"] == 1 and after["rows_scanned"] == before["rows_scanned"]
    store = PostgresStore(stack.database_url)
    try:
        op = store.operation_get("events", int(done.name.rsplit("/", 1)[1]))
        assert op is not None
        reported = store.attempt_reported_result(op)  # the job's own report, via the API
    finally:
        store.close()
    assert reported is not None and reported["ok"] is True
    assert reported["spark_app_id"] == done.engine_handle
    assert reported["result"]["rewritten_data_files_count"] == COMMITS
    print(f"e2e compaction on the cluster: {time.monotonic() - started:.1f} s")


def _blocker(cluster: SparkCluster, root: Path) -> subprocess.Popen[str]:
    """An application holding every core of the cluster until its stdin closes."""
    script = root / "blocker.py"
    script.write_text(BLOCKER)
    settings = SparkSettings(master=cluster.master_url, executor_memory=EXECUTOR_MEMORY,
                             cores_max=2, conf={"spark.driver.host": "127.0.0.1",
                                                "spark.driver.bindAddress": "127.0.0.1"})
    return subprocess.Popen(settings.submit_argv(str(script), []), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=(root / "blocker.log").open("w"),
                            env=settings.submit_env(dict(__import__("os").environ)), text=True,
                            start_new_session=True)


def test_cancel_reaches_the_driver_on_the_cluster(make_stack, on_cluster,
                                                  tmp_path: Path) -> None:
    blocker = _blocker(on_cluster, tmp_path)
    try:
        assert blocker.stdout is not None
        line = blocker.stdout.readline()
        assert line.startswith("BLOCKER app-"), line
        wait_for(lambda: on_cluster.state()["coresused"] == 2, "the blocker to hold the cores")
        stack = make_stack(executor_args=FAST_LEASE)
        stack.start_api()
        catalog, _ = iceberg_catalog(stack, CATALOG)
        stub = stub_for(stack)
        _register(stub, catalog, "stuck", 3)
        op = stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
            parent="tables/stuck", action="compaction", reason="cancel on a cluster"),
            timeout=10)
        stack.start_executor()
        running = wait_for(lambda: (o := _op(stub, "stuck")) and o.engine_handle and o,
                           "the driver to register with the master", step_s=0.2)
        app_id = running.engine_handle
        assert app_id.startswith("app-") and on_cluster.app(app_id)["state"] == "WAITING"
        marker = f"op-{op.name.rsplit('/', 1)[1]}-attempt-1"
        assert _driver_pids(marker)
        stub.CancelOperation(tms_pb2.CancelOperationRequest(name=op.name), timeout=10)
        done = wait_for(lambda: (o := _op(stub, "stuck")) and o.state ==
                        tms_pb2.Operation.CANCELLED and o, "the operation to end CANCELLED")
        assert done.error == "cancelled by request"
        assert not _driver_pids(marker)  # the driver's process group is gone
        ended = wait_for(lambda: (a := on_cluster.app(app_id)) and a["state"] in
                         ENDED_APP_STATES and a, "the master to see the application end")
        assert ended["id"] == app_id
    finally:
        if blocker.stdin:
            blocker.stdin.close()
        try:
            blocker.wait(60)
        except subprocess.TimeoutExpired:
            blocker.kill()
            blocker.wait()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-s"]))
