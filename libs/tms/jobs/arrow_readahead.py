"""An arrow task's inputs opened and decoded ahead of its writer, on the cores its task has
to itself.

A file group that compacts into one output file is one Spark task, and a task read its
inputs one row group at a time between the writer's encodes: one core busy while the
executor's others idle (the 400-commit table of issue 17: one task, 400 files, ~0.3 s of
pyarrow on one core). pyarrow releases the interpreter lock while it reads, decodes, encodes
and compresses, so a few threads reading the next row groups while the task's own thread
writes use the idle cores. The driver gives a task threads only when the executor has
cores its other tasks do not take (``threads_per_task``); with as many tasks as cores each
reads as before, one row group at a time.

Order and memory: row groups are handed to the writer in the order of the task's inputs,
whatever order they finish in, and the decoded row groups waiting for the writer are
bounded (``READ_AHEAD_BYTES`` of uncompressed size, at least one). Reads of one file are
serialised (one reader per Parquet file at a time); different files are read in parallel.
The checks (location, schema, rows) are those of the sequential path, made by the same
function on every input before its rows are used.

Standard library at import.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

MAX_READ_THREADS = 4  # past a few threads the writer's own thread is the bound
READ_AHEAD_BYTES = 256 * 1024 * 1024  # uncompressed row groups decoded ahead of the writer
T = TypeVar("T")
R = TypeVar("R")


def threads_per_task(cores: int, tasks: int) -> int:
    """Reader threads for each of ``tasks`` tasks running on ``cores`` cores: the cores the
    tasks leave idle, shared out, within ``MAX_READ_THREADS``; 1 means read in the task's own
    thread, as before."""
    if tasks <= 0 or cores <= tasks:
        return 1
    return max(1, min(MAX_READ_THREADS, cores // tasks))


def ordered_map(pool: ThreadPoolExecutor, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``fn`` over ``items`` on the pool, results in order; the first failure in order is
    raised once every call ended (none is left running behind the caller)."""
    futures = [pool.submit(fn, item) for item in items]
    for f in futures:
        f.exception()  # wait for all: the caller closes what they opened
    return [f.result() for f in futures]


class _Unit:
    __slots__ = ("pf", "group", "offset", "length", "bytes", "lock")

    def __init__(self, pf: Any, group: int, offset: int, length: int, size: int,
                 lock: threading.Lock) -> None:
        self.pf, self.group, self.offset, self.length = pf, group, offset, length
        self.bytes, self.lock = size, lock


def units(opened: Sequence[tuple[Any, int, int]]) -> list[_Unit]:
    """The row groups (and the rows of each) that the slices ``(ParquetFile, skip, take)``
    cover, in order, each with its share of the group's uncompressed size."""
    out: list[_Unit] = []
    for pf, skip, take in opened:
        lock = threading.Lock()
        start = 0
        meta = pf.metadata
        for i in range(meta.num_row_groups):
            rg = meta.row_group(i)
            n = rg.num_rows
            lo, hi = max(skip, start), min(skip + take, start + n)
            if lo < hi:
                share = rg.total_byte_size * (hi - lo) // max(n, 1)
                out.append(_Unit(pf, i, lo - start, hi - lo, share, lock))
            start += n
    return out


def _read(unit: _Unit) -> Any:
    with unit.lock:
        table = unit.pf.read_row_group(unit.group, use_threads=False)
    return table.slice(unit.offset, unit.length)


def slices(pool: ThreadPoolExecutor, opened: Sequence[tuple[Any, int, int]],
           limit_bytes: int = READ_AHEAD_BYTES) -> Iterator[Any]:
    """The slices' rows, one row group at a time and in order, read ahead on ``pool``."""
    todo = deque(units(opened))
    pending: deque[tuple[Future[Any], int]] = deque()
    inflight = 0
    try:
        while todo or pending:
            while todo and (not pending or inflight + todo[0].bytes <= limit_bytes):
                unit = todo.popleft()
                pending.append((pool.submit(_read, unit), unit.bytes))
                inflight += unit.bytes
            future, size = pending.popleft()
            inflight -= size
            yield future.result()
    finally:  # the writer stopped early: what was submitted and not started is not read
        for future, _ in pending:
            future.cancel()
