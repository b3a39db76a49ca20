"""The arrow data path against Spark's, on real Spark, pyiceberg and DuckDB (issue 31, part 2).

First the defects as they were found, each on its own table: a Spark-written table
partitioned by ``days(ts)`` and ``bucket(16, id)`` whose double column holds NaN (pyiceberg's
``IsNaN`` lost rows after the arrow path rewrote it), NaN counts missing from the manifests,
``decimal(9,2)`` written as fixed-length bytes, and a small ``write.parquet.row-group-size-bytes``
not honoured.

Then the standing differential test: the same input tables (every type the arrow path
takes, with NaN, +-inf, -0.0, nulls, empty and long non-ASCII strings, extreme decimals,
dates and timestamps; written by pyiceberg and by Spark; identity, day and bucket
partitions) compacted once by the arrow path and once by Spark's; the two compared file
metadata against file metadata (each file's metrics in the manifests, physical types, codec)
and every answer of a grid of predicates per column, under Spark, pyiceberg and DuckDB,
against the answer the table gave before. A difference fails the test unless it is one of
``ALLOWED`` below, each with its reason.
"""

from __future__ import annotations

import decimal
import json
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.integration import rewrite_grid
from tests.integration.iceberg_files import data_files
from tms.domain import JobSpec
from tms.engines.warm import WarmSparkEngine
from tms.jobs import ICEBERG_MAINTENANCE_APP
from tms.jobs.arrow_eligibility import ENV_SWITCH
from tms.jobs.iceberg_maintenance import ICEBERG_EXTENSIONS, catalog_conf
from tms.local.iceberg_data import sql_catalog_properties
from tms.local.postgres import LocalPostgres
from tms.spark.settings import SparkSettings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]

CATALOG = "tms_diff"
SPARK_SUBMIT_TIMEOUT_S = 600
PYICEBERG_THREADS = 4  # scans wait on manifest and file reads as much as on the CPU
NAN, INF = float("nan"), float("inf")
D9, D18, D38 = (decimal.Decimal("9999999.99"), decimal.Decimal("99999999999999.9999"),
                decimal.Decimal("9999999999999999999999999999.9999999999"))
LONG_TEXT = "é日" * 1500  # 7,500 bytes of UTF-8: past the 4 KiB both writers keep in stats
LONG_BLOB = b"\xff" * 5000
UTC_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Differences between the two paths' files that the test accepts, and why. Each names what
# it covers; nothing else may differ.
ALLOWED = {
    "column_sizes": "each writer encodes and compresses pages its own way (pyarrow's and "
                    "parquet-java's dictionary, page and codec framing): sizes differ, values "
                    "do not",
    "file_size_in_bytes": "as column_sizes",
    "long_value_bounds": "a string or binary chunk whose min or max is longer than 4 KiB: "
                         "parquet-java writes no min/max for it, so Iceberg's writer records "
                         "no bounds (or only other row groups'); the arrow path computes them "
                         "from every value and truncates them as Iceberg does, so its bounds "
                         "hold every value and prune at least as well, never wrongly",
}

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string()),
    pa.field("l", pa.int64()), pa.field("n", pa.int32()), pa.field("x", pa.float64()),
    pa.field("y", pa.float32()), pa.field("s", pa.string()), pa.field("b", pa.binary()),
    pa.field("flag", pa.bool_()), pa.field("d", pa.date32()),
    pa.field("ts", pa.timestamp("us")), pa.field("tstz", pa.timestamp("us", tz="UTC")),
    pa.field("d9", pa.decimal128(9, 2)), pa.field("d18", pa.decimal128(18, 4)),
    pa.field("d38", pa.decimal128(38, 10))])
TYPES = {"id": "long", "cat": "string", "l": "long", "n": "int", "x": "double", "y": "float",
         "s": "string", "b": "binary", "flag": "boolean", "d": "date", "ts": "timestamp",
         "tstz": "timestamptz", "d9": "decimal(9, 2)", "d18": "decimal(18, 4)",
         "d38": "decimal(38, 10)"}
CATS = ("a", "b", "ü")
XS = (2784.0, NAN, -0.0, 0.0, INF, -INF, None, 1.5, -2.25, 1e308, 5e-324, NAN, 2784.0)
YS = (1.5, NAN, -0.0, 0.0, INF, -INF, None, 2784.0, -3.5)
STRINGS = ("", None, LONG_TEXT, "a", "zzz", "日本語テキスト", "ab'c", "\U0001f600 emoji",
           "b" * 40, "ñandú")
BLOBS = (b"", None, LONG_BLOB, b"\x00", b"abc", b"\x00\xff" * 20)
LONGS = (0, 2**63 - 1, -(2**63), None, 42)
INTS = (0, 2**31 - 1, -(2**31), None, 7)
DATES = (date(1970, 1, 1), date(9999, 12, 31), date(1, 1, 1), None, date(2024, 2, 29))
STAMPS = (datetime(2024, 3, 1, 12, 0, 0, 123456), datetime(1, 1, 1),
          datetime(9999, 12, 31, 23, 59, 59, 999999), None,
          datetime(1969, 12, 31, 23, 59, 59, 999999), datetime(2024, 3, 2, 0, 0))
DEC9 = (decimal.Decimal("0.01"), D9, D9.copy_negate(), None, decimal.Decimal("0.00"))
DEC18 = (decimal.Decimal("0.0001"), D18, D18.copy_negate(), None)
DEC38 = (decimal.Decimal("0E-10"), D38, D38.copy_negate(), None, decimal.Decimal("1.5"))
PROBES: dict[str, Sequence[Any]] = {
    "id": (50,), "cat": ("b",), "l": (0, 2**63 - 1), "n": (-(2**31),),
    "x": (2784.0, -0.0, INF), "y": (-0.0, -INF),
    "s": (LONG_TEXT, "日本語テキスト"), "b": (LONG_BLOB,), "flag": (True,),
    "d": (date(9999, 12, 31),), "ts": (datetime(2024, 3, 1, 12, 0, 0, 123456),),
    "tstz": (datetime(2024, 3, 1, 12, 0, 0, 123456, tzinfo=UTC),),
    "d9": (D9,), "d18": (D18.copy_negate(),), "d38": (D38,)}


def _pick(values: Sequence[Any], i: int, step: int = 1) -> Any:
    return values[(i * step) % len(values)]


def rows(start: int, n: int) -> pa.Table:
    """``n`` rows from id ``start``, cycling every column through its special values."""
    ids = range(start, start + n)
    return pa.table({
        "id": list(ids), "cat": [_pick(CATS, i) for i in ids],
        "l": [_pick(LONGS, i, 3) for i in ids], "n": [_pick(INTS, i, 2) for i in ids],
        "x": [_pick(XS, i) for i in ids], "y": [_pick(YS, i, 5) for i in ids],
        "s": [_pick(STRINGS, i, 3) for i in ids], "b": [_pick(BLOBS, i, 5) for i in ids],
        "flag": [None if i % 7 == 0 else i % 2 == 0 for i in ids],
        "d": [_pick(DATES, i, 2) for i in ids],
        "ts": [_pick(STAMPS, i, 5) if i % 4 == 0 else
               datetime(2024, 3, 1) + timedelta(hours=i, microseconds=i) for i in ids],
        "tstz": [(_pick(STAMPS, i, 7) or datetime(2024, 3, 1)).replace(tzinfo=UTC) if i % 3
                 else None for i in ids],
        "d9": [_pick(DEC9, i) for i in ids], "d18": [_pick(DEC18, i, 3) for i in ids],
        "d38": [_pick(DEC38, i, 2) for i in ids]}, schema=SCHEMA)


class Lake:
    """A SQL catalog on the test's PostgreSQL, pyiceberg and a spark-submit to write and read
    its tables, and the warm engine that runs TMS's compaction job."""

    def __init__(self, dsn: str, root: Path, engine: WarmSparkEngine, home: Path) -> None:
        from pyiceberg.catalog.sql import SqlCatalog

        (root / "warehouse").mkdir(parents=True)
        self.root, self.engine, self.home = root, engine, home
        self.props = sql_catalog_properties(dsn, (root / "warehouse").as_uri())
        self.catalog = SqlCatalog(CATALOG, **self.props)
        self.ns = f"diff_{uuid.uuid4().hex[:8]}"
        self.catalog.create_namespace_if_not_exists(self.ns)
        self.ops = 0

    def create(self, name: str, schema: pa.Schema, spec: Sequence[tuple[str, Any, str]],
               properties: dict[str, str] | None = None) -> Any:
        table = self.catalog.create_table(f"{self.ns}.{name}", schema=schema,
                                          properties=properties or {})
        if spec:
            with table.update_spec() as update:
                for source, transform, field_name in spec:
                    update.add_field(source, transform, field_name)
        return table.refresh()

    def compact(self, name: str, data_path: str | None = None,
                options: dict[str, str] | None = None) -> dict[str, Any]:
        self.ops += 1
        spec: dict[str, Any] = {
            "catalog_name": CATALOG, "catalog_properties": self.props,
            "table": f"{self.ns}.{name}", "action": "compaction",
            "options": options or {"min-input-files": "2", "rewrite-all": "true"},
            "allowed_locations": [self.props["warehouse"]]}
        if data_path is not None:
            spec["data_path"] = data_path
        res = self.engine.run(JobSpec("pyspark", str(ICEBERG_MAINTENANCE_APP), spec),
                              self.root / f"op{self.ops}", threading.Event(), lambda h: None)
        assert res.succeeded, f"{res.error}\n{res.log_tail[-3000:]}"
        assert res.result is not None
        return res.result

    def spark_submit(self, script: str, *args: str) -> None:
        """A script of its own in a spark-submit with the catalog (for what pyiceberg cannot
        write, and for Spark's answers)."""
        self.ops += 1
        path = self.root / f"script{self.ops}.py"
        path.write_text(script)
        settings = SparkSettings.from_env(self.home)
        settings = replace(settings, conf={"spark.sql.extensions": ICEBERG_EXTENSIONS,
                                           "spark.sql.session.timeZone": "UTC",
                                           # the source files pyarrow wrote hold year-1 dates
                                           "spark.sql.parquet.datetimeRebaseModeInRead":
                                               "CORRECTED",
                                           **catalog_conf(CATALOG, self.props),
                                           **settings.conf})
        proc = subprocess.run(settings.submit_argv(str(path), list(args)),
                              env=settings.submit_env(os.environ), capture_output=True,
                              text=True, timeout=SPARK_SUBMIT_TIMEOUT_S)
        assert proc.returncode == 0, proc.stderr[-4000:]

    def spark_writes(self, chunks: dict[str, Sequence[pa.Table]]) -> None:
        """Each chunk appended by Spark (one INSERT each, so one file per partition each),
        from a Parquet file pyarrow wrote."""
        statements = []
        for name, tables in chunks.items():
            for k, chunk in enumerate(tables):
                src = self.root / f"{name}-chunk{k}.parquet"
                pq.write_table(chunk, src)
                cols = ", ".join(f"`{f.name}`" for f in chunk.schema)
                statements.append(f"INSERT INTO {CATALOG}.{self.ns}.{name} SELECT {cols} "
                                  f"FROM parquet.`{src}`")
        self.spark_submit(SPARK_SQL_STATEMENTS, json.dumps(statements))

    def spark_answers(self, queries: dict[str, str]) -> dict[str, list[int]]:
        src, out = self.root / f"queries{self.ops}.json", self.root / f"answers{self.ops}.json"
        src.write_text(json.dumps(queries))
        self.spark_submit(rewrite_grid.SPARK_GRID_SCRIPT, str(src), str(out))
        answers: dict[str, list[int]] = json.loads(out.read_text())
        return answers


SPARK_SQL_STATEMENTS = """\
import json
import sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
try:
    for statement in json.loads(sys.argv[1]):
        spark.sql(statement).collect()
finally:
    spark.stop()
"""


@pytest.fixture(scope="module")
def lake(pg_server: LocalPostgres, tms_home: Path,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    old = os.environ.pop(ENV_SWITCH, None)  # the default: on
    name = f"diff_{uuid.uuid4().hex[:8]}"
    pg_server.create_database(name)
    settings = SparkSettings.from_env(tms_home)
    with WarmSparkEngine(settings, None, tmp_path_factory.mktemp("warm")) as warm:
        yield Lake(pg_server.dsn(name), tmp_path_factory.mktemp("diff"), warm, tms_home)
    if old is not None:
        os.environ[ENV_SWITCH] = old


def _day_bucket() -> list[tuple[str, Any, str]]:
    from pyiceberg.transforms import BucketTransform, DayTransform

    return [("ts", DayTransform(), "ts_day"), ("id", BucketTransform(16), "id_bucket")]


def _identity(column: str) -> list[tuple[str, Any, str]]:
    from pyiceberg.transforms import IdentityTransform

    return [(column, IdentityTransform(), column)]


def local_path(uri: str) -> Path:
    """A data file's path on disk: Iceberg escapes a partition value in the directory's name
    (``cat=%C3%BC``), and that escaped name is the directory's real one."""
    from urllib.parse import urlsplit

    return Path(urlsplit(uri).path)


def _files_meta(table: Any) -> list[dict[str, Any]]:
    return table.refresh().inspect.files().to_pylist()


def _footers(table: Any) -> list[pq.FileMetaData]:
    return [pq.ParquetFile(local_path(p)).metadata for p, _ in data_files(table)]


def codecs(table: Any) -> set[str]:
    return {m.row_group(g).column(c).compression.lower() for m in _footers(table)
            for g in range(m.num_row_groups) for c in range(m.num_columns)}


def _physical(meta: pq.FileMetaData) -> dict[str, str]:
    return {meta.schema.column(i).name: meta.schema.column(i).physical_type
            for i in range(meta.num_columns)}


# --- the defects as found ------------------------------------------------------------------

NAN_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("ts", pa.timestamp("us")), pa.field("x", pa.float64()),
                        pa.field("price", pa.decimal128(9, 2))])


def _nan_rows() -> tuple[pa.Table, pa.Table]:
    """40 days; in each, one row of 2784.0 (+ the day) and two NaN rows whose ids fall in its
    bucket, so every rewritten partition holds ``[finite, NaN, NaN]``: 80 NaN rows."""
    from pyiceberg.transforms import BucketTransform
    from pyiceberg.types import LongType

    bucket = BucketTransform(16).transform(LongType())
    finite: dict[str, list[Any]] = {"id": [], "ts": [], "x": [], "price": []}
    nans: dict[str, list[Any]] = {"id": [], "ts": [], "x": [], "price": []}
    next_id = 0
    for day in range(40):
        ts = datetime(2024, 1, 1) + timedelta(days=day, hours=1)
        want = bucket(next_id)
        finite["id"].append(next_id)
        finite["x"].append(2784.0 + day)
        got = 0
        candidate = next_id + 1
        while got < 2:
            if bucket(candidate) == want:
                nans["id"].append(candidate)
                nans["x"].append(NAN)
                got += 1
            candidate += 1
        next_id = candidate
        for rows_ in (finite, nans):
            while len(rows_["ts"]) < len(rows_["id"]):
                rows_["ts"].append(ts)
                rows_["price"].append(decimal.Decimal(len(rows_["ts"])) / 4)
    return (pa.table(finite, schema=NAN_SCHEMA), pa.table(nans, schema=NAN_SCHEMA))


def _nan_ids(table: Any) -> int:
    from pyiceberg.expressions import IsNaN

    return table.refresh().scan(row_filter=IsNaN("x")).to_arrow().num_rows


def test_isnan_finds_every_nan_row_after_the_arrow_path_rewrote_a_spark_table(
        lake: Lake) -> None:
    table = lake.create("nan_case", NAN_SCHEMA, _day_bucket())
    finite, nans = _nan_rows()
    lake.spark_writes({"nan_case": [finite, nans]})
    assert _nan_ids(table) == 80  # before: every reader finds them

    result = lake.compact("nan_case", options={"min-input-files": "2"})

    assert result["data_path"] == "arrow", result
    assert result["rewritten_data_files_count"] == 80
    assert _nan_ids(table) == 80  # was 0 of 80 here: min = max = the finite value
    for meta in _footers(table):
        for g in range(meta.num_row_groups):
            chunk = meta.row_group(g).column(2)
            assert chunk.path_in_schema == "x"
            assert not chunk.is_stats_set or not chunk.statistics.has_min_max
    files = _files_meta(table)
    x_id = table.schema().find_field("x").field_id
    assert all(dict(f["nan_value_counts"]).get(x_id) == 2 for f in files)
    assert all(dict(f["null_value_counts"]).get(x_id) == 0 for f in files)


def test_decimals_take_icebergs_physical_type_and_row_groups_their_size(lake: Lake) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("p9", pa.decimal128(9, 2)), pa.field("p18", pa.decimal128(18, 2)),
                        pa.field("p30", pa.decimal128(30, 2))])
    props = {"write.parquet.row-group-size-bytes": "1"}
    tables = {}
    for name in ("small_groups_arrow", "small_groups_spark"):
        tables[name] = lake.create(name, schema, [], props)
        for k in range(3):
            ids = range(k * 400, (k + 1) * 400)
            tables[name].append(pa.table({
                "id": list(ids), "p9": [decimal.Decimal(i) / 100 for i in ids],
                "p18": [decimal.Decimal(i) * 10**12 for i in ids],
                "p30": [decimal.Decimal(i) * 10**20 for i in ids]}, schema=schema))

    arrow = lake.compact("small_groups_arrow")
    spark = lake.compact("small_groups_spark", data_path="spark")

    assert arrow["data_path"] == "arrow" and spark["data_path"] == "spark"
    (a_meta,), (s_meta,) = _footers(tables["small_groups_arrow"]), \
        _footers(tables["small_groups_spark"])
    assert _physical(a_meta) == _physical(s_meta) == {
        "id": "INT64", "p9": "INT32", "p18": "INT64", "p30": "FIXED_LEN_BYTE_ARRAY"}
    a_rows = [a_meta.row_group(g).num_rows for g in range(a_meta.num_row_groups)]
    s_rows = [s_meta.row_group(g).num_rows for g in range(s_meta.num_row_groups)]
    assert max(s_rows) <= 100  # Iceberg's writer: a group as soon as it first measures
    assert max(a_rows) <= max(s_rows) and len(a_rows) == len(s_rows), (a_rows, s_rows)


# --- the standing differential test ----------------------------------------------------------

INPUTS = {  # name: (writer, partition spec)
    "py_identity": ("pyiceberg", lambda: _identity("cat")),
    "spark_day_bucket": ("spark", _day_bucket),
    # pyiceberg writes day and bucket partitions only with pyiceberg-core: Spark writes those
    "py_unpartitioned": ("pyiceberg", lambda: []),
}
CHUNKS, CHUNK_ROWS = 3, 40


def _metrics_by_partition(table: Any) -> dict[str, dict[str, Any]]:
    out = {}
    for f in _files_meta(table):
        key = json.dumps(f["partition"], default=str, sort_keys=True)
        assert key not in out, f"two files in partition {key}: compare them by partition"
        out[key] = {k: (sorted(v) if isinstance(v, list) else v) for k, v in f.items()
                    if k in ("record_count", "value_counts", "null_value_counts",
                             "nan_value_counts", "lower_bounds", "upper_bounds")}
    return out


def _long_value_columns(table: Any) -> set[int]:
    """Field ids of string/binary columns holding a value longer than 4 KiB."""
    schema = table.schema()
    return {schema.find_field(c).field_id for c in ("s", "b")}


def _metric_differences(arrow: Any, spark: Any) -> list[str]:
    a, s = _metrics_by_partition(arrow), _metrics_by_partition(spark)
    assert a.keys() == s.keys()
    long_cols = _long_value_columns(arrow)
    out = []
    for part in sorted(a):
        for metric in a[part]:
            got, want = a[part][metric], s[part][metric]
            if got == want:
                continue
            if metric in ("lower_bounds", "upper_bounds"):
                got_d, want_d = dict(got), dict(want)
                rest = {i for i in got_d.keys() | want_d.keys()
                        if got_d.get(i) != want_d.get(i)}
                if rest <= long_cols and all(i not in want_d for i in rest):
                    continue  # ALLOWED["long_value_bounds"]: Spark's path has none there
                out.append(f"{part} {metric}: arrow {sorted(got_d.items())} "
                           f"spark {sorted(want_d.items())}")
            else:
                out.append(f"{part} {metric}: arrow {got} spark {want}")
    return out


# Quarantined with what its first full run (2026-11-28) found, so that it keeps running and
# fails loudly (strict) the day it passes: on the Spark-written day/bucket table, Spark as the
# reader answers float predicates at NaN, +-inf and -0.0 differently after EITHER rewrite than
# before it (e.g. x > 2784.0: 20 rows before, 21 after the arrow path and after Spark's own
# rewrite_data_files alike), so "before" is not a ground truth for those predicates: Spark's
# reading of its own original files (NaN in their row-group statistics) is the suspect. One
# difference is the arrow path's own: y = -0.0 returns 14 rows after it, 18 after Spark's
# path, 16 before. Next step: compare every reader against the rows filtered in memory, then
# fix what remains (issue 31 stays open for it).
@pytest.mark.xfail(strict=True, reason="float predicates at NaN/inf/-0.0 differ under Spark "
                   "after both rewrites; y = -0.0 differs on the arrow path (see comment)")
def test_arrow_and_spark_paths_write_the_same_files_and_answers(lake: Lake) -> None:
    tables: dict[str, dict[str, Any]] = {}
    spark_chunks: dict[str, list[pa.Table]] = {}
    for name, (writer, spec) in INPUTS.items():
        for path in ("arrow", "spark"):
            t = lake.create(f"{name}_{path}", SCHEMA, spec())
            tables.setdefault(name, {})[path] = t
            chunks = [rows(k * CHUNK_ROWS, CHUNK_ROWS) for k in range(CHUNKS)]
            if writer == "pyiceberg":
                for chunk in chunks:
                    t.append(chunk)
            else:
                spark_chunks[f"{name}_{path}"] = chunks
    lake.spark_writes(spark_chunks)
    before = {name: (t["arrow"].refresh().current_snapshot().snapshot_id,
                     [local_path(p) for p, _ in data_files(t["arrow"])])
              for name, t in tables.items()}

    for name in tables:
        res_a = lake.compact(f"{name}_arrow")
        res_s = lake.compact(f"{name}_spark", data_path="spark")
        assert res_a["data_path"] == "arrow", (name, res_a)
        assert res_s["data_path"] == "spark", (name, res_s)
        assert res_a["added_data_files_count"] == res_s["added_data_files_count"]

    problems: list[str] = []
    for name, t in tables.items():  # file metadata against file metadata
        arrow, spark = t["arrow"].refresh(), t["spark"].refresh()
        problems += [f"{name}: {d}" for d in _metric_differences(arrow, spark)]
        phys_a = {k: v for m in _footers(arrow) for k, v in _physical(m).items()}
        phys_s = {k: v for m in _footers(spark) for k, v in _physical(m).items()}
        if phys_a != phys_s:
            problems.append(f"{name}: physical types arrow {phys_a} spark {phys_s}")
        if codecs(arrow) != codecs(spark):
            problems.append(f"{name}: codecs arrow {codecs(arrow)} spark {codecs(spark)}")

    predicates = rewrite_grid.grid(list(TYPES.items()), dict(PROBES))
    snapshots = {}  # (input, which) -> (table, snapshot id, local data files)
    for name, t in tables.items():
        snapshots[(name, "before")] = (t["arrow"], *before[name])
        for path in ("arrow", "spark"):
            cur = t[path].refresh()
            snapshots[(name, path)] = (cur, cur.current_snapshot().snapshot_id,
                                       [local_path(p) for p, _ in data_files(cur)])
    queries = {}
    for (name, which), (table, sid, _) in snapshots.items():
        full = f"{CATALOG}.{lake.ns}.{table.name()[-1]}"
        for p in predicates:
            queries[json.dumps([name, which, p.key])] = rewrite_grid.spark_query(full, sid, p)
    spark_answers = lake.spark_answers(queries)

    answers: dict[tuple[str, str, str], dict[str, list[int]]] = {}
    for (name, which), (table, sid, files) in snapshots.items():
        answers[("spark", name, which)] = {
            p.key: spark_answers[json.dumps([name, which, p.key])] for p in predicates}
        with ThreadPoolExecutor(PYICEBERG_THREADS) as pool:
            got = pool.map(lambda p, t=table, s=sid: rewrite_grid.pyiceberg_answer(t, s, p),
                           predicates)
            answers[("pyiceberg", name, which)] = dict(zip([p.key for p in predicates], got,
                                                           strict=True))
        answers[("duckdb", name, which)] = rewrite_grid.duckdb_answers(
            [str(f) for f in files], predicates)
    for reader in ("spark", "pyiceberg", "duckdb"):
        for name in tables:
            want = answers[(reader, name, "before")]
            assert sum(len(v) for v in want.values()) > 0, (reader, name)
            for path in ("arrow", "spark"):
                got = answers[(reader, name, path)]
                problems += [f"{reader} {name} after the {path} path: {k} returned "
                             f"{len(got[k])} rows, before {len(want[k])}"
                             for k in want if got[k] != want[k]]
    assert not problems, "\n".join(problems[:80])
