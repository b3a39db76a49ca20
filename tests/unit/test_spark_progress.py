"""Progress of a running warm job without Spark: sampling a status tracker, sending only changed
samples, and the driver's serve loop sending its request's progress before the answer."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tms.engines.warm_process import encode_request
from tms.jobs import spark_progress, warm_driver

WAIT_S = 10.0  # bounds a wait on an event that should come at once


def stage(stage_id: int, tasks: int, completed: int, active: int = 1, failed: int = 0) -> Any:
    return SimpleNamespace(stageId=stage_id, currentAttemptId=0, name=f"stage {stage_id}",
                           numTasks=tasks, numCompletedTasks=completed,
                           numActiveTasks=active, numFailedTasks=failed)


class Tracker:
    """A StatusTracker whose active stages the test sets; counts the samples taken."""

    def __init__(self, *stages: Any, vanished: tuple[int, ...] = ()) -> None:
        self.stages = {s.stageId: s for s in stages}
        self.vanished = vanished  # listed as active, ended before their info is read
        self.calls = 0
        self.sampled = threading.Event()

    def getActiveStageIds(self) -> list[int]:  # noqa: N802 - pyspark's name
        self.calls += 1
        if self.calls >= 5:
            self.sampled.set()
        return [*self.stages, *self.vanished]

    def getStageInfo(self, stage_id: int) -> Any:  # noqa: N802 - pyspark's name
        return self.stages.get(stage_id)


def test_a_sample_counts_the_tasks_of_each_active_stage() -> None:
    tracker = Tracker(stage(4, tasks=10, completed=3, active=2), stage(2, tasks=1, completed=0),
                      vanished=(3,))
    at = datetime(2026, 6, 1, 12, 0, 5, 123, tzinfo=UTC)
    assert spark_progress.sample(tracker, lambda: at) == {
        "stages": [{"id": 2, "name": "stage 2", "tasks": 1, "completed": 0, "active": 1,
                    "failed": 0},
                   {"id": 4, "name": "stage 4", "tasks": 10, "completed": 3, "active": 2,
                    "failed": 0}],
        "sampled_at": "2026-06-01T12:00:05+00:00"}


def test_the_sampler_sends_only_changed_samples() -> None:
    tracker = Tracker(stage(1, tasks=4, completed=1))
    sent: list[dict[str, Any]] = []
    first = threading.Event()

    def send(sample: dict[str, Any]) -> None:
        sent.append(sample)
        first.set()

    with spark_progress.ProgressSampler(lambda: tracker, send, interval_s=0.001):
        assert first.wait(WAIT_S)
        tracker.stages[1] = stage(1, tasks=4, completed=4, active=0)
        tracker.calls, tracker.sampled = 0, threading.Event()
        assert tracker.sampled.wait(WAIT_S)  # five more samples, the change among them
    assert [[s["completed"] for s in sample["stages"]] for sample in sent] == [[1], [4]]


def test_sampling_failures_are_skipped() -> None:
    calls = threading.Event()

    def broken() -> Any:
        calls.set()
        raise ConnectionError("the JVM is gone")

    sent: list[dict[str, Any]] = []
    with spark_progress.ProgressSampler(broken, sent.append, interval_s=0.001):
        assert calls.wait(WAIT_S)
    assert sent == []


def test_interval_from_the_environment() -> None:
    env = spark_progress.ENV_PROGRESS_INTERVAL_S
    assert spark_progress.interval_from_env({env: "0.5"}) == 0.5
    for bad in ({}, {env: "soon"}, {env: "0"}):
        assert spark_progress.interval_from_env(bad) == spark_progress.PROGRESS_INTERVAL_S


class BusySession:
    """Enough of a SparkSession for one request whose first SQL statement runs until the
    driver has sent a progress sample, then fails (so no Iceberg is needed)."""

    def __init__(self, tracker: Tracker, progress_sent: threading.Event) -> None:
        context = SimpleNamespace(isStopped=lambda: False)
        self.sparkContext = SimpleNamespace(setJobGroup=lambda *a: None,
                                            statusTracker=lambda: tracker,
                                            _jsc=SimpleNamespace(sc=lambda: context))
        self.catalog = SimpleNamespace(clearCache=lambda: None)
        self.conf = SimpleNamespace(set=lambda key, value: None)
        self.progress_sent = progress_sent

    def sql(self, query: str) -> Any:
        assert self.progress_sent.wait(WAIT_S), "no progress while the request ran"
        raise RuntimeError("stopped after the first sample")


def test_the_driver_sends_its_requests_progress_before_the_answer(tmp_path: Path) -> None:
    spec, result = {"catalog_name": "c", "table": "ns.t", "allowed_locations": ["/wh"],
                    "action": "compaction"}, \
        tmp_path / "result.json"
    progress_sent = threading.Event()
    sent: list[dict[str, Any]] = []

    def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if "progress" in message:
            progress_sent.set()

    session = BusySession(Tracker(stage(7, tasks=3, completed=1)), progress_sent)
    lines = [encode_request(5, spec, result).decode()]
    assert warm_driver.serve(session, lines, send, progress_interval_s=0.001) == 0
    assert sent[-1] == {"id": 5, "done": True} and len(sent) == 2  # a change is sent once
    assert sent[0]["id"] == 5 and sent[0]["progress"]["stages"] == [
        {"id": 7, "name": "stage 7", "tasks": 3, "completed": 1, "active": 1, "failed": 0}]
