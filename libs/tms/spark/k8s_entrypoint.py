"""The container entry point of Spark's driver and executor pods when they run the TMS image.

Spark on Kubernetes starts its pods with the arguments ``driver ...`` or ``executor`` and
relies on the image's entry point to turn them into a JVM (Spark's own images carry
``entrypoint.sh``; pip's pyspark, which the TMS image has, does not). The pod templates of
``deploy/k8s/overlays/spark-on-k8s`` run ``python -m tms.spark.k8s_entrypoint`` instead, which
does what Spark's script does, with this image's Spark and Java:

- ``driver ARGS``: ``spark-submit --deploy-mode client`` inside the pod, bound to the pod's IP;
- ``executor``: ``KubernetesExecutorBackend`` with what Spark put in the pod's environment
  (``SPARK_DRIVER_URL``, ``SPARK_EXECUTOR_ID``, ...), and the Java options ``SPARK_JAVA_OPT_<n>``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from tms.spark.settings import SparkSettings, spark_home, spark_submit_path

EXECUTOR_BACKEND = "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"
_EXECUTOR_ENV = (("--driver-url", "SPARK_DRIVER_URL"), ("--executor-id", "SPARK_EXECUTOR_ID"),
                 ("--cores", "SPARK_EXECUTOR_CORES"), ("--app-id", "SPARK_APPLICATION_ID"),
                 ("--hostname", "SPARK_EXECUTOR_POD_IP"),
                 ("--resourceProfileId", "SPARK_RESOURCE_PROFILE_ID"),
                 ("--podName", "SPARK_EXECUTOR_POD_NAME"))


def java_opts(env: Mapping[str, str]) -> list[str]:
    """``SPARK_JAVA_OPT_0``, ``SPARK_JAVA_OPT_1``, ... in their numeric order."""
    found = [(int(k.rsplit("_", 1)[1]), v) for k, v in env.items()
             if k.startswith("SPARK_JAVA_OPT_") and k.rsplit("_", 1)[1].isdigit()]
    return [v for _, v in sorted(found)]


def command(args: list[str], env: Mapping[str, str]) -> list[str]:
    """The command a Spark pod runs for its arguments; ValueError for anything else."""
    if args[:1] == ["driver"]:
        bind = env["SPARK_DRIVER_BIND_ADDRESS"]
        return [spark_submit_path(), "--conf", f"spark.driver.bindAddress={bind}",
                "--conf", f"spark.executorEnv.SPARK_DRIVER_POD_IP={bind}",
                "--deploy-mode", "client", *args[1:]]
    if args == ["executor"]:
        java = os.path.join(env["JAVA_HOME"], "bin", "java") if env.get("JAVA_HOME") else "java"
        memory = env["SPARK_EXECUTOR_MEMORY"]
        classpath = ":".join(p for p in (env.get("SPARK_CLASSPATH", ""),
                                         str(spark_home() / "jars" / "*")) if p)
        argv = [java, *java_opts(env), f"-Xms{memory}", f"-Xmx{memory}", "-cp", classpath,
                EXECUTOR_BACKEND]
        for flag, name in _EXECUTOR_ENV:
            argv += [flag, env[name]]
        return argv
    raise ValueError(f"expected 'driver ...' or 'executor', got {args[:1]}")


def main() -> None:
    env = SparkSettings().submit_env(dict(os.environ))  # SPARK_HOME, JAVA_HOME, PYSPARK_*
    argv = command(sys.argv[1:], env)
    os.execvpe(argv[0], argv, env)


if __name__ == "__main__":
    main()
