"""JVM options for a cold spark-submit on a local master, where the driver JVM runs the tasks.

A cold job's JVM lives for one operation: its C2 compiler threads spend seconds of CPU on code
that runs a few seconds, competing with the tasks for the executor's cores (issue 17: the cold
job's tasks ran ~2x slower than the warm driver's). Measured with ``bench/compaction_bench.py``
(docs/figures.md, "Issue 17"): stopping at C1 (``-XX:TieredStopAtLevel=1``) cut a cold
compaction's CPU by about 30 % (a 46 MB and a 1 MB table, 2 cores); the warm driver, which
lives on, keeps C2.

The class-data archive's options (``cold_cds``) join these; the launcher JVM spark-submit
starts first gets C1 too (``SPARK_LAUNCHER_OPTS``, unless set).

Only on a local master (on a cluster the tasks run in executors that live as long as their
cluster manager lets them), and only when the operator has not set the driver's Java options
(``spark.driver.extraJavaOptions`` in ``TMS_SPARK_CONF`` or a queue's conf): theirs win whole.
"""

from __future__ import annotations

from dataclasses import replace

from tms.spark.settings import SparkSettings

DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
COLD_LOCAL_JAVA_OPTIONS = ("-XX:TieredStopAtLevel=1",)
# spark-submit first runs a launcher JVM that only builds the driver's command line (~0.25 s
# of CPU); C1 halves it. Spark reads these options from the environment.
ENV_LAUNCHER_OPTS = "SPARK_LAUNCHER_OPTS"
LAUNCHER_JAVA_OPTIONS = ("-XX:TieredStopAtLevel=1",)


def applies(settings: SparkSettings) -> bool:
    """Whether TMS tunes this cold driver's JVM: a local master, the operator's options unset."""
    return (settings.is_local and settings.deploy_mode == "client"
            and DRIVER_JAVA_OPTIONS not in settings.conf)


def tuned(settings: SparkSettings, extra: tuple[str, ...] = ()) -> SparkSettings:
    """``settings`` with the cold local driver's JVM options (and ``extra``: the class-data
    archive's, ``cold_cds``), unless not local or set by the operator."""
    if not applies(settings):
        return settings
    options = " ".join((*COLD_LOCAL_JAVA_OPTIONS, *extra))
    return replace(settings, conf={**settings.conf, DRIVER_JAVA_OPTIONS: options})


def launcher_env(settings: SparkSettings, env: dict[str, str]) -> dict[str, str]:
    """``env`` with the launcher JVM's options, unless not local or set by the operator."""
    if applies(settings) and ENV_LAUNCHER_OPTS not in env:
        env[ENV_LAUNCHER_OPTS] = " ".join(LAUNCHER_JAVA_OPTIONS)
    return env
