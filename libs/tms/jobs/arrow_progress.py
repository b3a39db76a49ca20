"""How the arrow data path (``arrow_rewrite.py``) runs and commits its file groups: as Iceberg's
``RewriteDataFilesSparkAction`` does for the procedure, with the same options.

- ``max-concurrent-file-group-rewrites`` (Iceberg's default 5): at most that many groups are
  being rewritten at once, each group one Spark job of its own (a pool of driver threads, as
  the action's rewrite service), so a large compaction does not hold every output at once.
- Without ``partial-progress.enabled``: every group is written, then one commit of all of
  them; a group that fails stops the rest and every output is deleted (the action's
  ``doExecute``).
- With it: Iceberg's own ``RewriteDataFilesCommitManager.CommitService`` with
  ``ceil(groups / partial-progress.max-commits)`` groups per commit (Iceberg's default 10
  commits), offered each group as it is written, so there are at most max-commits commits.
  A commit that fails (a concurrent writer's conflicting commit) deletes that batch's new files
  and is left out of the result; the others stand. A group whose rewrite fails is counted in
  ``failed_data_files_count`` (its input files, as the action's ``rewriteFailures``) and its
  outputs deleted; the others go on. Before any group runs, every input passes the tasks' own
  checks (``arrow_task.probe``: location, schema, rows), so a group refused for Spark's path
  never follows another group's commit: the compaction is then all Spark's. A refusal or
  pyarrow missing in the workers still ends the whole rewrite (``stops_all``): what was
  committed stays, as the action's commits do, and the error is raised.

The result has the procedure's columns (only committed groups count) plus ``arrow_commits``:
commits made, commits that failed (Iceberg's count: ``min(groups, max-commits)`` minus those
made) and groups left uncommitted. Standard library only; the JVM objects come in.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

# RewriteDataFiles' defaults for the options below
DEFAULT_MAX_CONCURRENT = 5
DEFAULT_MAX_COMMITS = 10
PROBE_FILES_PER_TASK = 32  # footers one probe task reads: enough tasks to use the cores


@dataclass(frozen=True)
class Progress:
    """The procedure's options for running and committing groups (validated by the job's
    ``parse_options`` before this reads them)."""

    partial: bool = False
    max_commits: int = DEFAULT_MAX_COMMITS
    max_concurrent: int = DEFAULT_MAX_CONCURRENT

    @classmethod
    def of(cls, options: Mapping[str, str]) -> Progress:
        return cls(options.get("partial-progress.enabled", "false") == "true",
                   int(options.get("partial-progress.max-commits", DEFAULT_MAX_COMMITS)),
                   int(options.get("max-concurrent-file-group-rewrites",
                                   DEFAULT_MAX_CONCURRENT)))

    def groups_per_commit(self, groups: int) -> int:
        """Iceberg's ``IntMath.divide(totalGroupCount, maxCommits, CEILING)``."""
        return max(1, -(-groups // self.max_commits))

    def expected_commits(self, groups: int) -> int:
        """The commits the action counts on (``min(totalGroupCount, maxCommits)``)."""
        return min(groups, self.max_commits)


def run_bounded(work: Callable[[int], Any], count: int, workers: int,
                done: Callable[[int, Future[Any]], bool]) -> None:
    """``work(i)`` for ``i`` in ``range(count)``, in order, at most ``workers`` at once: the
    next starts when one finishes. ``done`` sees each as it finishes (in the calling thread)
    and returns False to stop: nothing more starts, what runs is waited for."""
    with ThreadPoolExecutor(max_workers=max(1, min(workers, count)),
                            thread_name_prefix="tms-arrow-group") as pool:
        running: dict[Future[Any], int] = {}
        started, stopped = 0, False
        while True:
            while not stopped and started < count and len(running) < workers:
                running[pool.submit(work, started)] = started
                started += 1
            if not running:
                return
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                if not done(running.pop(fut), fut):
                    stopped = True


def probe_tasks(tasks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The inputs of ``tasks`` once each (a file split over two outputs is read by both),
    ``PROBE_FILES_PER_TASK`` to a probe task."""
    seen: dict[str, tuple[str, int, int, int]] = {}
    base: Mapping[str, Any] = tasks[0] if tasks else {}
    for t in tasks:
        for path, _, _, rows in t["inputs"]:
            seen.setdefault(path, (path, 0, rows, rows))
    inputs = list(seen.values())
    return [{"inputs": inputs[i:i + PROBE_FILES_PER_TASK], "allowed": base["allowed"],
             "columns": base["columns"], "output": ""}
            for i in range(0, len(inputs), PROBE_FILES_PER_TASK)]


@dataclass
class Outcome:
    """What became of the groups: the result columns and the commits."""

    committed: list[Any]
    failed_files: int = 0
    commits: int = 0
    failed_commits: int = 0
    uncommitted: int = 0

    def info(self) -> dict[str, int]:
        return {"commits": self.commits, "failed_commits": self.failed_commits,
                "groups_not_committed": self.uncommitted}


class GroupRefused(Exception):
    """A task of the group refused its input (``arrow_task.TaskRefused``'s kind and reason);
    the group's outputs are already deleted."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def stops_all(exc: BaseException) -> bool:
    """Whether a group's failure ends the whole rewrite even with partial progress: a refusal
    (the compaction is refused or Spark's) or pyarrow missing in the workers (every group would
    fail the same way)."""
    return isinstance(exc, GroupRefused) or "No module named 'pyarrow'" in str(exc)


@dataclass
class Groups:
    """The planned groups (Iceberg ``RewriteFileGroup``s) and what the rewrite does with one:
    ``rewrite(i)`` runs group ``i``'s tasks and sets its output files (deleting its outputs
    when it fails), ``remove(i)`` deletes them, ``hold()`` is the test hook before the first
    commit (``arrow_rewrite.hold_for_tests``)."""

    groups: list[Any]
    input_files: list[int]
    rewrite: Callable[[int], list[dict[str, Any]]]
    remove: Callable[[int], None]
    hold: Callable[[], None]

    def __len__(self) -> int:
        return len(self.groups)


def single_commit(g: Groups, progress: Progress, commit: Callable[[list[Any]], Any]
                  ) -> list[dict[str, Any]]:
    """Every group written (at most ``max_concurrent`` at once), then ``commit(groups)`` once;
    the first failure stops the rest, deletes every output and is raised (the action's
    ``doExecute``). Returns what the tasks wrote."""
    written: list[dict[str, Any]] = []
    failures: list[BaseException] = []

    def done(i: int, fut: Future[Any]) -> bool:
        exc = fut.exception()
        if exc is not None:
            failures.append(exc)
            return False
        written.extend(fut.result())
        return True

    run_bounded(g.rewrite, len(g), progress.max_concurrent, done)
    if failures:
        for i in range(len(g)):
            g.remove(i)
        raise failures[0]
    g.hold()
    commit(g.groups)
    return written


def partial_commits(g: Groups, progress: Progress, manager: Any
                    ) -> tuple[Outcome, list[dict[str, Any]]]:
    """The groups committed by Iceberg's commit service as they are written (see the module's
    doc); the outcome and what the tasks wrote."""
    per_commit = progress.groups_per_commit(len(g))
    service = manager.service(per_commit)
    service.start()
    written: list[dict[str, Any]] = []
    offered: list[int] = []
    stop: list[BaseException] = []
    failed_files = 0

    def done(i: int, fut: Future[Any]) -> bool:
        nonlocal failed_files
        exc = fut.exception()
        if exc is not None:
            g.remove(i)
            if stops_all(exc):
                stop.append(exc)
                return False
            print(f"[tms-job] file group {i} not rewritten (partial progress goes on): "
                  f"{type(exc).__name__}: {str(exc)[:500]}", file=sys.stderr)
            failed_files += g.input_files[i]
            return True
        if not offered:
            g.hold()
        written.extend(fut.result())
        offered.append(i)
        service.offer(g.groups[i])
        return True

    try:
        run_bounded(g.rewrite, len(g), progress.max_concurrent, done)
    finally:
        service.close()  # commits what is left, waits for the commits in flight
    committed = list(service.results())
    if stop:
        raise stop[0]
    made = int(service.succeededCommits())
    outcome = Outcome(committed, failed_files, made, -(-len(offered) // per_commit) - made,
                      len(offered) - len(committed))
    return outcome, written
