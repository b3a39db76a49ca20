"""A Spark application of a platform's own (not a TMS job) whose Iceberg catalog carries TMS's
reporter: run by tests/integration/test_reporter_e2e.py as a child process.

argv[1] is a JSON object: {"conf": {spark conf}, "sql": [statements], "wait_s": float}.
Prints one JSON line: the reporter's counters after the statements ran and the queue drained.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    spec = json.loads(sys.argv[1])
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[1]").appName("reporter-e2e")
    for key, value in spec["conf"].items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    for statement in spec["sql"]:
        spark.sql(statement).collect()
    reporter = spark.sparkContext._jvm.tms.reporter.TmsMetricsReporter
    deadline = time.monotonic() + float(spec.get("wait_s", 10.0))
    while time.monotonic() < deadline:  # the sender flushes every flush-interval-ms
        if reporter.sentCount() + reporter.droppedCount() >= reporter.queuedCount():
            break
        time.sleep(0.1)
    print(json.dumps({"queued": reporter.queuedCount(), "sent": reporter.sentCount(),
                      "dropped": reporter.droppedCount()}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
