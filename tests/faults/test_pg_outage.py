"""A 20 s PostgreSQL outage on the real processes: the API serves again as soon as PostgreSQL
accepts connections, and a CommitNotifier that sends commits across the outage drops none.

While PostgreSQL is stopped a prober keeps calling the API (one attempt per call) and a writer
keeps handing commits to a :class:`CommitNotifier`. Once PostgreSQL accepts connections again
(``LocalPostgres.start`` returns after a successful connection), the test itself sends one
GetTable and one NotifyCommit, single attempts with a generous deadline.

The assertion that decides does not depend on the machine's speed: those first calls after
PostgreSQL is back must *succeed*. The API waits at most ``API_POOL_TIMEOUT_S`` (2 s, the
issue's bound) for a pooled connection before it answers UNAVAILABLE, so a success means the
API got a working connection within that bound; before the fix the pool's reconnect backoff had
grown to 8-16 s and those calls failed. The time from "PostgreSQL ready" to the first success
(prober or test) and to health SERVING are recorded in the fault report and checked against the
same 2 s bound, as the other fault tests check their recovery bounds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import grpc
import psycopg
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.faults.scenario import (
    TIDY_FILES,
    constant_tables,
    has_operation,
    make_needy,
    register_constant,
    seconds_until,
)
from tests.faults.config import (
    LOAD_BEFORE_FAULT_S,
    PG_BACK_SERVING_BOUND_S,
    PG_OUTAGE_COMMITS,
    PG_OUTAGE_S,
    PG_OUTAGE_TABLES,
    PG_RECOVERY_BOUND_S,
)
from tests.helpers import stub_for
from tms.v1 import tms_pb2, tms_pb2_grpc
from tms_client import CommitNotifier, TmsClient

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

FAST_SCHEDULER = ["--poll-interval-s", "0.2", "--shard-settle-s", "0.5"]
PG_STOP_MODE = "immediate"  # a crash: every connection is cut, WAL recovery on start
AFTER_OUTAGE_S = 3.0  # the writer goes on this long after PostgreSQL is back
FIRST_CALL_TIMEOUT_S = 10.0  # generous: the API's own pool wait bounds a success (see above)
PROBE_CALL_TIMEOUT_S = 1.0
PROBE_STEP_S = 0.05
HEALTH_STEP_S = 0.05
FLUSH_TIMEOUT_S = 90.0  # the notifier's budget per batch is 60 s
COMMIT_PREFIX = "outage-"


@dataclass
class Prober:
    """Calls GetTable and NotifyCommit in turn, one attempt each, until stopped; records
    (started, ended, ok) in monotonic seconds."""

    stub: tms_pb2_grpc.TableManagementServiceStub
    table_id: str
    calls: list[tuple[float, float, bool]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _run(self) -> None:
        i = 0
        while not self.stop.is_set():
            i += 1
            t0 = time.monotonic()
            try:
                if i % 2:
                    self.stub.GetTable(tms_pb2.GetTableRequest(name=f"tables/{self.table_id}"),
                                       timeout=PROBE_CALL_TIMEOUT_S)
                else:
                    self.stub.NotifyCommit(tms_pb2.NotifyCommitRequest(
                        table=f"tables/{self.table_id}", commit_id=str(900_000 + i)),
                        timeout=PROBE_CALL_TIMEOUT_S)
                ok = True
            except grpc.RpcError:
                ok = False
            self.calls.append((t0, time.monotonic(), ok))
            self.stop.wait(PROBE_STEP_S)

    def start(self) -> Prober:
        self._thread = threading.Thread(target=self._run, daemon=True, name="api-prober")
        self._thread.start()
        return self

    def finish(self) -> None:
        self.stop.set()
        if self._thread is not None:
            self._thread.join(PROBE_CALL_TIMEOUT_S * 2)

    def first_ok_after(self, t: float) -> float | None:
        ends = [end for _, end, ok in list(self.calls) if ok and end >= t]
        return min(ends) if ends else None

    def failures_between(self, start: float, end: float) -> int:
        return sum(1 for t0, _, ok in list(self.calls) if not ok and start <= t0 <= end)


def _writer(notifier: CommitNotifier, tables: Sequence[str], span_s: float) -> threading.Thread:
    gap_s = span_s / PG_OUTAGE_COMMITS

    def run() -> None:
        for i in range(PG_OUTAGE_COMMITS):
            notifier.notify(tables[i % len(tables)], f"{COMMIT_PREFIX}{i:05d}")
            time.sleep(gap_s)

    t = threading.Thread(target=run, daemon=True, name="outage-writer")
    t.start()
    return t


def _stored_commits(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(DISTINCT (table_pk, commit_id)) FROM tms_commit_events"
                           " WHERE commit_id LIKE %s", (f"{COMMIT_PREFIX}%",)).fetchone()
    return int(row[0]) if row else 0


def _seconds_until_serving(address: str, timeout_s: float) -> float | None:
    t0 = time.monotonic()
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() - t0 <= timeout_s:
            try:
                resp = stub.Check(health_pb2.HealthCheckRequest(), timeout=PROBE_CALL_TIMEOUT_S)
                if resp.status == health_pb2.HealthCheckResponse.SERVING:
                    return time.monotonic() - t0
            except grpc.RpcError:
                pass
            time.sleep(HEALTH_STEP_S)
    return None


def test_api_and_notifier_through_a_20s_postgres_outage(make_stack, constant_plugin: None,
                                                        fault_report) -> None:
    stack = make_stack(scheduler_args=FAST_SCHEDULER)
    stack.start_api()
    stack.start_scheduler(0)
    stack.start_executor(0)
    assert stack.postgres is not None
    stub = stub_for(stack)
    tables, _ = constant_tables(stub, stack.database_url, "po", count=PG_OUTAGE_TABLES)
    flip = "po-flip-after-outage"
    register_constant(stub, stack.database_url, flip, TIDY_FILES)
    drops: list[tuple[str, int]] = []
    client = TmsClient(stack.api_address)
    notifier = CommitNotifier(client, on_drop=lambda commits, reason: drops.append(
        (reason, len(commits))))
    prober = Prober(stub, tables[0])
    with fault_report.fault(
            "postgres_outage_20s",
            f"PostgreSQL stopped ({PG_STOP_MODE}) for {PG_OUTAGE_S:g} s while a prober calls "
            f"the API (one attempt per call) and a CommitNotifier (default retry, time budget "
            f"60 s) is handed {PG_OUTAGE_COMMITS} commits over {len(tables)} tables; then "
            "started again on the same port and data directory.") as rec:
        writer = _writer(notifier, tables, LOAD_BEFORE_FAULT_S + PG_OUTAGE_S + AFTER_OUTAGE_S)
        prober.start()
        time.sleep(LOAD_BEFORE_FAULT_S)
        down = time.monotonic()
        stack.postgres.stop(PG_STOP_MODE)
        time.sleep(PG_OUTAGE_S)
        stack.postgres.start()  # returns once a connection to PostgreSQL succeeded
        ready = time.monotonic()

        health: list[float | None] = []
        watcher = threading.Thread(target=lambda: health.append(_seconds_until_serving(
            stack.api_address, PG_RECOVERY_BOUND_S)), daemon=True, name="health-watch")
        watcher.start()

        # calls sent as soon as PostgreSQL is back: single attempts, each must succeed
        first: dict[str, str] = {}
        for name, call in (
                ("GetTable", lambda: stub.GetTable(tms_pb2.GetTableRequest(
                    name=f"tables/{tables[1]}"), timeout=FIRST_CALL_TIMEOUT_S)),
                ("NotifyCommit", lambda: stub.NotifyCommit(tms_pb2.NotifyCommitRequest(
                    table=f"tables/{tables[1]}", commit_id="800001"),
                    timeout=FIRST_CALL_TIMEOUT_S))):
            t0 = time.monotonic()
            try:
                call()
                first[name] = f"ok in {time.monotonic() - t0:.2f} s"
            except grpc.RpcError as e:
                first[name] = f"{e.code().name} after {time.monotonic() - t0:.2f} s"  # type: ignore[attr-defined]
        rec.check("the first GetTable and NotifyCommit after PostgreSQL is back succeed",
                  all(v.startswith("ok") for v in first.values()), str(first))
        watcher.join(PG_RECOVERY_BOUND_S + PROBE_CALL_TIMEOUT_S)
        health_s = health[0] if health else None
        rec.counts["health_serving_after_s"] = None if health_s is None else round(health_s, 2)
        rec.check(f"health SERVING within {PG_BACK_SERVING_BOUND_S:g} s of PostgreSQL ready",
                  health_s is not None and health_s <= PG_BACK_SERVING_BOUND_S,
                  "never" if health_s is None else f"{health_s:.2f} s")
        time.sleep(AFTER_OUTAGE_S)
        prober.finish()
        first_ok = prober.first_ok_after(ready)
        rec.counts.update(pg_stop_mode=PG_STOP_MODE, pg_down_s=round(ready - down, 2),
                          probe_calls=len(prober.calls),
                          probe_failures_during_outage=prober.failures_between(down, ready),
                          probe_failures_after_ready=prober.failures_between(
                              ready, time.monotonic()))
        rec.recovery((first_ok - ready) if first_ok else float("inf"), PG_BACK_SERVING_BOUND_S,
                     "PostgreSQL accepts connections -> first successful API call (prober)")

        # the scheduler works again too: a table made needy now gets an operation
        make_needy(stub, flip)
        stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table=f"tables/{flip}",
                                                      commit_id="800002"), timeout=10)
        sched_s = seconds_until(lambda: has_operation(stack.database_url, flip),
                                PG_RECOVERY_BOUND_S)
        rec.counts["scheduler_queued_after_s"] = None if sched_s is None else round(sched_s, 2)
        rec.check("the scheduler queues again", sched_s is not None,
                  f"within {PG_RECOVERY_BOUND_S:g} s: " + ("no" if sched_s is None else "yes"))

        writer.join(FLUSH_TIMEOUT_S)
        rec.check("the notifier sent everything it was handed", notifier.flush(FLUSH_TIMEOUT_S))
        stats = notifier.stats()
        rec.counts.update(notifier_enqueued=stats.enqueued, notifier_sent=stats.sent,
                          notifier_duplicates=stats.duplicates,
                          notifier_dropped=stats.dropped, notifier_rejected=stats.rejected)
        rec.check("the notifier dropped no commit", stats.dropped == 0 and stats.rejected == 0
                  and not drops, f"stats {stats}; on_drop calls {drops}")
        rec.check("the notifier took every commit", stats.enqueued == PG_OUTAGE_COMMITS,
                  f"{stats.enqueued} of {PG_OUTAGE_COMMITS}")
        stored = _stored_commits(stack.database_url)
        rec.counts["commits_in_postgres"] = stored
        rec.check("every commit is in PostgreSQL", stored == PG_OUTAGE_COMMITS,
                  f"{stored} of {PG_OUTAGE_COMMITS} rows")
        dead = [s.name for s in stack.services if not s.alive]
        rec.check("every TMS process survived the outage", not dead,
                  f"dead: {dead}" if dead else "api, scheduler and executor alive")
    notifier.close()
    client.close()
    rec.assert_ok()
