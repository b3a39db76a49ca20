"""A process's heartbeat: paced by its injected clock, its state read at each beat, a failed
write retried at the next tick, the row removed at a clean stop."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.unit.fakes import FakeStore
from tms.liveness import Heartbeat


class Failing(FakeStore):
    fail = True

    def heartbeat_record(self, beat: Any) -> None:
        if self.fail:
            raise OSError("database away")
        super().heartbeat_record(beat)


def test_beats_are_paced_by_the_clock_and_carry_the_state() -> None:
    store, t = FakeStore(), [0.0]
    running = ["tables/a/operations/1"]
    beat = Heartbeat(store, "e1", "executor", lambda: (False, (), tuple(running)),
                     interval_s=10.0, host="h", clock=lambda: t[0],
                     now=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    assert beat.tick() and not beat.tick()  # the second is not due yet
    t[0] = 9.9
    assert not beat.tick()
    running.clear()
    t[0] = 10.0
    assert beat.tick()
    assert [(b.process_id, b.kind, b.host, b.running) for b in store.beats] == [
        ("e1", "executor", "h", ("tables/a/operations/1",)), ("e1", "executor", "h", ())]
    assert store.beats[0].started_at == datetime(2026, 1, 1, tzinfo=UTC)


def test_a_failed_write_is_retried_and_a_clean_stop_removes_the_row() -> None:
    store, t = Failing(), [0.0]
    beat = Heartbeat(store, "s1", "scheduler", interval_s=5.0, clock=lambda: t[0])
    assert not beat.tick() and beat.beats == 0
    store.fail = False
    t[0] = 5.0
    assert beat.tick() and len(store.beats) == 1
    stop = threading.Event()
    stop.set()
    beat.run(stop)  # stopped at once: the row goes
    assert store.beats == []


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="kind"):
        Heartbeat(FakeStore(), "x", "api")
    with pytest.raises(ValueError, match="interval_s"):
        Heartbeat(FakeStore(), "x", "executor", interval_s=0)
