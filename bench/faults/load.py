"""Writers that keep notifying commits through faults, and the ledger of what was acknowledged.

A writer retries a notification on UNAVAILABLE and DEADLINE_EXCEEDED only (NotifyCommit is
idempotent on (table, commit id), so sending it again is safe), rotating between the API nodes
it knows, with exponential backoff and a bounded total time per commit. Any other failure is
recorded and never retried: it would fail the same way again, and the checks want to see it.

The ledger is the ground truth of the checks: every commit a writer was told was stored must be
found in PostgreSQL afterwards, and a commit first acknowledged as a duplicate after failed
attempts proves a write that committed while its caller saw a failure.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import grpc

from tms.v1 import tms_pb2, tms_pb2_grpc

CALL_TIMEOUT_S = 3.0  # one attempt; beyond the API's group-commit latency under load
RETRY_BUDGET_S = 90.0  # one commit's attempts and waits together: longer than any fault here
BACKOFF_INITIAL_S = 0.05
BACKOFF_MAX_S = 0.5  # short, so the recovery measured is the service's, not the writer's
RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
# reconnect quickly to an API node that comes back (gRPC's default backoff starts at 1 s and
# grows to 120 s, which would measure the client library rather than the service)
CHANNEL_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 100),
                   ("grpc.min_reconnect_backoff_ms", 100),
                   ("grpc.max_reconnect_backoff_ms", 1000)]

Key = tuple[str, str]  # (table id, commit id)


@dataclass
class Ledger:
    """What the writers sent and what they were told; thread-safe."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    sent: set[Key] = field(default_factory=set)
    acked: dict[Key, bool] = field(default_factory=dict)  # -> acknowledged as duplicate
    failed_attempts: Counter[str] = field(default_factory=Counter)  # status code -> attempts
    retried: set[Key] = field(default_factory=set)  # acked after at least one failed attempt
    refused: dict[Key, str] = field(default_factory=dict)  # a non-retryable answer
    gave_up: set[Key] = field(default_factory=set)  # the retry budget ran out
    ack_times: list[float] = field(default_factory=list)  # monotonic, one per ack

    def record_sent(self, keys: Sequence[Key]) -> None:
        with self.lock:
            self.sent.update(keys)

    def record_ack(self, key: Key, duplicate: bool, after_failures: bool, at: float) -> None:
        with self.lock:
            self.acked[key] = duplicate
            self.ack_times.append(at)
            if after_failures:
                self.retried.add(key)

    def record_failure(self, code: grpc.StatusCode, n: int = 1) -> None:
        with self.lock:
            self.failed_attempts[code.name] += n

    def longest_gap_s(self, start: float = 0.0, end: float = float("inf")) -> float:
        """The longest time without any acknowledgement between ``start`` and ``end``
        (monotonic) while writers were sending: how long the intake was down as they saw it."""
        with self.lock:
            times = sorted(t for t in self.ack_times if start <= t <= end)
        return max((b - a for a, b in zip(times, times[1:], strict=False)), default=0.0)

    def first_ack_after(self, t: float) -> float | None:
        """Monotonic time of the first acknowledgement at or after ``t``."""
        with self.lock:
            later = [a for a in self.ack_times if a >= t]
        return min(later) if later else None

    @property
    def duplicates_after_failure(self) -> int:
        """Commits whose first answer was "duplicate" after failed attempts: the failed attempt
        had committed, its caller did not know, and the retry counted nothing twice."""
        with self.lock:
            return sum(1 for k in self.retried if self.acked.get(k))

    def snapshot_counts(self) -> dict[str, int]:
        with self.lock:
            return {"commits_sent": len(self.sent), "acks": len(self.acked),
                    "acked_as_duplicate": sum(1 for d in self.acked.values() if d),
                    "acked_after_retry": len(self.retried),
                    "refused": len(self.refused), "gave_up": len(self.gave_up),
                    "failed_attempts": sum(self.failed_attempts.values())}


class Notifier:
    """Notifies commits through one or more API nodes, retrying transient failures."""

    def __init__(self, targets: Sequence[str], ledger: Ledger, *,
                 call_timeout_s: float = CALL_TIMEOUT_S,
                 retry_budget_s: float = RETRY_BUDGET_S) -> None:
        self.targets = list(targets)
        self.ledger = ledger
        self.call_timeout_s = call_timeout_s
        self.retry_budget_s = retry_budget_s
        self._channels = [grpc.insecure_channel(t, options=CHANNEL_OPTIONS) for t in targets]
        self._stubs = [tms_pb2_grpc.TableManagementServiceStub(c) for c in self._channels]
        self._rr = itertools.count()

    @property
    def stubs(self) -> list[tms_pb2_grpc.TableManagementServiceStub]:
        return list(self._stubs)

    def close(self) -> None:
        for c in self._channels:
            c.close()

    def _call(self, send: Callable[[tms_pb2_grpc.TableManagementServiceStub, float], object],
              keys: Sequence[Key]) -> object | None:
        """Send until answered; None when the budget ran out or the answer was a refusal."""
        self.ledger.record_sent(keys)
        deadline = time.monotonic() + self.retry_budget_s
        node = next(self._rr) % len(self._stubs)
        failures = 0
        while True:
            try:
                return send(self._stubs[node], self.call_timeout_s)
            except grpc.RpcError as e:
                code = e.code()  # type: ignore[attr-defined]
                self.ledger.record_failure(code)
                if code not in RETRYABLE:
                    with self.ledger.lock:
                        for k in keys:
                            self.ledger.refused[k] = f"{code.name}: {e.details()}"  # type: ignore[attr-defined]
                    return None
                failures += 1
                if code is grpc.StatusCode.UNAVAILABLE:
                    node = (node + 1) % len(self._stubs)  # that node may be gone: try another
                wait = min(BACKOFF_MAX_S, BACKOFF_INITIAL_S * 2 ** min(failures, 10))
                wait *= 0.5 + random.random() / 2
                if time.monotonic() + wait > deadline:
                    with self.ledger.lock:
                        self.ledger.gave_up.update(keys)
                    return None
                time.sleep(wait)

    def notify(self, table_id: str, commit_id: str) -> bool:
        """One NotifyCommit; True once acknowledged."""
        key = (table_id, commit_id)
        req = tms_pb2.NotifyCommitRequest(table=f"tables/{table_id}", commit_id=commit_id)
        attempts: list[int] = []

        def send(stub: tms_pb2_grpc.TableManagementServiceStub, timeout: float) -> object:
            attempts.append(1)
            return stub.NotifyCommit(req, timeout=timeout)

        res = self._call(send, [key])
        if res is None:
            return False
        self.ledger.record_ack(key, bool(res.duplicate), len(attempts) > 1,  # type: ignore[attr-defined]
                               time.monotonic())
        return True

    def notify_batch(self, commits: Sequence[Key]) -> int:
        """One NotifyCommits call for up to 1000 commits; returns how many were acknowledged."""
        req = tms_pb2.NotifyCommitsRequest(commits=[
            tms_pb2.NotifyCommitRequest(table=f"tables/{t}", commit_id=c) for t, c in commits])
        attempts: list[int] = []

        def send(stub: tms_pb2_grpc.TableManagementServiceStub, timeout: float) -> object:
            attempts.append(1)
            return stub.NotifyCommits(req, timeout=timeout)

        res = self._call(send, commits)
        if res is None:
            return 0
        now = time.monotonic()
        ok = 0
        for key, r in zip(commits, res.results, strict=True):  # type: ignore[attr-defined]
            if r.error.code:
                with self.ledger.lock:
                    self.ledger.refused[key] = f"{r.error.code}: {r.error.message}"
                continue
            self.ledger.record_ack(key, bool(r.duplicate), len(attempts) > 1, now)
            ok += 1
        return ok


@dataclass
class Burst:
    """``count`` commits over ``tables``, sent by ``threads`` writers; ``batch`` > 1 sends every
    other call as a NotifyCommits of that many commits."""

    notifier: Notifier
    tables: Sequence[str]
    count: int
    prefix: str
    threads: int = 8
    batch: int = 1
    progress: int = 0
    started_at: float = 0.0  # monotonic
    finished_at: float = 0.0  # monotonic: when the last writer ran out of commits
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _next: itertools.count[int] = field(default_factory=itertools.count)

    def key(self, i: int) -> Key:
        return self.tables[i % len(self.tables)], f"{self.prefix}-{i}"

    def _take(self, n: int) -> list[int]:
        with self._lock:
            start = self.progress
            end = min(self.count, start + n)
            self.progress = end
        return list(range(start, end))

    def _worker(self, index: int) -> None:
        use_batch = self.batch > 1 and index % 2 == 1
        while True:
            ids = self._take(self.batch if use_batch else 1)
            if not ids:
                with self._lock:
                    self.finished_at = max(self.finished_at, time.monotonic())
                return
            if use_batch:
                self.notifier.notify_batch([self.key(i) for i in ids])
            else:
                self.notifier.notify(*self.key(ids[0]))

    def run(self) -> list[threading.Thread]:
        """Start the writers; join the returned threads to wait for the burst to end."""
        self.started_at = time.monotonic()
        ts = [threading.Thread(target=self._worker, args=(i,), daemon=True,
                               name=f"burst-{self.prefix}-{i}") for i in range(self.threads)]
        for t in ts:
            t.start()
        return ts


@dataclass
class SteadyWriters:
    """Writers that keep notifying new commits until stopped, ``rate_per_s`` in total (0: as
    fast as they can), for faults that must happen under load."""

    notifier: Notifier
    tables: Sequence[str]
    prefix: str
    threads: int = 4
    rate_per_s: float = 0.0
    stop: threading.Event = field(default_factory=threading.Event)
    started_at: float = 0.0  # monotonic
    stopped_at: float = 0.0  # monotonic
    _counter: itertools.count[int] = field(default_factory=itertools.count)
    _threads: list[threading.Thread] = field(default_factory=list)

    def _worker(self, index: int) -> None:
        gap = self.threads / self.rate_per_s if self.rate_per_s else 0.0
        while not self.stop.is_set():
            i = next(self._counter)
            self.notifier.notify(self.tables[i % len(self.tables)], f"{self.prefix}-{i}")
            if gap:
                self.stop.wait(gap)

    def start(self) -> SteadyWriters:
        self.started_at = time.monotonic()
        self._threads = [threading.Thread(target=self._worker, args=(i,), daemon=True,
                                          name=f"steady-{self.prefix}-{i}")
                         for i in range(self.threads)]
        for t in self._threads:
            t.start()
        return self

    def finish(self, timeout_s: float = RETRY_BUDGET_S + CALL_TIMEOUT_S) -> bool:
        """Stop and wait for the writers (each finishes the commit it is retrying)."""
        self.stop.set()
        self.stopped_at = time.monotonic()
        deadline = time.monotonic() + timeout_s
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._threads)

    def longest_gap_s(self) -> float:
        """The longest time without an acknowledgement while these writers were sending."""
        return round(self.notifier.ledger.longest_gap_s(self.started_at, self.stopped_at), 2)


def probe_until_ok(notifier: Notifier, table_id: str, prefix: str, timeout_s: float,
                   step_s: float = 0.05) -> float | None:
    """Seconds until a fresh NotifyCommit is acknowledged (each try a single attempt), or None
    after ``timeout_s``: the recovery time as a writer sees it."""
    t0 = time.monotonic()
    stubs = notifier.stubs
    for i in itertools.count():
        if time.monotonic() - t0 > timeout_s:
            return None
        key = (table_id, f"{prefix}-{i}")
        notifier.ledger.record_sent([key])
        try:
            res = stubs[i % len(stubs)].NotifyCommit(
                tms_pb2.NotifyCommitRequest(table=f"tables/{table_id}", commit_id=key[1]),
                timeout=notifier.call_timeout_s)
        except grpc.RpcError as e:
            notifier.ledger.record_failure(e.code())  # type: ignore[attr-defined]
            time.sleep(step_s)
            continue
        now = time.monotonic()
        notifier.ledger.record_ack(key, res.duplicate, False, now)
        return now - t0
    return None
