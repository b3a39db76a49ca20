"""Storage faults under load: PostgreSQL restarted on its own port and data directory while
writers keep notifying, and a write that commits while its caller sees a failure.

Writers retry UNAVAILABLE and DEADLINE_EXCEEDED only; afterwards every acknowledged commit must
be in PostgreSQL exactly once, the schedulers must have decided every commit mark with exactly
one operation per table that needs one, and the service must work again within a stated bound.
"""

from __future__ import annotations

import time

import grpc
import pytest

from bench.faults.invariants import check_acks, check_operations
from bench.faults.load import Ledger, Notifier, SteadyWriters, probe_until_ok
from bench.faults.scenario import (
    TIDY_FILES,
    all_decided,
    constant_tables,
    has_operation,
    make_needy,
    register_constant,
    seconds_until,
)
from tests.faults.config import (
    DECIDE_TIMEOUT_S,
    DRAIN_TIMEOUT_S,
    LOAD_BEFORE_FAULT_S,
    LOST_REPLIES,
    LOST_REPLY_HOLD_S,
    LOST_REPLY_RECOVERY_BOUND_S,
    PG_DOWN_S,
    PG_RECOVERY_BOUND_S,
    ROUNDS,
    STEADY_RATE_PER_S,
    STEADY_THREADS,
)
from tests.faults.conftest import MODE_CUT, MODE_HOLD
from tests.helpers import stub_for, wait_for
from tms.v1 import tms_pb2_grpc

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

FAST_SCHEDULER = ["--poll-interval-s", "0.2", "--shard-settle-s", "0.5"]
# an immediate stop is a crash (WAL recovery on start), a fast stop a clean shutdown
PG_STOP_MODES = ("immediate", "fast")
SCHEDULERS = 2
AFTER_RECOVERY_LOAD_S = 1.0  # the load goes on this long after recovery, on the healed service
PROBE_TIMEOUT_FACTOR = 2  # probes run up to twice the bound, so an overrun is measured, not cut


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_postgres_restart_under_load(make_stack, constant_plugin: None, fault_report,
                                     round_: int) -> None:
    stop_mode = PG_STOP_MODES[round_ % len(PG_STOP_MODES)]
    stack = make_stack(scheduler_args=FAST_SCHEDULER)
    stack.start_api()
    for i in range(SCHEDULERS):
        stack.start_scheduler(i)
    stub = stub_for(stack)
    names, needy = constant_tables(stub, stack.database_url, "pg")
    flip = "flip-after-restart"
    register_constant(stub, stack.database_url, flip, TIDY_FILES)
    ledger = Ledger()
    notifier = Notifier([stack.api_address], ledger)
    assert stack.postgres is not None
    with fault_report.fault(
            f"postgres_restart[{round_}]",
            f"PostgreSQL stopped ({stop_mode}) for {PG_DOWN_S:g} s and started again on the "
            f"same port and data directory while {STEADY_THREADS} writers notify commits over "
            f"{len(names)} tables (retrying UNAVAILABLE / DEADLINE_EXCEEDED) and "
            f"{SCHEDULERS} schedulers decide.") as rec:
        writers = SteadyWriters(notifier, names, f"pg{round_}", STEADY_THREADS,
                                STEADY_RATE_PER_S).start()
        time.sleep(LOAD_BEFORE_FAULT_S)
        acks_before = len(ledger.acked)
        down = time.monotonic()
        stack.postgres.stop(stop_mode)
        time.sleep(PG_DOWN_S)
        stack.postgres.start()
        back = time.monotonic()
        rec.counts.update(pg_stop_mode=stop_mode, pg_down_s=round(back - down, 2),
                          acks_before_fault=acks_before)
        probe_until_ok(notifier, names[0], f"pg{round_}-probe",
                       PG_RECOVERY_BOUND_S * PROBE_TIMEOUT_FACTOR)
        first_ack = ledger.first_ack_after(back)
        rec.recovery((first_ack - back) if first_ack else float("inf"), PG_RECOVERY_BOUND_S,
                     "PostgreSQL started -> first acknowledged NotifyCommit")
        # the schedulers work again too: a table that needs compaction now gets it
        make_needy(stub, flip)
        notifier.notify(flip, "after-restart")
        sched_s = seconds_until(lambda: has_operation(stack.database_url, flip),
                                PG_RECOVERY_BOUND_S * PROBE_TIMEOUT_FACTOR)
        rec.counts["scheduler_queued_after_s"] = None if sched_s is None else round(sched_s, 2)
        rec.check(f"schedulers queue again within {PG_RECOVERY_BOUND_S:g} s",
                  sched_s is not None and sched_s <= PG_RECOVERY_BOUND_S,
                  "table made needy after recovery queued in "
                  + ("never" if sched_s is None else f"{sched_s:.2f} s"))
        time.sleep(AFTER_RECOVERY_LOAD_S)
        rec.check("writers drained", writers.finish(DRAIN_TIMEOUT_S))
        rec.counts["longest_ack_gap_s"] = writers.longest_gap_s()
        wait_for(lambda: all_decided(stack.database_url), "every commit mark to be decided",
                 DECIDE_TIMEOUT_S)
        check_acks(rec, stack.database_url, ledger)
        check_operations(rec, stack.database_url, one_per_table=True,
                         expect_tables=needy | {flip})
        dead = [s.name for s in stack.services if not s.alive]
        rec.check("every TMS process survived the outage", not dead,
                  f"dead: {dead}" if dead else "api and schedulers alive")
    notifier.close()
    rec.assert_ok()


@pytest.mark.parametrize("round_", range(ROUNDS))
@pytest.mark.parametrize("mode", [MODE_CUT, MODE_HOLD])
def test_write_commits_but_reply_is_lost(make_stack, constant_plugin: None, fault_report,
                                         lost_reply_proxy, api_node, mode: str,
                                         round_: int) -> None:
    stack = make_stack()
    assert stack.postgres is not None
    proxy = lost_reply_proxy(stack.postgres.port)
    node = api_node(stack, "api-behind-proxy", proxy.dsn("tms"))
    stub = tms_pb2_grpc.TableManagementServiceStub(grpc.insecure_channel(node.address))
    names, _ = constant_tables(stub, stack.database_url, "lr")
    ledger = Ledger()
    notifier = Notifier([node.address], ledger)
    what = ("closes the connection at once (the API sees it lost: UNAVAILABLE)"
            if mode == MODE_CUT else
            f"leaves the connection silent for {LOST_REPLY_HOLD_S:g} s, then closes it (the "
            "writer's call times out first: DEADLINE_EXCEEDED)")
    with fault_report.fault(
            f"lost_reply_{mode}[{round_}]",
            f"A TCP proxy between tms-api and PostgreSQL forwards {LOST_REPLIES} commit-intake "
            f"statements, waits for PostgreSQL to commit them, swallows the reply and {what}. "
            f"{STEADY_THREADS} writers retry; NotifyCommit is idempotent on (table, commit id)."
    ) as rec:
        writers = SteadyWriters(notifier, names, f"lr{round_}", STEADY_THREADS,
                                STEADY_RATE_PER_S).start()
        time.sleep(LOAD_BEFORE_FAULT_S)
        proxy.arm(LOST_REPLIES, mode, LOST_REPLY_HOLD_S if mode == MODE_HOLD else 0.0)
        wait_for(lambda: len(proxy.released_at) >= LOST_REPLIES,
                 f"{LOST_REPLIES} replies to be swallowed", DRAIN_TIMEOUT_S)
        released = max(proxy.released_at)
        probe_until_ok(notifier, names[0], f"lr{round_}-probe",
                       LOST_REPLY_RECOVERY_BOUND_S * PROBE_TIMEOUT_FACTOR)
        first_ack = ledger.first_ack_after(released)
        rec.recovery((first_ack - released) if first_ack else float("inf"),
                     LOST_REPLY_RECOVERY_BOUND_S,
                     "last swallowed connection closed -> first acknowledged NotifyCommit")
        time.sleep(AFTER_RECOVERY_LOAD_S)
        rec.check("writers drained", writers.finish(DRAIN_TIMEOUT_S))
        rec.counts["longest_ack_gap_s"] = writers.longest_gap_s()
        rec.counts.update(statements_matched=proxy.matched, replies_swallowed=proxy.doomed,
                          swallowed_after_commit=proxy.swallowed_committed,
                          swallowed_after_error=proxy.swallowed_failed,
                          failed_replies_forwarded=proxy.passed_failed)
        rec.check("the fault happened: PostgreSQL committed each statement whose reply was "
                  "lost", proxy.swallowed_committed == LOST_REPLIES,
                  f"{proxy.swallowed_committed} committed, {proxy.swallowed_failed} failed")
        check_acks(rec, stack.database_url, ledger)
        dup = ledger.duplicates_after_failure
        rec.check("the writers' retries of those commits were answered 'duplicate'",
                  dup >= proxy.swallowed_committed,
                  f"{dup} commits acknowledged as duplicate after a failed attempt")
        rec.check("tms-api survived", node.proc is not None and node.proc.alive)
    notifier.close()
    rec.assert_ok()
