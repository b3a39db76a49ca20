"""Sizes and bounds of the fault suite, short (CI, part of ``pytest tests``) or long
(``TMS_FAULTS_LONG=1``, run by ``scripts/faults``).

The short version keeps every fault but fewer notifications and one round each, so the whole
suite stays within a few minutes on a 2-core machine; the long version is the issue's full
load (10,000 notifications per burst) and repeats the timing-dependent faults.
"""

from __future__ import annotations

import os

from bench.faults.scenario import CONSTANT_TABLES, NEEDY_EVERY  # noqa: F401 (re-exported)

LONG = os.environ.get("TMS_FAULTS_LONG", "") not in ("", "0", "false", "no")
VARIANT = "long" if LONG else "short"

# --- load ------------------------------------------------------------------------------------
API_KILL_BURST = 10_000 if LONG else 2_000  # commits in the burst an API node dies in
API_KILL_AT_FRACTION = 0.3  # the node dies when this share of the burst is acknowledged
BURST_THREADS = 12
BURST_BATCH = 10  # every other writer sends NotifyCommits of this many commits
STEADY_THREADS = 4
STEADY_RATE_PER_S = 0.0 if LONG else 300.0  # writers' total rate during PG / ZK faults; 0: max
# CONSTANT_TABLES, NEEDY_EVERY: how many "constant" plugin tables the writers spread commits
# over, and which need compaction (defined with the scenario that creates them)

# --- rounds ----------------------------------------------------------------------------------
ROUNDS = 3 if LONG else 1  # PG restart, ZooKeeper restart, lost replies, API kill
EXECUTOR_KILL_ROUNDS = 2 if LONG else 1  # real Spark: the e2e tier already repeats it 5 times

# --- fault durations -------------------------------------------------------------------------
PG_DOWN_S = 4.0  # PostgreSQL stays stopped this long (writers keep retrying meanwhile)
ZK_DOWN_S = 6.0  # ZooKeeper stays stopped this long: longer than the session timeout below
ZK_SESSION_TIMEOUT_S = 4.0
LOAD_BEFORE_FAULT_S = 2.0  # load runs this long before the fault, so it hits a busy service
LOST_REPLIES = 3 if LONG else 2  # statements per round whose committed reply is swallowed
LOST_REPLY_HOLD_S = 4.0  # "hold" mode: the swallowed reply's connection hangs this long

# --- recovery bounds (from the fault's end until the service works again) --------------------
PG_RECOVERY_BOUND_S = 20.0  # first acknowledged NotifyCommit after PostgreSQL is back
API_FAILOVER_BOUND_S = 5.0  # first acknowledgement after an API node died (the other serves)
API_RESTART_BOUND_S = 30.0  # the restarted node serves again (SERVING + an acknowledged call)
ZK_RECOVERY_BOUND_S = 30.0  # first operation queued after ZooKeeper is back
LOST_REPLY_RECOVERY_BOUND_S = 10.0  # first acknowledgement after the proxy let go
EXECUTOR_REQUEUE_BOUND_S = 30.0  # killed attempt's operation claimed again (lease 3 s + reap)
EXECUTOR_RECOVERY_BOUND_S = 240.0  # the operation completed by the second executor

# --- bounded waits ---------------------------------------------------------------------------
DRAIN_TIMEOUT_S = 120.0  # writers to finish what they are retrying
SETTLE_TIMEOUT_S = 60.0  # expired leases to be reaped before the checks
DECIDE_TIMEOUT_S = 90.0  # every commit mark to be decided

# --- the long PostgreSQL outage (tests/faults/test_pg_outage.py) -----------------------------
PG_OUTAGE_S = 20.0  # PostgreSQL stays stopped this long while the API keeps getting calls
PG_OUTAGE_COMMITS = 1000  # commits a CommitNotifier sends across the outage
PG_OUTAGE_TABLES = 10  # "constant" tables those commits are spread over
PG_BACK_SERVING_BOUND_S = 2.0  # PostgreSQL accepts connections -> the API serves again
