"""Deciding for many tables at once when inspections wait on I/O.

At object-store latency (about 100 ms per metadata read) one table's inspection is almost all
waiting, so one thread deciding table after table reaches a few hundred tables a minute. The
loop hands a batch to a :class:`DecisionRunner`, which:

- decides in the calling thread, one table after another, while decisions are fast (a
  constant plugin, a table skipped as unchanged): no thread handoff, so CPU per decision
  stays what the sequential loop costs; the tables the plugin expects to be quick (its
  ``prepare`` found them unchanged) go first that way, even when the batch's others wait;
- spreads the rest of the batch over up to ``threads`` worker threads as soon as
  ``SLOW_IN_A_ROW`` decisions in a row each took longer than ``waiting_s`` (they were
  waiting: one slow decision alone is as likely the machine's other load preempting us), and
  starts the next batch spread while the last one's decisions were waiting on average;
- bounds the decisions in flight per catalog with one semaphore each (a decision reads its
  catalog's metadata one file after another, so this bounds metadata reads in flight): a
  catalog's storage (and a catalog server asked once per table) is never asked more than
  ``reads_per_catalog`` things at once (see :data:`CATALOG_READS_IN_FLIGHT`);
- keeps every decision that finished when another raised: the exceptions come back per item,
  and after a ``stop_on`` exception (ZooKeeper lost) no new decision starts; those not started
  are reported as not decided, so the loop gives their marks back.

A batch is finished (every worker idle) before :meth:`DecisionRunner.run` returns, so the
loop's shard ownership is unchanged: shards are only given up between passes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

DECISION_THREADS = 64
# Decisions in flight per catalog. A decision reads metadata files one after another, and
# the catalog server itself sees one call per batch where it has a batch call (SQL, Hive:
# tms.formats.iceberg.pointers), so this bounds reads in flight to the catalog's storage.
# An object store serves thousands of reads a second per prefix; what limits one scheduler
# is in flight / (reads per table x latency): at 100 ms a read and 2-3 reads a table, 32
# caps a catalog at 6,000-9,600 tables a minute, 64 leaves room above 10,000. Lower it for
# a catalog server that takes one call per table (REST, Glue) and cannot take 64 at once.
CATALOG_READS_IN_FLIGHT = 64
MAX_DECISION_THREADS = 1024
MAX_CATALOG_READS_IN_FLIGHT = 1024
# a decision longer than this was waiting (on a catalog or on storage): bring the threads in
WAITING_S = 0.002
SLOW_IN_A_ROW = 2
# a decision expected quick (unchanged table) that took longer than this did read after all:
# far above what a loaded machine adds to a fast decision, far below one object-store read
QUICK_WAITING_S = 0.05

T = TypeVar("T")
R = TypeVar("R")


class CatalogSlots:
    """One semaphore per catalog: how many decisions of one catalog may be in flight."""

    def __init__(self, per_catalog: int) -> None:
        if per_catalog < 1:
            raise ValueError("reads in flight per catalog must be >= 1")
        self.per_catalog = per_catalog
        self._sems: dict[str, threading.BoundedSemaphore] = {}
        self._lock = threading.Lock()

    @contextmanager
    def slot(self, catalog: str) -> Iterator[None]:
        with self._lock:
            sem = self._sems.get(catalog)
            if sem is None:
                sem = self._sems[catalog] = threading.BoundedSemaphore(self.per_catalog)
        with sem:
            yield


@dataclass
class Outcome(Generic[R]):
    """What a batch came to: results and exceptions by the item's index; an index in neither
    was never started (a ``stop_on`` exception came first). ``stopped`` is that exception."""

    results: dict[int, R] = field(default_factory=dict)
    failures: dict[int, BaseException] = field(default_factory=dict)
    stopped: BaseException | None = None
    spread: bool = False


class DecisionRunner:
    """Runs one function over a batch, sequentially while it is fast, on threads once it waits.
    Thread-safe for one caller at a time (the scheduler loop); ``close`` ends the workers."""

    def __init__(self, threads: int = 1, reads_per_catalog: int = CATALOG_READS_IN_FLIGHT, *,
                 waiting_s: float = WAITING_S,
                 clock: Callable[[], float] = time.perf_counter,
                 stop_on: tuple[type[BaseException], ...] = ()) -> None:
        if threads < 1:
            raise ValueError("decision threads must be >= 1")
        self.threads = threads
        self.slots = CatalogSlots(reads_per_catalog)
        self.waiting_s = waiting_s
        self._clock = clock
        self._stop_on = stop_on
        self._pool: ThreadPoolExecutor | None = None
        self._waiting = False  # the last batch's decisions were waiting: start spread
        self.spread_batches = 0  # batches handed to the workers (for tests and the bench)
        self.stopping = threading.Event()  # a stop_on exception came: for tests

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def run(self, items: Sequence[T], catalog_of: Callable[[T], str],
            decide: Callable[[T], R], quick: Callable[[T], bool] | None = None
            ) -> Outcome[R]:
        """``quick``: items expected to decide without waiting (an unchanged table). They
        go first, in the calling thread, whatever the last batch did; should
        ``SLOW_IN_A_ROW`` in a row of them take longer than ``QUICK_WAITING_S`` (they read
        after all), the rest of them join the others."""
        out: Outcome[R] = Outcome()
        self.stopping.clear()
        order = list(range(len(items)))
        waited = False  # quick ones waited after all: the rest goes straight to the threads
        if quick is not None:
            fast = [i for i in order if quick(items[i])]
            if fast:
                chosen = set(fast)
                rest = [i for i in order if i not in chosen]
                left = self._sequential(out, fast, items, decide,
                                        max(self.waiting_s, QUICK_WAITING_S))
                if out.stopped is not None:
                    return out
                order = fast[len(fast) - left:] + rest if left else rest
                waited = left > 0
        if order and not waited and not (self.threads > 1 and self._waiting):
            left = self._sequential(out, order, items, decide, self.waiting_s)
            if out.stopped is not None:
                return out
            self._waiting = False
            order = order[len(order) - left:] if left else []
        if order:
            self._spread(out, order, items, catalog_of, decide)
        return out

    def _sequential(self, out: Outcome[R], todo: list[int], items: Sequence[T],
                    decide: Callable[[T], R], waiting_s: float) -> int:
        """Decides ``todo`` in order in the calling thread until ``SLOW_IN_A_ROW`` in a row
        took longer than ``waiting_s`` (with threads to spread to) or a ``stop_on``
        exception; returns how many of ``todo`` are left, at its end."""
        slow = 0
        for n, i in enumerate(todo):
            t0 = self._clock()
            self._one(out, i, items[i], decide)
            if out.stopped is not None:
                return 0
            slow = slow + 1 if self._clock() - t0 > waiting_s else 0
            if self.threads > 1 and slow >= SLOW_IN_A_ROW:
                return len(todo) - n - 1
        return 0

    def _one(self, out: Outcome[R], i: int, item: T, decide: Callable[[T], R]) -> None:
        try:
            out.results[i] = decide(item)
        except BaseException as e:  # noqa: BLE001 - reported per item, never lost
            out.failures[i] = e
            if isinstance(e, self._stop_on) and out.stopped is None:
                out.stopped = e
                self.stopping.set()

    def _spread(self, out: Outcome[R], todo: list[int], items: Sequence[T],
                catalog_of: Callable[[T], str], decide: Callable[[T], R]) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="tms-decide")
        out.spread = True
        self.spread_batches += 1
        lock = threading.Lock()
        walls: list[float] = []

        def task(i: int) -> None:
            with self.slots.slot(catalog_of(items[i])):
                if out.stopped is not None:
                    return  # ZooKeeper lost meanwhile: not started, its mark goes back
                t0 = self._clock()
                self._one(out, i, items[i], decide)
                with lock:
                    walls.append(self._clock() - t0)

        futures: list[Future[None]] = [self._pool.submit(task, i) for i in todo]
        wait(futures)
        self._waiting = bool(walls) and sum(walls) / len(walls) > self.waiting_s
