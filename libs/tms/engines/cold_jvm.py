"""JVM options for a cold spark-submit on a local master, where the driver JVM runs the tasks.

A cold job's JVM lives for one operation: its C2 compiler threads spend seconds of CPU on code
that runs a few seconds, competing with the tasks for the executor's cores (issue 17: the cold
job's tasks ran ~2x slower than the warm driver's). Measured with ``bench/compaction_bench.py``
(docs/figures.md, "Issue 17"): stopping at C1 (``-XX:TieredStopAtLevel=1``) cut a cold
compaction's CPU by about 30 % (a 46 MB and a 1 MB table, 2 cores); the warm driver, which
lives on, keeps C2.

Only on a local master (on a cluster the tasks run in executors that live as long as their
cluster manager lets them), and only when the operator has not set the driver's Java options
(``spark.driver.extraJavaOptions`` in ``TMS_SPARK_CONF`` or a queue's conf): theirs win whole.
"""

from __future__ import annotations

from dataclasses import replace

from tms.spark.settings import SparkSettings

DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
COLD_LOCAL_JAVA_OPTIONS = ("-XX:TieredStopAtLevel=1",)


def tuned(settings: SparkSettings) -> SparkSettings:
    """``settings`` with the cold local driver's JVM options, unless not local or set."""
    if not settings.is_local or DRIVER_JAVA_OPTIONS in settings.conf:
        return settings
    return replace(settings, conf={**settings.conf,
                                   DRIVER_JAVA_OPTIONS: " ".join(COLD_LOCAL_JAVA_OPTIONS)})
