"""Warm the warm driver's data path before it serves: the JVM compiles what a compaction runs.

A fresh JVM interprets Spark's and Iceberg's code until the JIT has seen it run often enough;
the warm driver's first large compaction took 1.3-1.7x as long as later ones (issue 17), and
the C2 compiler threads then compete with the tasks for the executor's cores. So before the
driver reads its first request it runs what a compaction runs, on a table of its own that looks
like the tables it will compact:

- ``WARMUP_FILES`` data files written the way pyiceberg writes them (pyarrow: zstd, dictionary
  pages falling back to plain, pyiceberg's page and row-group limits, decimals as integers,
  field ids), ``WARMUP_ROWS`` rows of long, string (few and many distinct values), double,
  timestamp and decimal columns, each added in a commit of its own (``add_files``). A table
  written by Spark itself trained other decoders: the first real compaction then recompiled
  the Parquet read and write loops (57 compilations, 13 s of compiler threads). Without pyarrow
  in the driver's Python, Spark writes the files (``INSERT``, the older warm-up);
- ``rewrite_manifests`` (the merge a rewrite runs first on a table of many small manifests:
  ``manifest_prep``, which still uses the procedure for merges larger than one manifest);
- the compaction itself, through the same code a real one runs (``compact``: the warm driver
  passes ``run_in_session``; the options have a real plan's shape: ``COMPACTION_OPTIONS``), so
  the table's codec is read from its data and the rewrite writes zstd as it would;
- the table dropped with its files.

The table lives in a Hadoop catalog of its own (``WARMUP_CATALOG``) in a temporary directory
on the driver's local disk: nothing of a user's catalog or storage is touched. A failure is
logged and ignored (the driver serves as it would have without). ``TMS_WARMUP_ROWS`` sets the
size (``0`` turns it off, e.g. for tests that start many drivers).

Imports only the standard library, and pyarrow when the driver's Python has it (shipped next
to ``warm_driver.py``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ENV_WARMUP_ROWS = "TMS_WARMUP_ROWS"
WARMUP_ROWS = 1_000_000  # ~30 MB of zstd parquet: enough loop iterations for C2
WARMUP_FILES = 8
# add_files commits of the pyarrow-written files (each costs a Spark job of its own: 8 cost
# 24 s of JVM CPU with the merge; two leave two manifests for the merge to merge)
WARMUP_COMMITS = 2
MAX_WARMUP_ROWS = 100_000_000
WARMUP_CATALOG = "tms_warmup"
WARMUP_NAMESPACE = "warmup"
WARMUP_TABLE = f"{WARMUP_CATALOG}.{WARMUP_NAMESPACE}.events"
HADOOP_CATALOG = "org.apache.iceberg.spark.SparkCatalog"
MIB = 1024 * 1024
# a real compaction plan's options (iceberg_plan.rewrite_params) at the default 128 MiB target
COMPACTION_OPTIONS = {"target-file-size-bytes": str(128 * MIB),
                      "min-file-size-bytes": str(96 * MIB), "min-input-files": "2",
                      "max-file-group-size-bytes": str(100 * 1024 * MIB)}
# pyiceberg's writer defaults (_get_parquet_writer_kwargs, TableProperties)
PYICEBERG_WRITER = {"compression": "zstd", "data_page_size": MIB,
                    "dictionary_pagesize_limit": 2 * MIB, "write_batch_size": 20_000,
                    "store_decimal_as_integer": True}
PYICEBERG_ROW_GROUP_ROWS = 1_048_576
KINDS = ("click", "view", "buy", "cart")
DAY_S = 86_400
EPOCH_2026_S = 1_767_225_600
USERS = 65_536
COLUMNS = ("id BIGINT NOT NULL, kind STRING, amount DOUBLE, user_id BIGINT, ts TIMESTAMP, "
           "price DECIMAL(12, 2), label STRING")

Compact = Callable[[dict[str, Any]], Any]


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


def file_ranges(rows: int, files: int = WARMUP_FILES) -> list[tuple[int, int]]:
    """``[start, end)`` of the ids of each file."""
    per_file = max(1, rows // files)
    return [(f * per_file, (f + 1) * per_file) for f in range(files)]


def pyarrow_batch(start: int, end: int, seed: int) -> Any:
    """Rows ``[start, end)`` as a pyarrow table with the Iceberg field ids of ``COLUMNS``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = end - start

    def rand(k: int) -> Any:
        return pc.random(n, initializer=seed * 16 + k)

    ids = pa.array(range(start, end), pa.int64())
    users = pc.cast(pc.floor(pc.multiply(rand(1), float(USERS))), pa.int64())
    cents = pc.cast(pc.floor(pc.multiply(rand(2), 1_000_000.0)), pa.int64())
    seconds = pc.add(pc.cast(pc.floor(pc.multiply(rand(3), float(DAY_S))), pa.int64()),
                     EPOCH_2026_S)
    columns = {
        "id": ids,
        "kind": pc.take(pa.array(KINDS), pc.cast(pc.bit_wise_and(ids, 3), pa.int32())),
        "amount": pc.multiply(rand(4), 1000.0),
        "user_id": users,
        "ts": pc.multiply(seconds, 1_000_000).cast(pa.timestamp("us", tz="UTC")),
        "price": pc.cast(pc.divide(pc.cast(cents, pa.float64()), 100.0), pa.decimal128(12, 2),
                         safe=False),
        "label": pc.binary_join_element_wise("user-", pc.cast(users, pa.string()), ""),
    }
    fields = [pa.field(name, col.type, nullable=name != "id",
                       metadata={"PARQUET:field_id": str(i)})
              for i, (name, col) in enumerate(columns.items(), start=1)]
    return pa.Table.from_arrays(list(columns.values()), schema=pa.schema(fields))


def write_files(where: Path, rows: int, files: int = WARMUP_FILES,
                commits: int = WARMUP_COMMITS) -> list[Path] | None:
    """Directories of pyarrow-written parquet (as pyiceberg writes it), one per commit, or
    None when the driver's Python has no pyarrow."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return None
    dirs = [where / f"commit-{c}" for c in range(min(commits, files))]
    for d in dirs:
        d.mkdir(parents=True)
    for f, (start, end) in enumerate(file_ranges(rows, files)):
        path = dirs[f % len(dirs)] / f"{f:05d}.parquet"
        writer = None
        # a row group at a time: memory stays bounded whatever TMS_WARMUP_ROWS says
        for lo in range(start, end, PYICEBERG_ROW_GROUP_ROWS):
            hi = min(end, lo + PYICEBERG_ROW_GROUP_ROWS)
            batch = pyarrow_batch(lo, hi, f * 1024 + (lo - start) // PYICEBERG_ROW_GROUP_ROWS)
            if writer is None:
                writer = pq.ParquetWriter(str(path), batch.schema, **PYICEBERG_WRITER)
            writer.write_table(batch, row_group_size=PYICEBERG_ROW_GROUP_ROWS)
        if writer is not None:
            writer.close()
    return dirs


def setup_statements(rows: int, sources: list[Path] | None,
                     files: int = WARMUP_FILES) -> list[str]:
    """The SQL that makes the warm-up's table, in order (the catalog is registered first):
    one commit per file (``add_files`` of pyarrow-written ``sources``, or Spark ``INSERT``s),
    then the manifest merge."""
    if sources is not None:  # as pyiceberg makes it: no codec property, the data says zstd
        create = f"CREATE TABLE {WARMUP_TABLE} ({COLUMNS}) USING iceberg " \
                 "TBLPROPERTIES ('format-version'='2')"
        appends = [f"CALL {WARMUP_CATALOG}.system.add_files(table => "
                   f"'{WARMUP_NAMESPACE}.events', source_table => '`parquet`.`{d.as_uri()}`')"
                   for d in sources]
    else:
        create = f"CREATE TABLE {WARMUP_TABLE} ({COLUMNS}) USING iceberg TBLPROPERTIES (" \
                 "'write.parquet.compression-codec'='zstd', 'format-version'='2')"
        appends = [
            (f"INSERT INTO {WARMUP_TABLE} SELECT id, element_at(array('click', 'view', 'buy', "
             f"'cart'), CAST(id % 4 AS INT) + 1), rand({f}) * 1000, CAST(rand({f + 100}) * "
             f"{USERS} AS BIGINT), timestamp_seconds({EPOCH_2026_S} + id % {DAY_S}), "
             f"CAST(rand({f + 200}) * 10000 AS DECIMAL(12, 2)), "
             f"concat('user-', CAST(rand({f + 100}) * {USERS} AS BIGINT)) "
             f"FROM range({start}, {end}, 1, 1)")
            for f, (start, end) in enumerate(file_ranges(rows, files))]
    merge = f"CALL {WARMUP_CATALOG}.system.rewrite_manifests(table => '{WARMUP_NAMESPACE}.events')"
    return [create, *appends, merge]


REWRITE_SQL = (f"CALL {WARMUP_CATALOG}.system.rewrite_data_files(table => "
               f"'{WARMUP_NAMESPACE}.events', options => map("
               + ", ".join(f"'{k}', '{v}'" for k, v in COMPACTION_OPTIONS.items()) + "))")
DROP_SQL = f"DROP TABLE {WARMUP_TABLE} PURGE"


def compaction_spec(where: Path) -> dict[str, Any]:
    """The warm-up's compaction as the engine would send it (a spec for ``parse_spec``)."""
    return {"catalog_name": WARMUP_CATALOG, "catalog_properties": {},
            "table": f"{WARMUP_NAMESPACE}.events", "action": "compaction",
            "options": dict(COMPACTION_OPTIONS), "allowed_locations": [where.as_uri()]}


def jvm_cpu_s(spark: Any) -> float | None:
    """CPU seconds the driver's JVM has used so far (Linux ``/proc``), or None."""
    try:
        pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except Exception:
        return None


class _Phases:
    """Wall and JVM CPU seconds of each phase of a warm-up, for the driver log."""

    def __init__(self, spark: Any) -> None:
        self.spark, self.parts = spark, list[str]()
        self.wall, self.cpu = time.monotonic(), jvm_cpu_s(spark)
        self.cpu0 = self.cpu

    def done(self, name: str) -> None:
        wall, cpu = time.monotonic(), jvm_cpu_s(self.spark)
        used = (f" / JVM CPU {cpu - self.cpu:.1f}" if cpu is not None and self.cpu is not None
                else "")
        self.parts.append(f"{name} {wall - self.wall:.1f}{used} s")
        self.wall, self.cpu = wall, cpu

    def __str__(self) -> str:
        total = (f"; JVM CPU {self.cpu - self.cpu0:.1f} s in all"
                 if self.cpu is not None and self.cpu0 is not None else "")
        return ", ".join(self.parts) + total


def warm_up(spark: Any, rows: int, compact: Compact | None = None) -> float | None:
    """Run one warm-up in ``spark``; its seconds, or None when skipped or failed. ``compact``
    runs the compaction spec the way a request's is run; without it the procedure is called
    directly."""
    if rows <= 0:
        return None
    where = Path(tempfile.mkdtemp(prefix="tms-warmup-"))
    t0 = time.monotonic()
    try:
        prefix = f"spark.sql.catalog.{WARMUP_CATALOG}"
        spark.conf.set(prefix, HADOOP_CATALOG)
        spark.conf.set(f"{prefix}.type", "hadoop")
        spark.conf.set(f"{prefix}.warehouse", (where / "warehouse").as_uri())
        phases = _Phases(spark)
        # inside the table's own location: a compaction reads nothing from elsewhere
        sources = write_files(where / "warehouse" / WARMUP_NAMESPACE / "events" / "sources",
                              rows)
        phases.done("files")
        for sql in setup_statements(rows, sources):
            spark.sql(sql).collect()
        phases.done("commits")
        if compact is not None:
            compact(compaction_spec(where))
        else:
            spark.sql(REWRITE_SQL).collect()
        phases.done("compaction")
        spark.sql(DROP_SQL).collect()
        phases.done("drop")
        print(f"[tms-warm] warm-up: {rows:,} rows in "
              f"{'pyarrow' if sources is not None else 'Spark'}-written files; "
              f"{phases}", file=sys.stderr, flush=True)
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


def run_from_env(spark: Any, environ: Mapping[str, str] = os.environ,
                 compact: Compact | None = None) -> float | None:
    return warm_up(spark, rows_from_env(environ), compact)
