"""ZooKeeper stopped and started again (same port, same data directory) while two schedulers
run and writers keep notifying.

Without a ZooKeeper session a scheduler must decide nothing: no decision is recorded and no
operation queued while ZooKeeper is down (after a short grace for a pass already under way).
Tables that come to need compaction during the outage are queued once ZooKeeper is back, each
exactly once; the API, which does not use ZooKeeper, acknowledges throughout.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from bench.faults.invariants import check_acks, check_operations
from bench.faults.load import Ledger, Notifier, SteadyWriters
from bench.faults.scenario import (
    TIDY_FILES,
    all_decided,
    constant_tables,
    decisions_after,
    has_operation,
    make_needy,
    operations_created_between,
    register_constant,
    seconds_until,
)
from tests.faults.config import (
    DECIDE_TIMEOUT_S,
    DRAIN_TIMEOUT_S,
    LOAD_BEFORE_FAULT_S,
    ROUNDS,
    STEADY_RATE_PER_S,
    STEADY_THREADS,
    ZK_DOWN_S,
    ZK_RECOVERY_BOUND_S,
    ZK_SESSION_TIMEOUT_S,
)
from tests.helpers import stub_for, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

SCHEDULERS = 2
FLIPS = 5  # tables that come to need compaction while ZooKeeper is down
# a pass that began before ZooKeeper went away may still write its decisions this long after
DECISION_GRACE_S = 1.0
OUTAGE_POLL_S = 0.2
STARTUP_TIMEOUT_S = 60.0
ZK_STATE_RE = re.compile(r'"state": "([A-Z]+)"')


def _scheduler_args() -> list[str]:
    return ["--poll-interval-s", "0.2", "--shard-settle-s", "0.5",
            "--zk-session-timeout-s", str(ZK_SESSION_TIMEOUT_S)]


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_zookeeper_restart_while_scheduling(make_stack, constant_plugin: None, fault_report,
                                            round_: int) -> None:
    stack = make_stack(scheduler_args=_scheduler_args())
    stack.start_api()
    schedulers = [stack.start_scheduler(i) for i in range(SCHEDULERS)]
    stub = stub_for(stack)
    names, needy = constant_tables(stub, stack.database_url, "zk")
    flips = [f"zk-flip-{i}" for i in range(FLIPS)]
    for f in flips:
        register_constant(stub, stack.database_url, f, TIDY_FILES)
    dsn = stack.database_url
    ledger = Ledger()
    notifier = Notifier([stack.api_address], ledger)
    assert stack.zookeeper is not None
    with fault_report.fault(
            f"zookeeper_restart[{round_}]",
            f"ZooKeeper stopped for {ZK_DOWN_S:g} s (session timeout {ZK_SESSION_TIMEOUT_S:g} "
            f"s) and started again on its port and data directory while {SCHEDULERS} "
            f"schedulers (sharing the tables' shards) decide and {STEADY_THREADS} writers "
            f"notify; {FLIPS} "
            "tables come to need compaction during the outage.") as rec:
        wait_for(lambda: all('"scheduler started"' in s.log_path.read_text()
                             for s in schedulers), "both schedulers to start",
                 STARTUP_TIMEOUT_S)
        writers = SteadyWriters(notifier, names, f"zk{round_}", STEADY_THREADS,
                                STEADY_RATE_PER_S).start()
        wait_for(lambda: all(has_operation(dsn, t) for t in needy),
                 "the needy tables' first operations", DECIDE_TIMEOUT_S)
        time.sleep(LOAD_BEFORE_FAULT_S)
        stopped_wall = datetime.now(UTC)
        stack.zookeeper.stop()
        down = time.monotonic()
        for f in flips:  # needs compaction now, and says so
            make_needy(stub, f)
            notifier.notify(f, "during-outage")
        grace_end = stopped_wall + timedelta(seconds=DECISION_GRACE_S)
        decided_during = 0
        while time.monotonic() - down < ZK_DOWN_S:
            if datetime.now(UTC) > grace_end:  # the table keeps only each last decision
                decided_during = max(decided_during, decisions_after(dsn, grace_end))
            time.sleep(OUTAGE_POLL_S)
        acks_during = len([t for t in list(ledger.ack_times) if t >= down])
        stack.zookeeper.start()
        back = time.monotonic()
        back_wall = datetime.now(UTC)
        rec.counts.update(zk_down_s=round(back - down, 2), acks_during_outage=acks_during)
        rec.check("no decision recorded while ZooKeeper was down", decided_during == 0,
                  f"{decided_during} decisions after the {DECISION_GRACE_S:g} s grace")
        first_s = seconds_until(lambda: any(has_operation(dsn, f) for f in flips),
                                ZK_RECOVERY_BOUND_S * 2)
        all_s = seconds_until(lambda: all(has_operation(dsn, f) for f in flips),
                              ZK_RECOVERY_BOUND_S * 2)
        rec.recovery(first_s if first_s is not None else float("inf"), ZK_RECOVERY_BOUND_S,
                     "ZooKeeper started -> first table made needy in the outage queued")
        rec.counts["all_flips_queued_after_s"] = None if all_s is None else round(
            all_s + (first_s or 0.0), 2)
        rec.check("every table made needy in the outage was queued", all_s is not None)
        rec.check("the API acknowledged throughout (it does not need ZooKeeper)",
                  acks_during > 0, f"{acks_during} acknowledgements while ZooKeeper was down")
        rec.check("writers drained", writers.finish(DRAIN_TIMEOUT_S))
        rec.counts["longest_ack_gap_s"] = writers.longest_gap_s()
        wait_for(lambda: all_decided(dsn), "every commit mark to be decided", DECIDE_TIMEOUT_S)
        queued_during = operations_created_between(dsn, grace_end, back_wall)
        rec.check("no operation queued while ZooKeeper was down", queued_during == 0,
                  f"{queued_during} operations created in the outage")
        check_acks(rec, dsn, ledger)
        check_operations(rec, dsn, one_per_table=True, expect_tables=needy | set(flips))
        states: Counter[str] = Counter()
        for s in schedulers:
            states.update(ZK_STATE_RE.findall(s.log_path.read_text()))
        rec.counts["scheduler_session_states"] = dict(states)
        rec.check("the schedulers saw their session suspended", states["SUSPENDED"] > 0,
                  str(dict(states)))
        dead = [s.name for s in stack.services if not s.alive]
        rec.check("every TMS process survived", not dead, f"dead: {dead}" if dead else "")
    notifier.close()
    rec.assert_ok()
