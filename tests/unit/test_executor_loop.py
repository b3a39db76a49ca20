"""The executor loop's bookkeeping, with a fake store and a fake engine."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from tests.unit.fakes import (
    FakeEngine,
    FakeFormat,
    FakeStore,
    make_catalog,
    make_op,
    make_table,
)
from tms.domain import LeaseStatus, OperationState
from tms.engines.base import EngineResult
from tms.engines.profiles import ENGINE_COLD, EngineRouter, QueueProfile
from tms.executor.loop import Executor
from tms.executor.retry import RetryPolicy
from tms.spark.caps import ResourceCaps
from tms.spark.settings import SparkSettings


def executor(store: FakeStore, engine: FakeEngine, tmp_path: Path, **kw: float) -> Executor:
    return Executor(store, {"fake": FakeFormat()}, engine,  # type: ignore[arg-type]
                    "e1", tmp_path, **kw)


def test_success_is_recorded(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op()])
    engine = FakeEngine()
    assert executor(store, engine, tmp_path).run_once()
    (_, outcome), = store.finished
    assert outcome.state is OperationState.SUCCEEDED and outcome.result == {"rewritten": 3}
    assert store.handles == ["app-1"] and engine.jobs[0].spec == {"table": "t1"}


def test_nothing_to_claim(tmp_path: Path) -> None:
    assert not executor(FakeStore(), FakeEngine(), tmp_path).run_once()


def test_engine_failure_keeps_error_and_log(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op(attempt=3)])
    engine = FakeEngine(EngineResult(False, None, "boom", "last lines", 1, "app-1"))
    executor(store, engine, tmp_path).run_once()
    (_, outcome), = store.finished
    assert (outcome.state, outcome.error, outcome.log_tail, outcome.exit_code) == (
        OperationState.FAILED, "boom", "last lines", 1)


def test_engine_crash_never_leaves_running(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op(attempt=3)])
    executor(store, FakeEngine(raises=RuntimeError("bad config")), tmp_path).run_once()
    (_, outcome), = store.finished
    assert outcome.state is OperationState.FAILED and "bad config" in (outcome.error or "")


def test_deregistered_table_fails(tmp_path: Path) -> None:
    store = FakeStore(to_claim=[make_op()])
    executor(store, FakeEngine(), tmp_path).run_once()
    assert store.finished[0][1].error == "not retryable: table was deregistered"


def test_lost_lease_stops_engine_and_writes_nothing(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op()],
                      renew_result=LeaseStatus.LOST)
    engine = FakeEngine(block_until_stopped=True)
    ex = executor(store, engine, tmp_path, heartbeat_s=0.01, lease_s=0.03)
    t = threading.Thread(target=ex.run_once)
    t.start()
    t.join(10)
    assert not t.is_alive()
    assert store.renewals >= 1 and store.finished == []


def test_lease_must_cover_three_heartbeats(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="3 x"):
        executor(FakeStore(), FakeEngine(), tmp_path, heartbeat_s=10, lease_s=20)


def test_shutdown_past_grace_hands_the_operation_back(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op()])
    engine = FakeEngine(block_until_stopped=True)
    ex = executor(store, engine, tmp_path, shutdown_grace_s=0.05)
    shutdown = threading.Event()
    t = threading.Thread(target=ex.run_once, args=(shutdown,))
    t.start()
    shutdown.set()
    t.join(10)
    assert not t.is_alive()
    assert store.finished == [] and len(store.released) == 1
    assert "on shutdown" in store.released[0][1]


def test_shutdown_lets_a_quick_job_finish(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op()])
    shutdown = threading.Event()
    shutdown.set()
    executor(store, FakeEngine(), tmp_path, shutdown_grace_s=5).run_once(shutdown)
    assert store.released == [] and store.finished[0][1].state is OperationState.SUCCEEDED


def test_cancel_request_stops_the_engine_and_ends_cancelled(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op()],
                      renew_result=LeaseStatus.CANCEL_REQUESTED)
    engine = FakeEngine(block_until_stopped=True)
    ex = executor(store, engine, tmp_path, heartbeat_s=0.01, lease_s=0.03)
    t = threading.Thread(target=ex.run_once)
    t.start()
    t.join(10)
    assert not t.is_alive()
    (_, outcome), = store.finished
    assert outcome.state is OperationState.CANCELLED and outcome.error == "cancelled by request"


def test_an_attempt_past_its_timeout_is_stopped_and_fails_not_retried(tmp_path: Path) -> None:
    """A job that would run for ever (held by a table's commit retries, a catalog that stopped
    answering) is stopped at the executor's attempt timeout; attempts left do not matter."""
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op(attempt=1, max_attempts=3)])
    engine = FakeEngine(block_until_stopped=True)
    ex = executor(store, engine, tmp_path, attempt_timeout_s=0.2)
    t = threading.Thread(target=ex.run_once)
    t.start()
    t.join(10)
    assert not t.is_alive()
    assert store.retried == []
    (_, outcome), = store.finished
    assert outcome.state is OperationState.FAILED and not outcome.retryable
    assert outcome.error is not None and "timed out" in outcome.error and "0.2 s" in outcome.error


def test_a_job_within_its_timeout_is_not_stopped(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op()])
    executor(store, FakeEngine(), tmp_path, attempt_timeout_s=600).run_once()
    assert store.finished[0][1].state is OperationState.SUCCEEDED


@pytest.mark.parametrize("bad", [0, -1, float("nan")])
def test_the_attempt_timeout_must_be_positive(tmp_path: Path, bad: float) -> None:
    with pytest.raises(ValueError, match="attempt_timeout_s"):
        executor(FakeStore(), FakeEngine(), tmp_path, attempt_timeout_s=bad)


@pytest.mark.parametrize("raw", ["0", "-5", "nan", "inf", "1e9", "four hours", ""])
def test_the_executor_refuses_a_bad_attempt_timeout(raw: str) -> None:
    import argparse

    from tms_services.executor import attempt_timeout
    with pytest.raises(argparse.ArgumentTypeError):
        attempt_timeout(raw)
    assert attempt_timeout("14400") == 14400.0


def test_retryable_failure_is_queued_again_with_backoff(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op(attempt=2, max_attempts=4)])
    engine = FakeEngine(EngineResult(False, None, "executor OOM", "tail", 1, "app-1"))
    ex = executor(store, engine, tmp_path)
    ex.retry = RetryPolicy(base_delay_s=10, max_delay_s=100)
    ex._rand = lambda: 0.0  # no jitter: the ceiling itself
    ex.run_once()
    assert store.finished == []
    (_, outcome, delay_s), = store.retried
    assert delay_s == 20.0 and outcome.error == "executor OOM" and outcome.log_tail == "tail"


def test_handed_back_attempts_do_not_count(tmp_path: Path) -> None:
    """Attempt 4 of 4 after one hand-back has used 3: a failure may still be retried, and the
    backoff grows with the failures, not with the hand-backs."""
    store = FakeStore(tables={1: make_table()},
                      to_claim=[make_op(attempt=4, max_attempts=4, handed_back=1)])
    engine = FakeEngine(EngineResult(False, None, "executor OOM", "tail", 1, "app-1"))
    ex = executor(store, engine, tmp_path)
    ex.retry = RetryPolicy(base_delay_s=10, max_delay_s=1000)
    ex._rand = lambda: 0.0
    ex.run_once()
    assert store.finished == []
    (_, _, delay_s), = store.retried
    assert delay_s == 40.0  # the third failure's backoff


def test_last_attempt_fails_for_good(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op(attempt=4, max_attempts=4)])
    executor(store, FakeEngine(EngineResult(False, None, "boom", "", 1)), tmp_path).run_once()
    assert store.retried == [] and store.finished[0][1].state is OperationState.FAILED


def test_non_retryable_failure_fails_at_once(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op(attempt=1, max_attempts=5)])
    result = EngineResult(False, None, "NoSuchTableException: db.t", "", 1, retryable=False)
    executor(store, FakeEngine(result), tmp_path).run_once()
    assert store.retried == []
    (_, outcome), = store.finished
    assert outcome.state is OperationState.FAILED and not outcome.retryable
    assert outcome.error == "not retryable: NoSuchTableException: db.t"


def test_bad_configuration_is_not_retried(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op(attempt=1)])
    fmt = FakeFormat()
    fmt.build_job = lambda table, catalog, op: (_ for _ in ()).throw(  # type: ignore[method-assign]
        ValueError("TMS_HUDI_UTILITIES_JAR must name the jar"))
    ex = Executor(store, {"fake": fmt}, FakeEngine(), "e1", tmp_path)  # type: ignore[arg-type]
    ex.run_once()
    assert store.retried == []
    assert store.finished[0][1].error == (
        "not retryable: bad configuration: TMS_HUDI_UTILITIES_JAR must name the jar")


def test_missing_secret_fails_at_once_naming_the_reference(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.delenv("TMS_SECRET_LAKE_PW", raising=False)
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op(attempt=1)],
                      catalogs={"c": make_catalog(secrets={"jdbc.password":
                                                           "env:TMS_SECRET_LAKE_PW"})})
    engine = FakeEngine()
    Executor(store, {"fake": FakeFormat()}, engine, "e1", tmp_path).run_once()  # type: ignore[arg-type]
    assert store.retried == [] and engine.jobs == []
    outcome = store.finished[0][1]
    assert not outcome.retryable and "env:TMS_SECRET_LAKE_PW" in (outcome.error or "")


def test_deregistered_table_is_not_retried(tmp_path: Path) -> None:
    store = FakeStore(to_claim=[make_op(attempt=1)])
    executor(store, FakeEngine(), tmp_path).run_once()
    assert store.retried == [] and not store.finished[0][1].retryable


def test_claims_only_its_queues(tmp_path: Path) -> None:
    store = FakeStore()
    Executor(store, {}, FakeEngine(), "e1", tmp_path,  # type: ignore[arg-type]
             queues=["small", "urgent"]).run_once()
    assert store.claimed_queues == [("small", "urgent")]


SAMPLES = [{"stages": [{"id": 3, "name": "rewrite", "tasks": 8, "completed": 2, "active": 2,
                        "failed": 0}], "sampled_at": "2026-06-01T00:00:02+00:00"},
           {"stages": [], "sampled_at": "2026-06-01T00:00:04+00:00"}]


def test_progress_reaches_the_store_fenced_by_the_attempt(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op(op_id=7, attempt=2)])
    assert executor(store, FakeEngine(progress=SAMPLES), tmp_path).run_once()
    assert store.progress == [(7, 2, "e1", SAMPLES[0]), (7, 2, "e1", SAMPLES[1])]
    assert store.finished[0][1].state is OperationState.SUCCEEDED


def test_progress_refused_or_failing_never_fails_the_operation(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op()],
                      progress_error=ConnectionError("database unreachable"))
    assert executor(store, FakeEngine(progress=SAMPLES), tmp_path).run_once()
    assert store.progress == [] and store.finished[0][1].state is OperationState.SUCCEEDED


def _router(engine: FakeEngine, caps: ResourceCaps) -> EngineRouter:
    profile = QueueProfile(ENGINE_COLD, SparkSettings(), caps)
    return EngineRouter(profile, {}, {ENGINE_COLD: lambda settings: engine})  # type: ignore[dict-item]


def test_resources_above_the_queue_cap_are_clamped_and_reported(tmp_path: Path) -> None:
    table = replace(make_table(), policy={"spark.executor-memory": "64g"})
    store = FakeStore(tables={1: table}, to_claim=[make_op()])
    ex = Executor(store, {"fake": FakeFormat()}, _router(FakeEngine(),  # type: ignore[arg-type]
                  ResourceCaps(executor_memory="2g")), "e1", tmp_path)
    assert ex.run_once()
    outcome = store.finished[0][1]
    note = "spark.executor-memory=64g is above the queue's cap; capped at 2g"
    assert outcome.result == {"rewritten": 3, "resource_caps": [note]}
    assert outcome.log_tail.startswith(f"[tms] {note}\n")


def test_a_stored_jvm_option_never_reaches_an_engine(tmp_path: Path) -> None:
    table = replace(make_table(), policy={
        "spark.conf.spark.executor.defaultJavaOptions": "-javaagent:/tmp/evil.jar"})
    store = FakeStore(tables={1: table}, to_claim=[make_op(attempt=1)])
    engine = FakeEngine()
    Executor(store, {"fake": FakeFormat()}, _router(engine, ResourceCaps()),  # type: ignore[arg-type]
             "e1", tmp_path).run_once()
    assert engine.jobs == [] and store.retried == []
    assert "not retryable: bad configuration" in (store.finished[0][1].error or "")


def test_the_catalogs_default_policy_reaches_the_engine_under_the_tables_own(
        tmp_path: Path) -> None:
    catalog = make_catalog(default_policy={"spark.executor-memory": "64g"})
    for policy, note in (({}, "spark.executor-memory=64g is above the queue's cap; capped at "
                              "2g"),
                         ({"spark.executor-memory": "1g"}, None)):
        store = FakeStore(tables={1: replace(make_table(), policy=policy)},
                          to_claim=[make_op()], catalogs={"c": catalog})
        ex = Executor(store, {"fake": FakeFormat()},  # type: ignore[arg-type]
                      _router(FakeEngine(), ResourceCaps(executor_memory="2g")), "e1",
                      tmp_path)
        assert ex.run_once()
        result = store.finished[0][1].result or {}
        assert result.get("resource_caps") == ([note] if note else None), policy
