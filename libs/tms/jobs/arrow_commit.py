"""The commit of the arrow data path (``arrow_rewrite.py``): each output file becomes a
``DataFile`` built in the driver, and Iceberg's own ``RewriteDataFilesCommitManager`` commits
the groups from the starting snapshot, as the ``rewrite_data_files`` procedure does.

Metrics come from the written footer through ``ParquetUtil.fileMetrics`` with the table's
``MetricsConfig`` (so ``write.metadata.metrics.*`` apply as on Spark's path), with what the
footer cannot say as Iceberg's writer says it laid over them (float and double counts and
bounds, string and binary bounds: ``arrow_metrics``), split offsets
from the task (each row group's first byte). Rows per group are checked against the inputs'
record counts before anything is committed. ``build`` may fail before the commit (the caller
then deletes the outputs); a commit (``commit_all``, or Iceberg's commit service with partial
progress: ``arrow_progress``) leaves cleaning to the commit manager, which deletes the new
files on a failed commit and keeps them when the commit's state is unknown.
Standard library only; the JVM objects come in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tms.jobs import arrow_metrics

RESULT_COLUMNS = ("rewritten_data_files_count", "added_data_files_count",
                  "rewritten_bytes_count", "failed_data_files_count",
                  "removed_delete_files_count")


def long_list(gateway: Any, values: Sequence[int]) -> Any:
    """A java ``List<Long>`` (Py4J would box small Python ints as Integer)."""
    jvm = gateway.jvm
    arr = gateway.new_array(jvm.long, len(values))
    for i, v in enumerate(values):
        arr[i] = v
    return jvm.org.apache.iceberg.relocated.com.google.common.primitives.Longs.asList(arr)


def data_file(gateway: Any, handle: Any, partition: Any, written: Mapping[str, Any]) -> Any:
    """The ``DataFile`` of one output, its metrics read back from its footer."""
    jvm = gateway.jvm
    metrics = jvm.org.apache.iceberg.parquet.ParquetUtil.fileMetrics(
        handle.io().newInputFile(written["output"], written["size"]),
        jvm.org.apache.iceberg.MetricsConfig.forTable(handle))
    if int(metrics.recordCount()) != written["rows"]:
        raise ValueError(f"{written['output']}: the footer says {metrics.recordCount()} rows, "
                         f"the task wrote {written['rows']}")
    spec = handle.spec()
    builder = (jvm.org.apache.iceberg.DataFiles.builder(spec).withPath(written["output"])
               .withFormat("parquet").withFileSizeInBytes(written["size"])
               .withMetrics(metrics).withSplitOffsets(long_list(gateway, written["offsets"])))
    if spec.isPartitioned():
        builder = builder.withPartition(partition)
    return arrow_metrics.apply(jvm, handle, builder.build(), written.get("metrics") or {})


def build(gateway: Any, handle: Any, group: Any, index: int, records: int,
          written: Sequence[Mapping[str, Any]]) -> None:
    """The group's output ``DataFile`` set on it, once its rows equal its inputs' (``records``:
    the inputs' record count, from the manifests)."""
    partition = group.fileScanTasks().get(0).file().partition()
    mine = [w for w in written if w["group"] == index]
    if sum(w["rows"] for w in mine) != records:
        raise ValueError(f"file group {index}: wrote {sum(w['rows'] for w in mine)} rows, "
                         f"its inputs hold {records}")
    outputs = gateway.jvm.java.util.HashSet()
    for w in mine:
        outputs.add(data_file(gateway, handle, partition, w))
    group.setOutputFiles(outputs)


def manager(jvm: Any, handle: Any, start_snapshot: int, starting_sequence: bool) -> Any:
    """Iceberg's commit manager as the procedure makes it (no snapshot properties)."""
    return jvm.org.apache.iceberg.actions.RewriteDataFilesCommitManager(
        handle, start_snapshot, starting_sequence, jvm.java.util.HashMap())


def totals(groups: Sequence[Any], failed_files: int = 0) -> dict[str, int]:
    """The procedure's result columns for the committed ``groups`` (``asResult``), and the
    input files of groups whose rewrite failed (``failed_data_files_count``)."""
    out = dict.fromkeys(RESULT_COLUMNS, 0)
    for group in groups:
        r = group.asResult()
        out["rewritten_data_files_count"] += int(r.rewrittenDataFilesCount())
        out["added_data_files_count"] += int(r.addedDataFilesCount())
        out["rewritten_bytes_count"] += int(r.rewrittenBytesCount())
    out["failed_data_files_count"] = failed_files
    return out


def commit_all(jvm: Any, manager: Any, groups: Sequence[Any]) -> None:
    """One commit of every group (``commitOrClean``: a failed commit deletes their files)."""
    all_groups = jvm.java.util.HashSet()
    for group in groups:
        all_groups.add(group)
    manager.commitOrClean(all_groups)
