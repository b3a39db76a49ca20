"""A bin-pack compaction whose data path is pyarrow inside Spark tasks; planning and commit
stay Iceberg's own, in the driver.

Why: Spark's ``rewrite_data_files`` spends about 3x the CPU of a pyarrow read + rewrite of
the same bytes (issue 17: Parquet dictionary decode, column-to-row conversion, Iceberg's
row-wise Parquet writer). Here:

1. Iceberg's ``BinPackRewriteFilePlanner`` plans the file groups with the options the
   procedure would get (sizes, ``min-input-files``, ``rewrite-all``, group size, delete
   threshold) and the ``where`` of a partition-restricted rewrite, converted by the Spark
   runtime's own ``SparkExpressionConverter``;
2. each group's rows are split evenly over ``expectedOutputFiles()`` Spark tasks (an RDD of
   descriptors, one per output file: two outputs, two tasks, both cores), which read and write
   with pyarrow (``arrow_task``; the descriptors and the S3 keys' way to the tasks:
   ``arrow_spark``); output paths come from the table's ``LocationProvider``;
3. the driver builds each ``DataFile`` (metrics from ``ParquetUtil.fileMetrics`` with the
   table's ``MetricsConfig``, split offsets) and commits with Iceberg's
   ``RewriteDataFilesCommitManager`` from the starting snapshot (with its sequence number
   unless ``use-starting-sequence-number=false``), so a concurrent writer's equality deletes
   still apply and a conflicting commit fails validation; a failed commit deletes the new
   files (``commitOrClean``). Groups run and commit as the procedure's action runs them
   (``arrow_progress``): at most ``max-concurrent-file-group-rewrites`` at once, one commit
   of all, or with ``partial-progress.enabled`` Iceberg's commit service (at most
   ``partial-progress.max-commits`` commits; a conflict loses only its own commit).

Every input and output path is checked against the table's own location (realpath) in
the driver and again in the task: an input outside refuses the whole rewrite (``LocationRefused``,
no fall-back: Spark's path would read it too). A table or group this path does not handle
exactly (``arrow_eligibility``) goes to Spark's path, and the result says why. The table's
writer properties are parsed strictly first (``table_props``). The result has the procedure's
columns, so everything downstream reads it unchanged.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tms import locations
from tms.jobs import (
    arrow_commit,
    arrow_eligibility,
    arrow_progress,
    arrow_s3,
    arrow_spark,
    arrow_task,
    table_guard,
    table_props,
)

# the procedure's options the planner reads (the rest are the action's, handled here)
PLANNER_OPTIONS = ("target-file-size-bytes", "min-file-size-bytes", "max-file-size-bytes",
                   "min-input-files", "rewrite-all", "max-file-group-size-bytes",
                   "delete-file-threshold")
# Iceberg's TableProperties defaults for what the Parquet writer reads
WRITER_PROPERTIES = {"row_group_bytes": ("write.parquet.row-group-size-bytes", 128 * 1024 ** 2),
                     "page_size_bytes": ("write.parquet.page-size-bytes", 1024 ** 2),
                     "page_row_limit": ("write.parquet.page-row-limit", 20_000),
                     "dict_size_bytes": ("write.parquet.dict-size-bytes", 2 * 1024 ** 2),
                     "row_group_min_rows": ("write.parquet.row-group-check-min-record-count",
                                            100)}
SPEC_SWITCH = arrow_eligibility.SPEC_SWITCH
DANGLING = "remove-dangling-deletes"  # an option the arrow path leaves to Spark's
InputFile = arrow_eligibility.InputFile
# Tests only: a directory where ``<table>.hold`` makes the driver stop between the tasks and
# the commit (it writes ``<table>.written`` and waits for the hold to go), so a test can
# commit as a concurrent writer at exactly that point. Unset in production.
TEST_HOLD_ENV = "TMS_ARROW_TEST_HOLD_DIR"
TEST_HOLD_MAX_S = 120
@dataclass(frozen=True)
class Attempt:
    """The procedure-shaped result when the arrow path ran, else why it did not;
    ``inputs_checked``: the planned inputs passed ``check_inputs`` (an attempt that stopped
    before planning did not check them, and Spark's path must)."""

    result: dict[str, Any] | None
    refused: str | None = None
    inputs_checked: bool = False


def writer_format(props: Mapping[str, str], codec: str, level: str | None) -> dict[str, Any]:
    """The tasks' writer settings: the table's values, parsed strictly (``table_props``:
    ``PropertyRefused`` for one out of range, before any task starts), else Iceberg's."""
    parsed = table_props.check(props, codec)
    out: dict[str, Any] = {"codec": codec, "level": level}
    for name, (key, default) in WRITER_PROPERTIES.items():
        out[name] = parsed.get(key, default)
    return out


def iceberg_filter(spark: Any, table_name: str, where: str | None) -> Any:
    """The rewrite's ``where`` as an Iceberg expression, converted as the procedure does."""
    jvm = spark.sparkContext._jvm
    if where is None:
        return jvm.org.apache.iceberg.expressions.Expressions.alwaysTrue()
    conv = jvm.org.apache.spark.sql.execution.datasources.SparkExpressionConverter
    resolved = conv.collectResolvedSparkExpression(spark._jsparkSession, table_name, where)
    return conv.convertToIcebergExpression(resolved)


def plan_groups(jvm: Any, handle: Any, expression: Any, options: Mapping[str, str]
                ) -> list[Any]:
    snap = handle.currentSnapshot()
    if snap is None:
        return []
    planner = jvm.org.apache.iceberg.actions.BinPackRewriteFilePlanner(
        handle, expression, snap.snapshotId(), True)
    planner.init({k: v for k, v in options.items() if k in PLANNER_OPTIONS})
    out, it = [], planner.plan().groups().iterator()
    while it.hasNext():
        out.append(it.next())
    return out


def check_inputs(files: Sequence[Sequence[InputFile]], allowed: Sequence[str] | None) -> None:
    """Every planned input inside ``allowed`` (the table's own location, realpath), or the
    rewrite is refused."""
    if allowed is None:
        return
    for group in files:
        for f in group:
            try:
                locations.check(f.path, allowed, literal=True)
            except locations.LocationError as e:
                raise table_guard.LocationRefused(
                    f"compaction refused, nothing written: input data file {f.path[:300]!r}: "
                    f"{e}") from None


def refusal(kind: str, reason: str) -> Attempt:
    """A task's refusal: the compaction refused (a location), or left to Spark's path."""
    if kind == "location":
        raise table_guard.LocationRefused(f"compaction refused: {reason}")
    return Attempt(None, reason)


def hold_for_tests(table_name: str, environ: Mapping[str, str] = os.environ) -> None:
    """See ``TEST_HOLD_ENV``: nothing unless a test asked for this table."""
    root = environ.get(TEST_HOLD_ENV)
    if not root:
        return
    key = re.sub(r"[^A-Za-z0-9_.-]", "", table_name)
    hold = Path(root) / f"{key}.hold"
    if not hold.exists():
        return
    (Path(root) / f"{key}.written").write_text("")
    deadline = time.monotonic() + TEST_HOLD_MAX_S
    while hold.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


class Clock:
    """Seconds per phase of the arrow path, for the result (where a compaction's time went)."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self.last = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps[name] = round(now - self.last, 3)
        self.last = now


def s3_storage(storage: Mapping[str, str]) -> tuple[arrow_s3.S3Options | None, str | None]:
    """The catalog's S3 options for the tasks, or why S3 files stay on Spark's path."""
    try:
        return arrow_s3.options(storage), None
    except arrow_s3.S3Unsupported as e:
        return None, str(e)


def zero_result() -> dict[str, Any]:
    return dict.fromkeys(arrow_commit.RESULT_COLUMNS, 0)


def attempt(spark: Any, handle: Any, table_name: str, options: Mapping[str, str],
            where: str | None, codec: str | None, level: str | None,
            allowed: Sequence[str] | None, switch: str | None = None,
            storage: Mapping[str, str] | None = None) -> Attempt:
    """The compaction on the arrow path, or why not (then nothing was written or committed).
    ``LocationRefused`` when an input or output lies outside ``allowed``: the inputs are
    planned and checked first, whatever path runs, since Spark's would read them as well."""
    jvm, clock = spark.sparkContext._jvm, Clock()
    try:
        expression = iceberg_filter(spark, table_name, where)
    except Exception as e:  # the procedure would convert it the same way, or fail itself
        return Attempt(None, f"the where filter was not converted ({type(e).__name__})")
    start = handle.currentSnapshot()
    try:
        groups = plan_groups(jvm, handle, expression, options)
    except Exception as e:  # Spark's path plans again, and says what went wrong
        return Attempt(None, f"Iceberg's planner failed here ({type(e).__name__})")
    files = [arrow_eligibility.input_files(jvm, group) for group in groups]
    clock.lap("plan")
    check_inputs(files, allowed)  # before any fall-back: Spark's path would read them too
    clock.lap("check_inputs")
    return replace(on_arrow_path(spark, handle, table_name, options, codec, level, allowed,
                                 switch, storage, start, groups, files, clock),
                   inputs_checked=True)


def on_arrow_path(spark: Any, handle: Any, table_name: str, options: Mapping[str, str],
                  codec: str | None, level: str | None, allowed: Sequence[str] | None,
                  switch: str | None, storage: Mapping[str, str] | None, start: Any,
                  groups: list[Any], files: list[list[InputFile]], clock: Clock) -> Attempt:
    """The rest of ``attempt`` once the planned inputs passed the check."""
    jvm = spark.sparkContext._jvm
    off = arrow_eligibility.switched_off(switch)
    if off is not None:
        return Attempt(None, off)
    if options.get(DANGLING) == "true":  # the action's own step after the rewrite
        return Attempt(None, f"{DANGLING} (Spark's action removes them after its rewrite)")
    props = {str(k): str(v) for k, v in handle.properties().items()}
    s3, s3_refusal = s3_storage(storage or {})
    why = arrow_eligibility.table_refusal(handle, jvm, props, codec, s3_refusal)
    if why is not None:
        return Attempt(None, why)
    if not groups:
        return Attempt(zero_result())
    spec_id = int(handle.spec().specId())
    for group_files in files:
        why = arrow_eligibility.group_refusal(group_files, spec_id, s3_refusal)
        if why is not None:
            return Attempt(None, why)
    assert codec is not None  # table_refusal refuses a table without one
    tasks = arrow_spark.describe(handle, groups, files, writer_format(props, codec, level), allowed)
    clock.lap("eligibility_and_tasks")
    try:  # before any task runs: the same function travels with every group
        for fn in (arrow_task.run, arrow_task.probe):
            arrow_spark.task_function(spark.sparkContext, fn, s3)
    except arrow_spark.SecretTooLarge as e:
        return Attempt(None, str(e))
    progress = arrow_progress.Progress.of(options)
    if progress.partial and len(groups) > 1:  # no group refused once another is committed
        try:
            probed = arrow_spark.run_tasks(spark, arrow_progress.probe_tasks(tasks), s3,
                                           "input check", arrow_task.probe)
        except Exception as e:
            if arrow_progress.stops_all(e):
                return Attempt(None, "pyarrow not importable in the Spark workers")
            raise
        first = arrow_spark.first_refusal(probed)
        if first is not None:
            return refusal(str(first["refused"]), str(first["reason"]))
        clock.lap("input_check")
    work = arrow_progress.Groups(
        groups, [len(f) for f in files],
        lambda i: rewrite_group(spark, handle, groups, files, tasks, i, s3),
        lambda i: arrow_spark.remove_outputs([t for t in tasks if t["group"] == i], s3),
        lambda: hold_for_tests(table_name))
    sequence = options.get("use-starting-sequence-number", "true") == "true"
    manager = arrow_commit.manager(jvm, handle, int(start.snapshotId()), sequence)
    extra: dict[str, Any] = {}
    try:
        if progress.partial:
            outcome, written = arrow_progress.partial_commits(work, progress, manager)
            result = arrow_commit.totals(outcome.committed, outcome.failed_files)
            extra["arrow_commits"] = outcome.info()
        else:
            def commit(gs: list[Any]) -> None:
                clock.lap("tasks")
                arrow_commit.commit_all(jvm, manager, gs)

            written = arrow_progress.single_commit(work, progress, commit)
            result = arrow_commit.totals(groups)
    except arrow_progress.GroupRefused as e:
        return refusal(e.kind, e.reason)
    except Exception as e:
        if "No module named 'pyarrow'" in str(e):
            return Attempt(None, "pyarrow not importable in the Spark workers")
        raise
    clock.lap("rewrite_and_commit" if progress.partial else "commit")
    cpu = round(sum(float(w.get("cpu_s", 0.0)) for w in written), 3)
    return Attempt({**result, **extra, "arrow_phases_s": clock.laps, "arrow_tasks": len(tasks),
                    "arrow_task_cpu_s": cpu})


def rewrite_group(spark: Any, handle: Any, groups: Sequence[Any],
                  files: Sequence[Sequence[InputFile]], tasks: Sequence[Mapping[str, Any]],
                  index: int, s3: arrow_s3.S3Options | None) -> list[dict[str, Any]]:
    """File group ``index`` rewritten (one Spark job of its tasks) and its output files set
    on it; what it wrote. ``GroupRefused`` when a task refused its input; on any failure the
    group's outputs are deleted first."""
    mine = [dict(t) for t in tasks if t["group"] == index]
    try:
        written = arrow_spark.run_tasks(
            spark, mine, s3, f"file group {index + 1} of {len(groups)}, {len(mine)} output file(s)")
        first = arrow_spark.first_refusal(written)
        if first is not None:
            raise arrow_progress.GroupRefused(str(first["refused"]), str(first["reason"]))
        arrow_commit.build(spark.sparkContext._gateway, handle, groups[index], index,
                           sum(f.records for f in files[index]), written)
    except BaseException:
        arrow_spark.remove_outputs(mine, s3)
        raise
    return written
