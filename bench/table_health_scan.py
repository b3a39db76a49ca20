"""PySpark application for the table-health benchmark: time the same queries on two tables.

spark-submit runs this file; it imports only pyspark and the standard library. The spec (JSON)
names the catalog conf, the two tables, the queries (``{table}`` stands for the table) and the
repetitions; the queries run alternately on the two tables so drift (JIT warm-up, caches, other
load) hits both alike, and each table's time per query is the median of its repetitions.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path


def main(spec_path: str, out_path: str) -> int:
    from pyspark.sql import SparkSession

    spec = json.loads(Path(spec_path).read_text())
    builder = SparkSession.builder.appName("tms-table-health-scan")
    for key, value in spec["conf"].items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    tables: dict[str, str] = spec["tables"]  # label -> qualified table name
    results: dict[str, dict[str, list[float]]] = {}
    for query in spec["queries"]:
        for table in tables.values():  # warm-up: JIT, metadata caches, both tables
            spark.sql(query.format(table=table)).collect()
        times: dict[str, list[float]] = {label: [] for label in tables}
        for _ in range(spec["repetitions"]):
            for label, table in tables.items():
                spark.sql(f"REFRESH TABLE {table}")
                start = time.perf_counter()
                spark.sql(query.format(table=table)).collect()
                times[label].append(time.perf_counter() - start)
        results[query] = times
    spark.stop()
    summary = {q: {label: statistics.median(ts) for label, ts in t.items()}
               for q, t in results.items()}
    Path(out_path).write_text(json.dumps({"median_s": summary, "all_s": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
