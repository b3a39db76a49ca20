"""Reading an arrow task's inputs ahead of its writer (``arrow_readahead``): the same bytes
as reading in the task's thread, in order, with bounded memory, one reader per file."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tms.jobs import arrow_readahead, arrow_task
from tms.jobs.arrow_readahead import slices, threads_per_task

COLUMNS = [(1, "id", "long", True), (2, "v", "string", False)]
FORMAT = {"codec": "zstd", "level": "3", "row_group_bytes": 1024 * 1024,
          "page_size_bytes": 1024 * 1024, "page_row_limit": 20_000,
          "dict_size_bytes": 2 * 1024 * 1024}


def _write(path: Path, start: int, n: int, row_group: int) -> None:
    schema = arrow_task.output_schema(COLUMNS)
    t = pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                  "v": pa.array([f"v{i % 97}" for i in range(start, start + n)])})
    pq.write_table(t.cast(schema), path, compression="zstd", row_group_size=row_group)


@pytest.mark.parametrize("threads", [2, 4])
def test_read_ahead_writes_the_same_bytes_as_reading_in_the_task(tmp_path: Path,
                                                                 threads: int) -> None:
    """Many files of several row groups, cut into slices that start and end inside row
    groups: the outputs are byte for byte the same whichever way they were read."""
    inputs, want = [], []
    start = 0
    for i in range(60):
        n = 37 + (i * 53) % 400
        _write(tmp_path / f"in{i}.parquet", start, n, row_group=29 + i % 50)
        skip, take = i % 5, n - i % 5 - i % 3
        inputs.append((str(tmp_path / f"in{i}.parquet"), skip, take, n))
        want += range(start + skip, start + skip + take)
        start += n
    outs = {}
    for label, k in (("task", 1), ("ahead", threads)):
        task = {"group": 0, "output": str(tmp_path / f"out-{label}.parquet"),
                "allowed": [str(tmp_path)], "columns": COLUMNS, "format": FORMAT,
                "inputs": inputs, "read_threads": k}
        got = arrow_task.run(task)
        assert "refused" not in got, got
        outs[label] = (tmp_path / f"out-{label}.parquet").read_bytes()
        assert got["rows"] == sum(take for _, _, take, _ in inputs)
    assert outs["task"] == outs["ahead"]
    assert pq.read_table(tmp_path / "out-ahead.parquet").column("id").to_pylist() == want


class _FakeFile:
    """A ParquetFile's metadata and read_row_group, counting what is read and how many
    readers it has at once."""

    def __init__(self, groups: int, rows: int, size: int, log: list[Any]) -> None:
        self.groups, self.rows, self.size, self.log = groups, rows, size, log
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    @property
    def metadata(self) -> Any:
        rg = type("RG", (), {"num_rows": self.rows, "total_byte_size": self.size})()
        return type("Meta", (), {"num_row_groups": self.groups,
                                 "row_group": staticmethod(lambda i: rg)})()

    def read_row_group(self, i: int, use_threads: bool = False) -> Any:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        self.log.append(("read", id(self), i))
        time.sleep(0.002)  # long enough for another reader of this file to overlap
        with self._lock:
            self.active -= 1
        return pa.table({"f": pa.array([id(self) % 1000] * self.rows), "g": [i] * self.rows})


def test_rows_come_in_order_with_bounded_memory_and_one_reader_per_file() -> None:
    log: list[Any] = []
    files = [_FakeFile(groups=6, rows=10, size=100, log=log) for _ in range(5)]
    opened = [(f, 0, 60) for f in files]
    order = []
    with ThreadPoolExecutor(4) as pool:
        for part in slices(pool, opened, limit_bytes=300):
            log.append(("used",))
            order.append((part.column("f")[0].as_py(), part.column("g")[0].as_py()))
            reads = sum(1 for e in log if e[0] == "read")
            used = sum(1 for e in log if e[0] == "used")
            assert reads <= used + 3  # 300 bytes of 100-byte groups ahead of the writer, at most
    assert order == [(id(f) % 1000, g) for f in files for g in range(6)]
    assert max(f.max_active for f in files) == 1


def test_a_single_group_larger_than_the_limit_is_still_read() -> None:
    f = _FakeFile(groups=3, rows=5, size=10_000, log=[])
    with ThreadPoolExecutor(2) as pool:
        parts = list(slices(pool, [(f, 2, 11)], limit_bytes=100))
    assert [p.num_rows for p in parts] == [3, 5, 3]  # rows 2..12 of three groups of 5


def test_a_writer_that_stops_early_leaves_the_rest_unread() -> None:
    log: list[Any] = []
    files = [_FakeFile(groups=50, rows=1, size=1, log=log)]
    with ThreadPoolExecutor(2) as pool:
        gen = slices(pool, [(files[0], 0, 50)], limit_bytes=5)
        next(gen)
        gen.close()
    assert sum(1 for e in log if e[0] == "read") <= 7  # what was in flight, not all 50


def test_ordered_map_raises_the_first_failure_in_order_after_all_ended() -> None:
    ended: list[int] = []

    def fn(i: int) -> int:
        time.sleep(0.001 * (10 - i))
        ended.append(i)
        if i in (3, 7):
            raise ValueError(f"bad {i}")
        return i * 2

    with ThreadPoolExecutor(4) as pool:
        assert arrow_readahead.ordered_map(pool, lambda i: i * 2, list(range(10))) == [
            i * 2 for i in range(10)]
        with pytest.raises(ValueError, match="bad 3"):
            arrow_readahead.ordered_map(pool, fn, list(range(10)))
    assert sorted(ended) == list(range(10))


def test_an_input_refused_in_a_reader_thread_refuses_the_task(tmp_path: Path) -> None:
    """A symlink to another tenant's file among many inputs: refused as in the task's own
    thread, nothing written, whichever thread met it."""
    lake, other = tmp_path / "lake", tmp_path / "other"
    lake.mkdir()
    other.mkdir()
    inputs = []
    for i in range(20):
        _write(lake / f"in{i}.parquet", i * 10, 10, row_group=4)
        inputs.append((str(lake / f"in{i}.parquet"), 0, 10, 10))
    _write(other / "theirs.parquet", 0, 10, row_group=4)
    (lake / "in13.parquet").unlink()
    (lake / "in13.parquet").symlink_to(other / "theirs.parquet")
    task = {"group": 0, "output": str(lake / "out" / "o.parquet"), "allowed": [str(lake)],
            "columns": COLUMNS, "format": FORMAT, "inputs": inputs, "read_threads": 4}
    got = arrow_task.run(task)
    assert got["refused"] == "location" and "in13" in got["reason"]
    assert not (lake / "out").exists()


@pytest.mark.parametrize("cores,tasks,want", [
    (2, 1, 2), (2, 2, 1), (2, 3, 1), (8, 2, 4), (64, 1, 4), (8, 3, 2), (1, 1, 1), (4, 0, 1)])
def test_threads_are_the_cores_the_tasks_leave_idle(cores: int, tasks: int, want: int) -> None:
    assert threads_per_task(cores, tasks) == want
