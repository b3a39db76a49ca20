"""Samples a running Spark application's stage and task progress, for the warm driver.

A maintenance operation on a large table runs for minutes; an operator asking how far it has
come wants Spark's own view: the active stages and how many of their tasks are done. The warm
driver runs a ``ProgressSampler`` beside each request, which reads ``statusTracker()`` every
``PROGRESS_INTERVAL_S`` and sends a sample whenever it differs from the previous one, so the
engine hears from it at most once per interval.

Imports only the standard library (pyspark objects are passed in), so the driver can ship it
next to itself like ``iceberg_maintenance.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

PROGRESS_INTERVAL_S = 2.0  # between samples: often enough to watch, rare enough to be free
ENV_PROGRESS_INTERVAL_S = "TMS_PROGRESS_INTERVAL_S"  # the engine's choice, for its driver
MAX_STAGES = 20  # a sample stays small: the active stages with the lowest ids
MAX_STAGE_NAME_CHARS = 200

Sample = dict[str, Any]


def sample(tracker: Any, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> Sample:
    """``{"stages": [...], "sampled_at": iso}`` from a ``StatusTracker``: each active stage's
    id, name and task counts. A stage that ends between listing and reading is left out."""
    stages = []
    for stage_id in sorted(tracker.getActiveStageIds())[:MAX_STAGES]:
        info = tracker.getStageInfo(stage_id)
        if info is None:
            continue
        stages.append({"id": int(info.stageId), "name": str(info.name)[:MAX_STAGE_NAME_CHARS],
                       "tasks": int(info.numTasks), "completed": int(info.numCompletedTasks),
                       "active": int(info.numActiveTasks), "failed": int(info.numFailedTasks)})
    return {"stages": stages, "sampled_at": now().isoformat(timespec="seconds")}


class ProgressSampler:
    """Samples on its own thread while one request runs (``with ProgressSampler(...):``) and
    hands each changed sample to ``send``. Sampling failures are skipped: a JVM that went away
    is the serve loop's to notice, not the sampler's."""

    def __init__(self, tracker: Callable[[], Any], send: Callable[[Sample], None],
                 interval_s: float = PROGRESS_INTERVAL_S) -> None:
        self.tracker, self.send, self.interval_s = tracker, send, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress-sampler", daemon=True)

    def __enter__(self) -> ProgressSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        last: list[dict[str, Any]] | None = None
        while not self._stop.wait(self.interval_s):
            try:
                current = sample(self.tracker())
            except Exception:
                continue
            if current["stages"] == last:
                continue
            last = current["stages"]
            try:
                self.send(current)
            except (OSError, ValueError):  # the engine is gone; the serve loop will notice
                return


def interval_from_env(environ: Mapping[str, str]) -> float:
    """The sampling interval the engine asked for, or the default when unset or invalid."""
    try:
        value = float(environ.get(ENV_PROGRESS_INTERVAL_S, PROGRESS_INTERVAL_S))
    except ValueError:
        return PROGRESS_INTERVAL_S
    return value if value > 0 else PROGRESS_INTERVAL_S
