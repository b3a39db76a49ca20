"""The executor loop: claim, hold the lease by heartbeat, run, record — every write fenced.

The lease outlives several missed heartbeats (LEASE_TIMEOUT_S >= 3 x HEARTBEAT_INTERVAL_S). If a
renewal finds the operation no longer ours (the reaper took it back, or it was cancelled) the
engine is stopped at once and nothing this attempt says afterwards is written.

With an API endpoint (``api``) each attempt's job gets a token of its own and reports its
result through ReportJobResult, read back from the database when the driver has ended: the
driver may then run anywhere (deploy mode ``cluster``).

Work directories are private (0700: job specs carry catalog credentials); an attempt's spec
file is gone when the attempt ends whatever its outcome, its driver log is kept on failure. An
executor killed mid-attempt cannot remove its spec: the next start of the same executor (its
work directory is its own) sweeps what was left.
"""

from __future__ import annotations

import random
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import structlog

from tms import catalogs
from tms.catalogs import CatalogCache
from tms.domain import (
    AttemptState,
    JobReport,
    JobSpec,
    LeaseStatus,
    Operation,
    OperationState,
    Outcome,
)
from tms.domain.jobs import ApiEndpoint, new_report_token, report_token_digest
from tms.engines.base import EngineResult, ExecutionEngine
from tms.engines.profiles import EngineRouter
from tms.engines.workdir import PRIVATE_FILE_NAMES, WorkdirError, private_dir
from tms.executor.recheck import stale_reason
from tms.executor.retry import RetryPolicy
from tms.formats.base import CatalogUnreachable, TableFormatPlugin
from tms.liveness import Heartbeat
from tms.observability.metrics import instruments
from tms.observability.tracing import context_from, tracer
from tms.policy.common import in_force
from tms.spark.jar_check import engine_refusal
from tms.storage.roles import ExecutionStore

HEARTBEAT_INTERVAL_S = 10.0
LEASE_TIMEOUT_S = 30.0
POLL_INTERVAL_S = 1.0
SHUTDOWN_GRACE_S = 10.0  # a running job may finish within this after SIGTERM, else hand back
SHUTDOWN_POLL_S = 0.2
# The longest one attempt may run before its job is stopped and the operation FAILED (not
# retried: the same work would run as long again). Nothing else bounds an attempt: a job stuck
# on a catalog, or held by a table's own retry settings, would keep the executor's slot.
ATTEMPT_TIMEOUT_S = 4 * 3600.0
assert LEASE_TIMEOUT_S >= 3 * HEARTBEAT_INTERVAL_S

log = structlog.get_logger("tms.executor")


class Executor:
    def __init__(self, store: ExecutionStore, formats: dict[str, TableFormatPlugin],
                 engine: ExecutionEngine | EngineRouter, executor_id: str, workdir: Path, *,
                 lease_s: float = LEASE_TIMEOUT_S, heartbeat_s: float = HEARTBEAT_INTERVAL_S,
                 poll_interval_s: float = POLL_INTERVAL_S,
                 shutdown_grace_s: float = SHUTDOWN_GRACE_S,
                 attempt_timeout_s: float = ATTEMPT_TIMEOUT_S,
                 queues: Sequence[str] | None = None,
                 retry: RetryPolicy | None = None,
                 rand: Callable[[], float] = random.random,
                 clock: Callable[[], float] = time.monotonic,
                 api: ApiEndpoint | None = None,
                 liveness: Heartbeat | None = None) -> None:
        if lease_s < 3 * heartbeat_s:
            raise ValueError("lease_s must be at least 3 x heartbeat_s")
        if not attempt_timeout_s > 0:
            raise ValueError("attempt_timeout_s must be positive")
        self.store = store
        self.catalogs = CatalogCache(store.catalog_get)
        self.formats = formats
        self.engine = engine
        self.executor_id = executor_id
        self.workdir = workdir
        self.lease_s = lease_s
        self.heartbeat_s = heartbeat_s
        self.poll_interval_s = poll_interval_s
        self.shutdown_grace_s = shutdown_grace_s
        self.attempt_timeout_s = attempt_timeout_s
        self.queues = tuple(queues) if queues else None  # None: every queue
        self.retry = retry or RetryPolicy()
        self._rand = rand
        self._clock = clock
        self.api = api  # None: jobs write a local result file (client mode only)
        self.finished = threading.Event()  # set after each recorded outcome: a test signal
        self.running: dict[int, str] = {}  # operation id -> name, while its attempt runs
        self.liveness = liveness  # this process's heartbeat row (GetFleetStatus)

    def run(self, stop: threading.Event) -> None:
        log.info("executor started", executor=self.executor_id)
        self.sweep_specs()
        beating = None
        if self.liveness is not None:  # its own thread: an attempt blocks this loop for long
            beating = threading.Thread(target=self.liveness.run, args=(stop,), daemon=True,
                                       name="tms-liveness")
            beating.start()
        try:
            while not stop.is_set():
                try:
                    worked = self.run_once(stop)
                except Exception:
                    log.exception("executor pass failed")
                    worked = False
                if not worked:
                    stop.wait(self.poll_interval_s)
        finally:
            if beating is not None:
                stop.set()
                beating.join(self.heartbeat_s)

    def liveness_state(self) -> tuple[bool, tuple[int, ...], tuple[str, ...]]:
        """What this executor's heartbeat row says: the operations it runs now."""
        return False, (), tuple(self.running.values())

    def sweep_specs(self) -> None:
        """Remove spec files a killed predecessor left in this executor's work directory."""
        try:
            left = [p for name in PRIVATE_FILE_NAMES for p in self.workdir.glob(f"*/{name}")]
        except OSError:
            return
        for spec in left:
            spec.unlink(missing_ok=True)
        if left:
            log.info("removed job specs left by an earlier run", count=len(left))

    def run_once(self, stop: threading.Event | None = None) -> bool:
        op = self.store.operation_claim(self.executor_id, self.lease_s, self.queues)
        if op is None:
            return False
        self.execute(op, stop or threading.Event())
        return True

    def execute(self, op: Operation, shutdown: threading.Event) -> None:
        """Run one attempt inside its span, which continues the trace of the decision (and
        the commit before it) that queued the operation."""
        self.running[op.id] = op.name
        try:
            with tracer().start_as_current_span(
                    "attempt", context=context_from(op.traceparent),
                    attributes={"tms.operation": op.id, "tms.action": op.action,
                                "tms.attempt": op.lease.attempt, "tms.queue": op.queue}):
                self._execute(op, shutdown)
        finally:
            self.running.pop(op.id, None)

    def _execute(self, op: Operation, shutdown: threading.Event) -> None:
        bound = log.bind(operation=op.id, table_pk=op.table_pk, action=op.action,
                         attempt=op.lease.attempt)
        bound.info("operation started")
        m = instruments()
        m.attempts_started.add(1, {"action": op.action, "queue": op.queue})
        started = self._clock()
        lost = threading.Event()  # the lease is no longer ours
        cancelled = threading.Event()  # a cancel was requested through the API
        handback = threading.Event()  # shutdown grace ran out: return the operation
        timed_out = threading.Event()  # the attempt ran past attempt_timeout_s
        stop_engine = threading.Event()
        done = threading.Event()
        watchers = [
            threading.Thread(target=self._heartbeat,
                             args=(op, lost, cancelled, stop_engine, done),
                             daemon=True, name=f"heartbeat-{op.id}"),
            threading.Thread(target=self._watch_shutdown,
                             args=(shutdown, handback, stop_engine, done), daemon=True,
                             name=f"shutdown-{op.id}"),
            threading.Thread(target=self._watch_deadline, args=(timed_out, stop_engine, done),
                             daemon=True, name=f"deadline-{op.id}"),
        ]
        for w in watchers:
            w.start()
        try:
            outcome = self._run(op, stop_engine)
        except Exception as e:  # a bug or bad configuration: record it, never leave RUNNING
            bound.exception("operation crashed")
            outcome = Outcome(OperationState.FAILED, error=f"{type(e).__name__}: {e}"[:4000])
        finally:
            done.set()
            for w in watchers:
                w.join()
        ended = AttemptState.LOST
        if lost.is_set():
            bound.warning("lease lost; outcome discarded")
        elif cancelled.is_set():
            outcome = Outcome(OperationState.CANCELLED, error="cancelled by request",
                              log_tail=outcome.log_tail, exit_code=outcome.exit_code)
            if self.store.operation_finish(op, self.executor_id, outcome):
                bound.info("operation cancelled; job stopped")
                m.operations_finished.add(1, {"action": op.action, "state": "CANCELLED"})
            ended = AttemptState.CANCELLED
        elif timed_out.is_set() and not handback.is_set():
            bound.warning("attempt timed out; job stopped", timeout_s=self.attempt_timeout_s)
            outcome = Outcome(OperationState.FAILED, retryable=False,
                              error=f"timed out: the attempt ran longer than "
                                    f"{self.attempt_timeout_s:g} s (the executor's "
                                    f"--attempt-timeout-s) and its job was stopped",
                              log_tail=outcome.log_tail, exit_code=outcome.exit_code)
            ended = self._record(op, outcome, bound)
        elif handback.is_set():
            released = self.store.operation_release(
                op, self.executor_id, f"handed back by {self.executor_id} on shutdown")
            bound.warning("operation handed back on shutdown", released=released)
            ended = AttemptState.HANDED_BACK
        else:
            ended = self._record(op, outcome, bound)
        m.attempt_duration.record(self._clock() - started,
                                  {"action": op.action, "outcome": ended.value.lower()})
        self.finished.set()

    def _record(self, op: Operation, outcome: Outcome,
                bound: structlog.typing.FilteringBoundLogger) -> AttemptState:
        """Finish the operation, or queue it again after a backoff when the failure may pass
        and attempts remain. Non-retryable failures end at once, whatever attempts are left.
        Returns how the attempt ended (LOST when its write was refused)."""
        if outcome.state is OperationState.SKIPPED:
            if not self.store.operation_skip(op, self.executor_id, outcome.error or "",
                                             outcome.result, outcome.log_tail,
                                             outcome.exit_code):
                bound.warning("skip refused: this attempt no longer owns the operation")
                return AttemptState.LOST
            bound.info("operation skipped: no longer needed", reason=outcome.error)
            instruments().operations_finished.add(1, {"action": op.action, "state": "SKIPPED"})
            return AttemptState.SKIPPED
        if outcome.state is OperationState.FAILED and not outcome.retryable:
            outcome = Outcome(outcome.state, outcome.result, f"not retryable: {outcome.error}",
                              outcome.log_tail, outcome.exit_code, retryable=False)
        elif (outcome.state is OperationState.FAILED
              and op.lease.attempts_used < op.lease.max_attempts):
            delay_s = self.retry.delay_s(op.lease.attempts_used, self._rand)
            if self.store.operation_retry_later(op, self.executor_id, outcome, delay_s):
                bound.warning("attempt failed; retry queued", error=outcome.error,
                              retry_in_s=round(delay_s, 1),
                              max_attempts=op.lease.max_attempts)
                instruments().retries_queued.add(1, {"action": op.action})
                return AttemptState.FAILED
        if self.store.operation_finish(op, self.executor_id, outcome):
            bound.info("operation finished", state=outcome.state.value, error=outcome.error)
            instruments().operations_finished.add(
                1, {"action": op.action, "state": outcome.state.value})
            return AttemptState(outcome.state.value)
        bound.warning("outcome refused: this attempt no longer owns the operation")
        return AttemptState.LOST

    def _watch_shutdown(self, shutdown: threading.Event, handback: threading.Event,
                        stop_engine: threading.Event, done: threading.Event) -> None:
        """On shutdown, give the running job ``shutdown_grace_s`` to end, then stop it."""
        while not done.is_set():
            if shutdown.wait(SHUTDOWN_POLL_S):
                if not done.wait(self.shutdown_grace_s):
                    handback.set()
                    stop_engine.set()
                return

    def _watch_deadline(self, timed_out: threading.Event, stop_engine: threading.Event,
                        done: threading.Event) -> None:
        """Stop the job once the attempt has run ``attempt_timeout_s``."""
        if not done.wait(self.attempt_timeout_s):
            timed_out.set()
            stop_engine.set()

    def _run(self, op: Operation, stop_engine: threading.Event) -> Outcome:
        table = self.store.table_get_settings(op.table_pk)
        if table is None:
            return Outcome(OperationState.FAILED, error="table was deregistered",
                           retryable=False)
        plugin = self.formats.get(table.format)
        if plugin is None:
            return Outcome(OperationState.FAILED, error=f"no plugin for format {table.format!r}",
                           retryable=False)
        catalog = self.catalogs.get(table.catalog)
        if catalog is None:
            return Outcome(OperationState.FAILED, retryable=False,
                           error=f"catalogs/{table.catalog} does not exist")
        try:
            # secrets resolved here, at use (SecretError names the reference, not a value);
            # the plugin checks the table's location against the catalog's allowed ones
            access = catalogs.access(catalog)
            # the job and its engine (Spark keys, resources) follow the policy in force: the
            # catalog's default policy under the table's own, as the scheduler decided with
            table = replace(table, policy=in_force(plugin.policy_keys, table.policy,
                                                   access.default_policy))
            stale = stale_reason(plugin, table, access, op)
            if stale is not None:  # no longer needed: ends SKIPPED, nothing runs
                return Outcome(OperationState.SKIPPED, error=stale[:4000], retryable=False)
            job = plugin.build_job(table, access, op)
            engine, capped = (self.engine.route(table) if isinstance(self.engine, EngineRouter)
                              else (self.engine, []))
        except ValueError as e:  # bad configuration: another attempt would fail the same way
            return Outcome(OperationState.FAILED, error=f"bad configuration: {e}"[:4000],
                           retryable=False)
        except CatalogUnreachable as e:  # may pass: retried (the message is scrubbed)
            return Outcome(OperationState.FAILED, error=str(e)[:4000])
        missing_jar = engine_refusal(job, engine)  # before any JVM starts, for every engine
        if missing_jar is not None:
            return Outcome(OperationState.FAILED, error=missing_jar[:4000], retryable=False)
        workdir = self.workdir / f"op-{op.id}-attempt-{op.lease.attempt}"
        try:
            private_dir(self.workdir)
            private_dir(workdir)
        except (WorkdirError, PermissionError) as e:  # the operator must fix the directory
            return Outcome(OperationState.FAILED, error=f"bad configuration: {e}"[:4000],
                           retryable=False)

        if self.api is not None and job.kind == "pyspark":
            job = self._with_report(op, job, self.api)
            if job.report is None:  # the lease is gone already: nothing may run
                return Outcome(OperationState.FAILED, error="attempt no longer ours")

        def on_handle(handle: str) -> None:
            self.store.attempt_set_engine_handle(op, self.executor_id, handle)

        def on_progress(progress: dict[str, Any]) -> None:
            """Keep the latest progress on the attempt (fenced: a lost attempt writes
            nothing); a failed write only loses one sample, the next replaces it anyway."""
            try:
                self.store.attempt_set_progress(op, self.executor_id, progress)
            except Exception as e:
                log.warning("progress not stored", operation=op.id, error=str(e))

        try:
            res: EngineResult = engine.run(job, workdir, stop_engine, on_handle, on_progress)
        finally:  # engines remove them already; one that did not must not leave them behind
            for name in PRIVATE_FILE_NAMES:
                (workdir / name).unlink(missing_ok=True)
        if res.succeeded or res.skipped:
            shutil.rmtree(workdir, ignore_errors=True)
        if res.skipped:  # the job found nothing to do: not a failure, never retried
            return Outcome(OperationState.SKIPPED, result=res.result, error=res.skipped[:4000],
                           log_tail=res.log_tail, exit_code=res.exit_code, retryable=False)
        state = OperationState.SUCCEEDED if res.succeeded else OperationState.FAILED
        result, log_tail = res.result, res.log_tail
        if capped:  # the table asked for more than its queue allows: say so where it is read
            log.info("resources capped", operation=op.id, notes=capped)
            result = {**(result or {}), "resource_caps": capped}
            log_tail = "".join(f"[tms] {n}\n" for n in capped) + log_tail
        return Outcome(state, result=result, error=res.error, log_tail=log_tail,
                       exit_code=res.exit_code, retryable=res.retryable)

    def _with_report(self, op: Operation, job: JobSpec, api: ApiEndpoint) -> JobSpec:
        """``job`` reporting its result through the API with a fresh token of this attempt
        (only its digest is stored, fenced by the lease); without report when the attempt is
        no longer ours."""
        token = new_report_token()
        if not self.store.attempt_set_report_token(op, self.executor_id,
                                                   report_token_digest(token)):
            return replace(job, report=None)
        store = self.store
        return replace(job, report=JobReport(
            api.target, op.name, op.lease.attempt, token,
            fetch=lambda: store.attempt_reported_result(op),
            ca_file=api.ca_file, server_name=api.server_name))

    def _heartbeat(self, op: Operation, lost: threading.Event, cancelled: threading.Event,
                   stop_engine: threading.Event, done: threading.Event) -> None:
        while not done.wait(self.heartbeat_s):
            try:
                lease = self.store.operation_renew_lease(op, self.executor_id, self.lease_s)
            except Exception as e:  # database blip: the lease has slack for a few misses
                log.warning("heartbeat failed", operation=op.id, error=str(e))
                continue
            if lease is LeaseStatus.LOST:
                lost.set()
                stop_engine.set()
                return
            if lease is LeaseStatus.CANCEL_REQUESTED and not cancelled.is_set():
                cancelled.set()
                stop_engine.set()  # keep the lease alive until the job is down
