"""PySpark application for the partitioned table-health bench: runs SQL statements it is handed,
one at a time, in one long-lived session (a cold spark-submit per DELETE would cost 10-15 s).

spark-submit runs this file; it imports only pyspark and the standard library. Requests are
files ``<spool>/req-<n>.json`` (``{"sql": ...}``), written whole by renaming; the answer is
``<spool>/resp-<n>.json`` (``{"ok": true, "rows": [...]}`` or ``{"ok": false, "error": ...}``).
A file ``<spool>/stop`` ends the session. The Spark conf (catalog, extensions) comes from
spark-submit's ``--conf``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

POLL_S = 0.05
MAX_ROWS = 1000
MAX_ERROR_CHARS = 4000


def answer(spark: object, request: dict[str, str]) -> dict[str, object]:
    try:
        rows = spark.sql(request["sql"]).limit(MAX_ROWS).collect()  # type: ignore[attr-defined]
        return {"ok": True, "rows": [r.asDict(recursive=True) for r in rows]}
    except Exception as exc:  # noqa: BLE001 - the bench decides what a failure means
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]}


def main(spool: str) -> int:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("tms-table-health-sql").getOrCreate()
    root = Path(spool)
    (root / "ready").write_text("1")
    n = 0
    try:
        while not (root / "stop").exists():
            req = root / f"req-{n}.json"
            if not req.exists():
                time.sleep(POLL_S)
                continue
            out = answer(spark, json.loads(req.read_text()))
            tmp = root / f"resp-{n}.tmp"
            tmp.write_text(json.dumps(out, default=str))
            os.replace(tmp, root / f"resp-{n}.json")
            n += 1
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
