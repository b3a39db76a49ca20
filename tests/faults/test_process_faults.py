"""Process faults: an API node SIGKILLed in the middle of a burst of notifications, and an
executor SIGKILLed in the middle of a real Iceberg compaction.

An API node keeps no state, so its death may cost only latency: the writers' in-flight calls
fail, go to the other node, and every acknowledged commit is stored once. An executor's death
costs its lease: the reaper gives the operation back, another executor completes it, the two
attempts never overlap and the table reads back whole.
"""

from __future__ import annotations

import signal
import subprocess
import time

import grpc
import pytest

from bench.faults.invariants import check_acks, check_iceberg_rows, check_operations
from bench.faults.load import Burst, Ledger, Notifier, probe_until_ok
from bench.faults.scenario import constant_tables, seconds_until
from tests.faults.config import (
    API_FAILOVER_BOUND_S,
    API_KILL_AT_FRACTION,
    API_KILL_BURST,
    API_RESTART_BOUND_S,
    BURST_BATCH,
    BURST_THREADS,
    EXECUTOR_KILL_ROUNDS,
    EXECUTOR_RECOVERY_BOUND_S,
    EXECUTOR_REQUEUE_BOUND_S,
    ROUNDS,
    SETTLE_TIMEOUT_S,
)
from tests.helpers import iceberg_catalog, stub_for, wait_for
from tms.local import iceberg_data
from tms.v1 import tms_pb2, tms_pb2_grpc

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

KILL_POLL_S = 0.01  # how closely the burst's progress is watched for the moment to kill
BURST_TIMEOUT_S = 300.0
ICEBERG_CATALOG = "tms_faults"
ICEBERG_COMMITS = 14  # > compaction.min-small-files (12): the scheduler queues a compaction
ICEBERG_ROWS_PER_COMMIT = 7
FAST_LEASE = ["--lease-s", "3", "--heartbeat-s", "1", "--poll-interval-s", "0.3"]
SPARK_START_TIMEOUT_S = 180.0
ORPHAN_EXIT_TIMEOUT_S = 30.0
OP = tms_pb2.Operation


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_api_node_killed_mid_burst(make_stack, constant_plugin: None, fault_report, api_node,
                                   round_: int) -> None:
    stack = make_stack()
    first = api_node(stack, "api-0")
    second = api_node(stack, "api-1")
    stub = tms_pb2_grpc.TableManagementServiceStub(grpc.insecure_channel(second.address))
    names, _ = constant_tables(stub, stack.database_url, "ak")
    ledger = Ledger()
    notifier = Notifier([first.address, second.address], ledger)
    burst = Burst(notifier, names, API_KILL_BURST, f"ak{round_}", BURST_THREADS, BURST_BATCH)
    kill_after = int(API_KILL_BURST * API_KILL_AT_FRACTION)
    with fault_report.fault(
            f"api_kill[{round_}]",
            f"Two tms-api nodes; {BURST_THREADS} writers send a burst of {API_KILL_BURST} "
            f"commits (NotifyCommit, and NotifyCommits of {BURST_BATCH} from every other "
            f"writer) to both; api-0 is SIGKILLed after {kill_after} acknowledgements and "
            "restarted on its port; writers retry UNAVAILABLE on the other node.") as rec:
        t0 = time.monotonic()
        threads = burst.run()
        wait_for(lambda: len(ledger.acked) >= kill_after, f"{kill_after} acknowledgements",
                 BURST_TIMEOUT_S, KILL_POLL_S)
        killed = time.monotonic()
        first.kill()
        rec.counts["acks_before_kill"] = len(ledger.acked)
        wait_for(lambda: ledger.first_ack_after(killed) or not any(t.is_alive() for t in threads),
                 "an acknowledgement after the kill", API_FAILOVER_BOUND_S * 4, KILL_POLL_S)
        after = ledger.first_ack_after(killed)
        rec.recovery((after - killed) if after else float("inf"), API_FAILOVER_BOUND_S,
                     "api-0 killed -> first acknowledgement (by api-1)")
        first.start()  # same port; serving again once its health says SERVING
        alone = Notifier([first.address], ledger)
        probe_s = probe_until_ok(alone, names[0], f"ak{round_}-restarted", API_RESTART_BOUND_S)
        alone.close()
        restart_s = time.monotonic() - killed
        rec.counts["restarted_node_serving_after_kill_s"] = round(restart_s, 2)
        rec.check(f"the restarted node serves within {API_RESTART_BOUND_S:g} s of the kill",
                  probe_s is not None and restart_s <= API_RESTART_BOUND_S,
                  f"{restart_s:.2f} s")
        for t in threads:
            t.join(max(0.0, BURST_TIMEOUT_S - (time.monotonic() - t0)))
        rec.check("the burst ended", not any(t.is_alive() for t in threads),
                  f"{burst.progress} of {API_KILL_BURST} taken")
        burst_s = burst.finished_at - burst.started_at
        rec.counts.update(burst=API_KILL_BURST, burst_s=round(burst_s, 2),
                          burst_acks_per_s=round(API_KILL_BURST / burst_s),
                          longest_ack_gap_s=round(ledger.longest_gap_s(burst.started_at,
                                                                       burst.finished_at), 2))
        check_acks(rec, stack.database_url, ledger)
        rec.check("the burst's commits are all acknowledged",
                  all(burst.key(i) in ledger.acked for i in range(API_KILL_BURST)),
                  f"{sum(burst.key(i) in ledger.acked for i in range(API_KILL_BURST))} of "
                  f"{API_KILL_BURST}")
    notifier.close()
    rec.assert_ok()


def _spark_pids(marker: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    return out.split()


def _ops(stub: tms_pb2_grpc.TableManagementServiceStub, table: str) -> list[tms_pb2.Operation]:
    return list(stub.ListOperations(tms_pb2.ListOperationsRequest(parent=f"tables/{table}"),
                                    timeout=10).operations)


@pytest.mark.parametrize("round_", range(EXECUTOR_KILL_ROUNDS))
def test_executor_killed_mid_compaction(make_stack, fault_report, round_: int) -> None:
    stack = make_stack(executor_args=FAST_LEASE, scheduler_args=["--poll-interval-s", "0.2"])
    stack.start_api()
    stack.start_scheduler()
    catalog, _ = iceberg_catalog(stack, ICEBERG_CATALOG)
    table = iceberg_data.create_table(catalog, "faults", "killed")
    snaps = iceberg_data.append_batches(table, ICEBERG_COMMITS, ICEBERG_ROWS_PER_COMMIT)
    before = iceberg_data.stats(table)
    stub = stub_for(stack)
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id="killed", table=tms_pb2.Table(
        format="iceberg", catalog=ICEBERG_CATALOG, namespace="faults", table_name="killed")),
        timeout=10)
    ledger = Ledger()
    notifier = Notifier([stack.api_address], ledger)
    with fault_report.fault(
            f"executor_kill[{round_}]",
            f"An Iceberg table of {ICEBERG_COMMITS} small files ({before['rows_scanned']} "
            "rows); its compaction is queued; executor-0 (lease 3 s) is SIGKILLed while its "
            "spark-submit runs; executor-1 is started; the reaper must give the operation "
            "back and executor-1 complete it.") as rec:
        for s in snaps:
            notifier.notify("killed", str(s))
        first = stack.start_executor(0)
        running = wait_for(lambda: (o := _ops(stub, "killed")) and o[0].state == OP.RUNNING
                           and o[0], "executor-0 to start the compaction", SPARK_START_TIMEOUT_S,
                           0.05)
        marker = f"op-{running.name.rsplit('/', 1)[1]}-attempt-1"
        wait_for(lambda: _spark_pids(marker), "spark-submit to start", SPARK_START_TIMEOUT_S)
        assert first.proc is not None
        first.proc.send_signal(signal.SIGKILL)  # the executor alone: its driver must follow
        first.proc.wait()
        killed = time.monotonic()
        orphan_s = seconds_until(lambda: not _spark_pids(marker), ORPHAN_EXIT_TIMEOUT_S)
        rec.check("the killed executor's Spark driver died with it", orphan_s is not None,
                  f"gone after {orphan_s:.1f} s" if orphan_s is not None else "still running")
        stack.start_executor(1)
        requeue_s = seconds_until(
            lambda: (o := _ops(stub, "killed")) and o[0].attempt >= 2, EXECUTOR_REQUEUE_BOUND_S)
        rec.counts["claimed_again_after_kill_s"] = (None if requeue_s is None
                                                    else round(requeue_s, 2))
        rec.check(f"claimed again within {EXECUTOR_REQUEUE_BOUND_S:g} s", requeue_s is not None,
                  f"{requeue_s:.1f} s" if requeue_s is not None else "never")
        done_s = seconds_until(
            lambda: (o := _ops(stub, "killed")) and o[0].state in (OP.SUCCEEDED, OP.FAILED),
            EXECUTOR_RECOVERY_BOUND_S * 2)
        rec.recovery(time.monotonic() - killed if done_s is not None else float("inf"),
                     EXECUTOR_RECOVERY_BOUND_S, "executor-0 killed -> operation completed")
        ops = _ops(stub, "killed")
        op = stub.GetOperation(tms_pb2.GetOperationRequest(name=ops[0].name), timeout=10)
        rec.counts["attempts"] = [(a.attempt, a.executor_id, tms_pb2.Attempt.State.Name(a.state))
                                  for a in op.attempts]
        rec.check("completed by executor-1 on attempt 2",
                  op.state == OP.SUCCEEDED and op.attempt == 2 and op.executor_id == "executor-1",
                  f"{OP.State.Name(op.state)} attempt {op.attempt} by {op.executor_id}")
        check_acks(rec, stack.database_url, ledger)
        check_operations(rec, stack.database_url, all_final=True, settle_s=SETTLE_TIMEOUT_S)
        after = iceberg_data.stats(table)
        check_iceberg_rows(rec, {"faults.killed": before["rows_scanned"]},
                           {"faults.killed": after["rows_scanned"]})
        rec.counts["data_files"] = f"{before['data_files']} -> {after['data_files']}"
    notifier.close()
    rec.assert_ok()
