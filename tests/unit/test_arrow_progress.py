"""How the arrow path runs and batches its file groups (``tms.jobs.arrow_progress``): Iceberg's
arithmetic for commits, the bound on groups at once, and what a failure does without partial
progress. The commits themselves run on real Spark (tests/integration/test_arrow_rewrite.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tms.jobs.arrow_progress import (
    DEFAULT_MAX_COMMITS,
    DEFAULT_MAX_CONCURRENT,
    PROBE_FILES_PER_TASK,
    Groups,
    Progress,
    probe_tasks,
    run_bounded,
    single_commit,
)


def test_the_options_and_icebergs_defaults() -> None:
    assert Progress.of({}) == Progress(False, DEFAULT_MAX_COMMITS, DEFAULT_MAX_CONCURRENT)
    assert (DEFAULT_MAX_COMMITS, DEFAULT_MAX_CONCURRENT) == (10, 5)  # RewriteDataFiles'
    got = Progress.of({"partial-progress.enabled": "true", "partial-progress.max-commits": "2",
                       "max-concurrent-file-group-rewrites": "3"})
    assert got == Progress(True, 2, 3)


@pytest.mark.parametrize(("groups", "max_commits", "per_commit", "expected"), [
    (3, 10, 1, 3), (3, 2, 2, 2), (3, 1, 3, 1), (10, 10, 1, 10), (11, 10, 2, 10),
    (25, 10, 3, 10), (1, 10, 1, 1)])
def test_groups_per_commit_is_icebergs_ceiling(groups: int, max_commits: int,
                                               per_commit: int, expected: int) -> None:
    p = Progress(True, max_commits)
    assert p.groups_per_commit(groups) == per_commit
    assert p.expected_commits(groups) == expected
    assert -(-groups // per_commit) <= max_commits  # the batches never exceed max-commits


@pytest.mark.parametrize("workers", [1, 2, 5])
def test_at_most_workers_groups_run_at_once(workers: int) -> None:
    running, most, lock = 0, 0, threading.Lock()
    seen: list[int] = []

    def work(i: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02)
        with lock:
            running -= 1
        return i

    def done(i: int, fut: Any) -> bool:
        seen.append(fut.result())
        return True

    run_bounded(work, 12, workers, done)
    assert sorted(seen) == list(range(12)) and 1 <= most <= workers


def test_a_stop_starts_nothing_more() -> None:
    started: list[int] = []

    def work(i: int) -> int:
        started.append(i)
        if i == 0:
            raise RuntimeError("boom")
        return i

    run_bounded(work, 50, 1, lambda i, fut: fut.exception() is None)
    assert started == [0]  # one worker: the failure stopped everything queued after it


def test_without_partial_progress_a_failure_deletes_every_output() -> None:
    removed: list[int] = []
    committed: list[Any] = []

    def rewrite(i: int) -> list[dict[str, Any]]:
        if i == 2:
            raise ValueError("rows differ")
        return [{"group": i}]

    g = Groups(["g0", "g1", "g2"], [1, 1, 1], rewrite, removed.append, lambda: None)
    with pytest.raises(ValueError, match="rows differ"):
        single_commit(g, Progress(max_concurrent=1), committed.append)
    assert sorted(removed) == [0, 1, 2] and committed == []

    ok = Groups(["g0", "g1"], [1, 1], lambda i: [{"group": i}], removed.append, lambda: None)
    written = single_commit(ok, Progress(), committed.append)
    assert committed == [["g0", "g1"]] and len(written) == 2  # one commit of all


def test_probe_reads_each_input_once_in_bounded_tasks() -> None:
    base = {"allowed": ["/w"], "columns": []}
    tasks = [{**base, "group": 0, "output": "o0",
              "inputs": [(f"/w/f{i}", 0, 5, 10) for i in range(40)]},
             {**base, "group": 0, "output": "o1",
              "inputs": [("/w/f39", 5, 5, 10)] + [(f"/w/g{i}", 0, 3, 3) for i in range(5)]}]
    probes = probe_tasks(tasks)
    paths = [p for t in probes for p, *_ in t["inputs"]]
    assert len(paths) == len(set(paths)) == 45
    assert all(len(t["inputs"]) <= PROBE_FILES_PER_TASK for t in probes)
    assert ("/w/f39", 0, 10, 10) in probes[1]["inputs"]  # the whole file, its row count
