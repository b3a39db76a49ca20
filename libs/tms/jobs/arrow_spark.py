"""The arrow data path's Spark tasks (``arrow_rewrite.py``): one descriptor per output file,
the function that carries the S3 keys, running them, and removing what they wrote.

Where the S3 keys go: PySpark sends an RDD's data to the JVM through a temporary file
(``parallelize`` without IO encryption), which a driver killed at that moment leaves on disk;
the task's function goes in memory (Py4J, then the task's sockets) while its pickle stays under
the broadcast threshold, above which PySpark writes it to a file too. So the descriptors hold
no secret, the keys are bound to the function, and a function too large to travel in memory
is refused (``SecretTooLarge``) before anything runs.

Imports only pyspark (lazily), the standard library and the job's package.
"""

from __future__ import annotations

import sys
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from tms import locations
from tms.jobs import (
    arrow_eligibility,
    arrow_metrics,
    arrow_readahead,
    arrow_s3,
    arrow_task,
    table_guard,
)

InputFile = arrow_eligibility.InputFile
# the share of PySpark's broadcast threshold a task function holding S3 keys may reach (the
# pickle of a function is measured once here; Spark's own framing adds a little)
IN_MEMORY_SHARE = 0.5
# workers a cold job starts ahead of its arrow tasks: a compaction's tasks are one per output
# file, and a cluster's whole parallelism would only ask for executors nothing needs
MAX_PRESTARTED_WORKERS = 8


class SecretTooLarge(Exception):
    """The task's function, which carries the S3 keys, would be written to disk by PySpark."""


def split_rows(counts: Sequence[int], outputs: int) -> list[list[tuple[int, int, int]]]:
    """The rows of files with ``counts`` rows, in order, split evenly into ``outputs`` parts:
    each part a list of (file index, rows to skip, rows to take)."""
    total, parts = sum(counts), []
    outputs = max(1, min(outputs, total)) if total else 1
    bounds = [total * k // outputs for k in range(outputs + 1)]
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        part, start = [], 0
        for i, n in enumerate(counts):
            a, b = max(lo, start), min(hi, start + n)
            if a < b:
                part.append((i, a - start, b - a))
            start += n
        parts.append(part)
    return parts


def describe(handle: Any, groups: Sequence[Any], files: Sequence[Sequence[InputFile]],
             fmt: Mapping[str, Any], allowed: Sequence[str] | None) -> list[dict[str, Any]]:
    """One task descriptor per output file (plain data: it is pickled to the workers, through
    a file PySpark writes, so it holds no secret; the S3 keys travel with the task's code,
    ``run_tasks``)."""
    cols, spec = arrow_eligibility.columns(handle), handle.spec()
    provider, op = handle.locationProvider(), uuid.uuid4().hex
    allow = list(allowed) if allowed is not None else [str(handle.location())]
    tasks = []
    for g, group in enumerate(groups):
        inputs = files[g]
        counts = [f.records for f in inputs]
        partition = group.fileScanTasks().get(0).file().partition()
        for k, part in enumerate(split_rows(counts, int(group.expectedOutputFiles()))):
            name = f"{g:05d}-{k}-{op}-00001.parquet"
            out = str(provider.newDataLocation(spec, partition, name) if spec.isPartitioned()
                      else provider.newDataLocation(name))
            try:
                locations.check(out, allow, literal=True)
            except locations.LocationError as e:
                raise table_guard.LocationRefused(f"compaction refused: output {e}") from None
            tasks.append({"group": g, "output": out, "allowed": allow, "columns": cols,
                          "format": dict(fmt),
                          "inputs": [(inputs[i].path, skip, take, counts[i])
                                     for i, skip, take in part]})
    return tasks


def task_function(sc: Any, fn: Any, s3: arrow_s3.S3Options | None) -> Any:
    """``fn`` with the S3 keys bound (``run_tasks``), refused (``SecretTooLarge``) when its
    pickle is too large to travel in memory."""
    import functools

    from pyspark import cloudpickle

    for module in (arrow_task, arrow_metrics, arrow_readahead, arrow_s3, locations):
        cloudpickle.register_pickle_by_value(module)
    if s3 is None:
        return fn
    func = functools.partial(fn, s3=s3)
    limit = int(sc._jvm.PythonUtils.getBroadcastThreshold(sc._jsc))
    size = len(cloudpickle.dumps(func))
    if size >= limit * IN_MEMORY_SHARE:
        raise SecretTooLarge(f"the arrow task's code ({size} bytes pickled) is too close to "
                             f"PySpark's broadcast threshold ({limit} bytes), above which "
                             f"it would be written to disk with the S3 keys")
    return func


def run_tasks(spark: Any, tasks: list[dict[str, Any]], s3: arrow_s3.S3Options | None = None,
              what: str | None = None, fn: Any = None) -> list[dict[str, Any]]:
    """The tasks as Spark tasks (one partition each), ``arrow_task.run`` unless ``fn`` says.
    The task module travels by value, so a worker needs pyarrow, not TMS; the S3 keys travel
    bound to the function (see the module's docstring)."""
    sc = spark.sparkContext
    func = task_function(sc, fn or arrow_task.run, s3)
    # the cores these tasks leave idle read their inputs ahead (arrow_readahead)
    threads = arrow_readahead.threads_per_task(int(sc.defaultParallelism), len(tasks))
    tasks = [{**t, "read_threads": threads} for t in tasks]
    sc.setJobDescription(f"tms arrow rewrite: {what or f'{len(tasks)} output file(s)'}")
    try:
        return list(sc.parallelize(tasks, len(tasks)).map(func).collect())
    finally:
        sc.setJobDescription(None)


def prestart_workers(spark: Any) -> threading.Thread:
    """Start the executor's Python workers, pyarrow imported, in the background: a cold job
    (one spark-submit per operation) otherwise starts them when its first arrow task runs,
    after the driver's table checks, manifest merge and planning, and waits for PySpark's
    daemon, the interpreter and pyarrow's import then (about 1 s here). Started as the session
    opens, that overlaps the driver's own work; Spark reuses the idle workers for the tasks. A
    failure here costs nothing: the tasks start their workers as before."""
    sc = spark.sparkContext
    slots = max(1, min(int(sc.defaultParallelism), MAX_PRESTARTED_WORKERS))

    def warm() -> None:
        try:
            sc.setJobDescription("tms: Python workers started ahead of the arrow tasks")
            sc.parallelize(range(slots), slots).map(
                task_function(sc, arrow_task.prestart, None)).collect()
        except Exception as e:  # the session stopped first, or no pyarrow: the tasks will say
            print(f"[tms-job] Python workers not started ahead: {type(e).__name__}",
                  file=sys.stderr)

    thread = threading.Thread(target=warm, name="tms-prestart-workers", daemon=True)
    thread.start()
    return thread


def first_refusal(results: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """A location refusal before any other (it refuses the whole compaction)."""
    refused = sorted((r for r in results if "refused" in r),
                     key=lambda r: r["refused"] != "location")
    return refused[0] if refused else None


def remove_outputs(tasks: Sequence[Mapping[str, Any]], s3: arrow_s3.S3Options | None = None
                   ) -> None:
    """Delete what the tasks may have written (a name only this rewrite used), as a task
    removes its own (``arrow_task.Store.remove``)."""
    store = arrow_task.Store(s3)
    for t in tasks:
        store.remove(t["output"], t["allowed"])
