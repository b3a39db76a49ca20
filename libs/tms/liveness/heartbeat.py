"""A process's heartbeat row: who it is, since when, whether it leads, the shards it holds
and the operations it runs, written every ``interval_s`` by the loop that calls ``tick`` (or
by ``run`` on a thread of its own). The clocks are injectable: ``clock`` (monotonic) paces the
writes, ``now`` stamps the start; the heartbeat time itself is the database's.

A failed write is logged and retried at the next tick: liveness reporting never stops the
work it reports on."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

import structlog

from tms.domain.fleet import ProcessBeat
from tms.storage.roles import LivenessStore

HEARTBEAT_INTERVAL_S = 10.0

log = structlog.get_logger("tms.liveness")

State = Callable[[], tuple[bool, tuple[int, ...], tuple[str, ...]]]  # leader, shards, running


def _nothing() -> tuple[bool, tuple[int, ...], tuple[str, ...]]:
    return False, (), ()


class Heartbeat:
    def __init__(self, store: LivenessStore, process_id: str, kind: str,
                 state: State = _nothing, *, interval_s: float = HEARTBEAT_INTERVAL_S,
                 host: str | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        if kind not in ("scheduler", "executor"):
            raise ValueError(f"kind must be scheduler or executor, not {kind!r}")
        if not interval_s > 0:
            raise ValueError("interval_s must be positive")
        self.store = store
        self.process_id = process_id
        self.kind = kind
        self.state = state
        self.interval_s = interval_s
        self.host = host if host is not None else socket.gethostname()
        self._clock = clock
        self.started_at = now()
        self._last = float("-inf")
        self.beats = 0  # heartbeats written (for tests)

    def tick(self) -> bool:
        """Write the heartbeat if one is due; True when it was written."""
        now = self._clock()
        if now - self._last < self.interval_s:
            return False
        self._last = now
        leader, shards, running = self.state()
        try:
            self.store.heartbeat_record(ProcessBeat(
                self.process_id, self.kind, self.host, self.started_at, self.interval_s,
                leader, tuple(shards), tuple(running)))
        except Exception as e:
            log.warning("heartbeat not recorded", process=self.process_id, error=str(e))
            return False
        self.beats += 1
        return True

    def run(self, stop: threading.Event) -> None:
        """Tick until ``stop``; then remove the row (a clean stop is not a death)."""
        while not stop.is_set():
            self.tick()
            stop.wait(min(self.interval_s, 1.0))
        self.forget()

    def forget(self) -> None:
        try:
            self.store.heartbeat_forget(self.process_id)
        except Exception as e:
            log.warning("heartbeat row not removed", process=self.process_id, error=str(e))
