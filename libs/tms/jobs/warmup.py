"""Warm the warm driver's data path before it serves: the JVM compiles what a compaction runs.

A fresh JVM interprets Spark's and Iceberg's code until the JIT has seen it run often enough;
the warm driver's first large compaction took 1.3-1.7x as long as later ones (issue 17), and
the C2 compiler threads then compete with the tasks for the executor's cores. So before the
driver reads its first request it runs what a compaction runs, on a table of its own that looks like
a writer's: ``WARMUP_FILES`` appends of zstd parquet (``WARMUP_ROWS`` rows of long, string,
double and timestamp columns), then ``rewrite_manifests`` (what a rewrite runs first when a
writer left many small manifests: ``manifest_prep``), then ``rewrite_data_files`` (vectorized
read, row conversion, parquet write, a commit), then the table is dropped with its files.
Without it the first merge of a driver's life (the ``rewrite_manifests`` procedure, which
``manifest_prep`` still runs for merges larger than one manifest) spent 11-16 s of CPU against
1.5-2.5 s later (issue 17, docs/figures.md); it also warms the Avro manifest reads and writes
of the driver's own merge and of every commit.

The table lives in a Hadoop catalog of its own (``WARMUP_CATALOG``) in a temporary directory
on the driver's local disk: nothing of a user's catalog or storage is touched. A failure is
logged and ignored (the driver serves as it would have without). ``TMS_WARMUP_ROWS`` sets the
size (``0`` turns it off, e.g. for tests that start many drivers).

Imports only the standard library (shipped next to ``warm_driver.py``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ENV_WARMUP_ROWS = "TMS_WARMUP_ROWS"
WARMUP_ROWS = 1_000_000  # ~23 MB of zstd parquet: enough loop iterations for C2
WARMUP_FILES = 8
MAX_WARMUP_ROWS = 100_000_000
WARMUP_CATALOG = "tms_warmup"
WARMUP_TABLE = f"{WARMUP_CATALOG}.warmup.events"
HADOOP_CATALOG = "org.apache.iceberg.spark.SparkCatalog"


def rows_from_env(environ: Mapping[str, str]) -> int:
    """``TMS_WARMUP_ROWS`` as a row count (default ``WARMUP_ROWS``); a bad value is the
    default, not a failed start."""
    raw = environ.get(ENV_WARMUP_ROWS, "").strip()
    if not raw:
        return WARMUP_ROWS
    if not raw.isdigit() or int(raw) > MAX_WARMUP_ROWS:
        print(f"[tms-warm] {ENV_WARMUP_ROWS}={raw[:40]!r} is not a row count from 0 to "
              f"{MAX_WARMUP_ROWS}; using {WARMUP_ROWS}", file=sys.stderr, flush=True)
        return WARMUP_ROWS
    return int(raw)


def statements(rows: int, files: int = WARMUP_FILES) -> list[str]:
    """The SQL of one warm-up, in order (the catalog is registered first)."""
    per_file = max(1, rows // files)
    create = (f"CREATE TABLE {WARMUP_TABLE} (id BIGINT, kind STRING, amount DOUBLE, "
              "user_id BIGINT, ts TIMESTAMP) USING iceberg TBLPROPERTIES ("
              "'write.parquet.compression-codec'='zstd', 'format-version'='2')")
    appends = [
        (f"INSERT INTO {WARMUP_TABLE} SELECT id, element_at(array('click', 'view', 'buy', "
         f"'cart'), CAST(id % 4 AS INT) + 1), rand({f}) * 1000, CAST(rand({f + 100}) * 65536 "
         f"AS BIGINT), timestamp_seconds(1767225600 + id % 86400) "
         f"FROM range({f * per_file}, {(f + 1) * per_file}, 1, 1)")
        for f in range(files)]
    merge = f"CALL {WARMUP_CATALOG}.system.rewrite_manifests(table => 'warmup.events')"
    rewrite = (f"CALL {WARMUP_CATALOG}.system.rewrite_data_files(table => 'warmup.events', "
               "options => map('min-input-files', '2', 'rewrite-all', 'true'))")
    return [create, *appends, merge, rewrite, f"DROP TABLE {WARMUP_TABLE} PURGE"]


def warm_up(spark: Any, rows: int) -> float | None:
    """Run one warm-up in ``spark``; its seconds, or None when skipped or failed."""
    if rows <= 0:
        return None
    where = Path(tempfile.mkdtemp(prefix="tms-warmup-"))
    t0 = time.monotonic()
    try:
        prefix = f"spark.sql.catalog.{WARMUP_CATALOG}"
        spark.conf.set(prefix, HADOOP_CATALOG)
        spark.conf.set(f"{prefix}.type", "hadoop")
        spark.conf.set(f"{prefix}.warehouse", where.as_uri())
        for sql in statements(rows):
            spark.sql(sql).collect()
        return time.monotonic() - t0
    except Exception as e:  # a driver that could not warm up still serves
        print(f"[tms-warm] warm-up failed, serving without: {type(e).__name__}: "
              f"{str(e)[:500]}", file=sys.stderr, flush=True)
        return None
    finally:
        shutil.rmtree(where, ignore_errors=True)
        try:
            spark.catalog.clearCache()
        except Exception:
            pass


def run_from_env(spark: Any, environ: Mapping[str, str] = os.environ) -> float | None:
    return warm_up(spark, rows_from_env(environ))
