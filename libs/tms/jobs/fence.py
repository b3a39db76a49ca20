"""The deletion fence around one table's action: TMS's own Hadoop file systems
(``tms-fence.jar``, sources in ``tms/spark/fence``) refuse any delete, rename or write outside
the roots armed here, whoever asks (Iceberg's expiry and commit clean-up, Spark, a library).

The job's own checks (``table_guard``, ``read_guard``) look at every path the table's metadata
names before the action starts; the fence holds at the moment of the change, so a directory
swapped for a symlink after the check, or a path the checks never saw, is refused too. Iceberg
suppresses a failed delete during expiry (it logs and goes on), so the job counts the fence's
refusals and fails the operation, not retried, when there were any: someone tried.

The executor's Spark settings put the jar on the classpath and name the fenced file systems
for ``file:``, ``s3a:``, ``s3:`` and (wrapped by the filter) every other store when the jar is
provisioned, and then require the fence
(``REQUIRED_CONF``): the job refuses to act on a table whose file system is not fenced.

Imports only the standard library; the JVM is reached through the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tms.jobs.table_guard import CheckedTable, LocationRefused

FENCE_CLASS = "tms.fence.Fence"
FENCED_CLASSES = ("tms.fence.FencedLocalFileSystem", "tms.fence.FencedS3AFileSystem",
                  "tms.fence.FencedFilterFileSystem")
REQUIRED_CONF = "spark.tms.fence.required"


def required(spark: Any) -> bool:
    return str(spark.sparkContext.getConf().get(REQUIRED_CONF, "false")).lower() == "true"


def _jfence(spark: Any) -> Any:
    return spark.sparkContext._jvm.tms.fence.Fence


def file_system_class(spark: Any, table: CheckedTable) -> str:
    """The class of the Hadoop file system the table's FileIO uses for its location (its
    own Hadoop conf: HadoopFileIO's ``conf()``; another FileIO, which does not go through
    Hadoop, fails here and the job refuses)."""
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(str(table.handle.location()))
    return str(path.getFileSystem(table.handle.io().conf()).getClass().getName())


@contextmanager
def armed(spark: Any, table: CheckedTable) -> Iterator[dict[str, Any]]:
    """Arm the fence on the table's own location for the block; yields the result's
    ``fence`` entry. LocationRefused when the fence is required and not in place, or when it
    refused a change during the block."""
    info: dict[str, Any] = {"required": required(spark)}
    if not info["required"]:
        info["state"] = "off"
        yield info
        return
    roots = list(table.own)
    try:
        fs_class = file_system_class(spark, table)
    except Exception as e:
        raise LocationRefused(f"the deletion fence is required, but the table's file system "
                              f"could not be checked: {type(e).__name__}: {e}") from None
    if fs_class not in FENCED_CLASSES:
        raise LocationRefused(f"the deletion fence is required, but the table's location is "
                              f"served by {fs_class}, not a fenced file system: check the "
                              f"catalog's fs.* storage options and TMS_SPARK_CONF")
    fence = _jfence(spark)
    before = int(fence.refusedCount())
    gateway = spark.sparkContext._gateway
    jroots = gateway.new_array(gateway.jvm.java.lang.String, len(roots))
    for i, root in enumerate(roots):
        jroots[i] = root
    fence.arm(jroots)
    info.update(state="armed", roots=roots, file_system=fs_class)
    try:
        yield info
    finally:
        fence.disarm()
        refused = int(fence.refusedCount()) - before
        info["refused"] = refused
    if refused:
        raise LocationRefused(f"the deletion fence refused {refused} change(s) outside the "
                              f"table's own location {roots} during the action (see the "
                              f"driver log for the paths); the action may have committed")
