"""A queue served by the warm engine, through the whole service: tms-executor reads its engine
configuration, runs the queue's operations one after another in one long-lived Spark driver,
and other queues keep cold spark-submit."""

from __future__ import annotations

import pytest

from tests.helpers import iceberg_catalog, stub_for, wait_for
from tms.local import iceberg_data
from tms.v1 import tms_pb2

pytestmark = pytest.mark.e2e

CATALOG = "tms_warm"
ENGINE_CONFIG = """\
engine = "spark-submit"
[queues.small]
engine = "warm-spark"
"""


def test_warm_queue_runs_in_one_driver(make_stack, tmp_path) -> None:
    config = tmp_path / "engines.toml"
    config.write_text(ENGINE_CONFIG)
    stack = make_stack(executor_args=["--engine-config", str(config), "--poll-interval-s",
                                      "0.2", "--lease-s", "30", "--heartbeat-s", "2"])
    stack.start_api()
    catalog, _ = iceberg_catalog(stack, CATALOG)
    stub = stub_for(stack)
    tables = {"warm_a": "small", "warm_b": "small", "cold_c": "default"}
    before = {}
    for name, queue in tables.items():
        t = iceberg_data.create_table(catalog, "wq", name)
        iceberg_data.append_batches(t, 5, rows_per_commit=9)
        before[name] = iceberg_data.stats(t)
        stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=name, table=tms_pb2.Table(
            format="iceberg", catalog=CATALOG, namespace="wq", table_name=name, queue=queue)),
            timeout=10)
    ops = {name: stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
        parent=f"tables/{name}", action="compaction"), timeout=10) for name in tables}
    stack.start_executor(0)

    def all_done() -> dict[str, tms_pb2.Operation] | None:
        got = {n: stub.GetOperation(tms_pb2.GetOperationRequest(name=o.name), timeout=10)
               for n, o in ops.items()}
        bad = [g for g in got.values() if g.state in (tms_pb2.Operation.FAILED,
                                                      tms_pb2.Operation.CANCELLED)]
        assert not bad, f"an operation ended badly: {bad[0].error}"
        return got if all(g.state == tms_pb2.Operation.SUCCEEDED for g in got.values()) else None

    done = wait_for(all_done, "all three compactions", 300)
    handles = {n: d.attempts[-1].engine_handle for n, d in done.items()}
    assert all(handles.values())
    assert handles["warm_a"] == handles["warm_b"]  # one long-lived driver for the queue
    assert handles["cold_c"] != handles["warm_a"]  # its own spark-submit
    for name in tables:
        after = iceberg_data.stats(catalog.load_table(f"wq.{name}"))  # type: ignore[attr-defined]
        assert after["data_files"] == 1 and after["rows_scanned"] == before[name]["rows_scanned"]
