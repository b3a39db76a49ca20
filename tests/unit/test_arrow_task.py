"""The arrow data path's task and eligibility rules, without Spark (pyarrow files on disk,
fakes for the JVM objects)."""

from __future__ import annotations

import dataclasses
import decimal
import json
import os
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tms.jobs import arrow_eligibility, arrow_spark, arrow_store, arrow_task

COLUMNS = [(1, "id", "long", True), (2, "name", "string", False), (3, "ts", "timestamptz", False),
           (4, "day", "date", False), (5, "amount", "decimal(10, 2)", False),
           (6, "flag", "boolean", False), (7, "blob", "binary", False),
           (8, "local_ts", "timestamp", False), (9, "x", "double", False),
           (10, "y", "float", False), (11, "n", "int", False)]
FORMAT = {"codec": "zstd", "level": "1", "row_group_bytes": 128 * 1024 ** 2,
          "page_size_bytes": 1024 ** 2, "page_row_limit": 20_000,
          "dict_size_bytes": 2 * 1024 ** 2}


def _table(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"n{i}" if i % 7 else None for i in ids], pa.large_string()),
        "ts": pa.array([datetime(2024, 1, 1, tzinfo=UTC)] * n, pa.timestamp("us", tz="UTC")),
        "day": pa.array([date(2024, 1, 1 + i % 28) for i in ids], pa.date32()),
        "amount": pa.array([decimal.Decimal(i) / 100 for i in ids], pa.decimal128(10, 2)),
        "flag": pa.array([i % 2 == 0 for i in ids]),
        "blob": pa.array([bytes([i % 256]) for i in ids], pa.binary()),
        "local_ts": pa.array([datetime(2024, 1, 1)] * n, pa.timestamp("us")),
        "x": pa.array([i * 0.5 for i in ids], pa.float64()),
        "y": pa.array([i * 0.25 for i in ids], pa.float32()),
        "n": pa.array([i % 1000 for i in ids], pa.int32()),
    })


def _write(path: Path, start: int, n: int, row_group: int = 100) -> None:
    schema = arrow_task.output_schema(COLUMNS).set(1, pa.field(
        "name", pa.large_string(), metadata={b"PARQUET:field_id": b"2"}))
    pq.write_table(_table(start, n).cast(schema), path, compression="zstd",
                   row_group_size=row_group)


READ_THREADS = [1]  # the task tests run with inputs read in the task's thread and ahead


@pytest.fixture(autouse=True, params=[1, 3], ids=["read-in-task", "read-ahead"])
def read_threads(request: pytest.FixtureRequest) -> Any:
    READ_THREADS[0] = request.param
    yield request.param
    READ_THREADS[0] = 1


def _task(tmp: Path, inputs: list[tuple[str, int, int, int]], out: str = "out/o.parquet"
          ) -> dict[str, Any]:
    return {"group": 0, "output": str(tmp / out), "allowed": [str(tmp)], "columns": COLUMNS,
            "format": FORMAT, "inputs": inputs, "read_threads": READ_THREADS[0]}


def test_rows_split_evenly_over_the_outputs() -> None:
    parts = arrow_spark.split_rows([10, 10, 10], 2)
    assert parts == [[(0, 0, 10), (1, 0, 5)], [(1, 5, 5), (2, 0, 10)]]
    assert arrow_spark.split_rows([3], 5) == [[(0, 0, 1)], [(0, 1, 1)], [(0, 2, 1)]]
    assert sum(t for p in arrow_spark.split_rows([7, 0, 9, 4], 3) for _, _, t in p) == 20


def test_task_rewrites_slices_with_ids_types_and_codec(tmp_path: Path) -> None:
    _write(tmp_path / "a.parquet", 0, 250)
    _write(tmp_path / "b.parquet", 250, 150)
    got = arrow_task.run(_task(tmp_path, [(str(tmp_path / "a.parquet"), 50, 200, 250),
                                          (str(tmp_path / "b.parquet"), 0, 100, 150)]))
    assert "refused" not in got and got["rows"] == 300
    out = pq.ParquetFile(tmp_path / "out" / "o.parquet")
    assert out.metadata.row_group(0).column(0).compression == "ZSTD"
    assert out.read().column("id").to_pylist() == list(range(50, 350))
    schema = out.schema_arrow
    assert [f.metadata[b"PARQUET:field_id"] for f in schema] == [str(c[0]).encode()
                                                                 for c in COLUMNS]
    assert schema.field("id").nullable is False
    assert schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert schema.field("local_ts").type == pa.timestamp("us")
    assert schema.field("amount").type == pa.decimal128(10, 2)
    assert schema.field("name").type == pa.large_string()  # the inputs' variant, kept
    assert got["size"] == os.path.getsize(tmp_path / "out" / "o.parquet")
    assert got["offsets"][0] == 4 and len(got["offsets"]) == out.metadata.num_row_groups
    stored = {out.schema.column(i).name: json.loads(out.schema.column(i).logical_type.to_json())
              for i in (2, 7)}  # what Iceberg's readers check: micros, UTC-adjusted or not
    assert stored["ts"]["isAdjustedToUTC"] is True
    assert stored["local_ts"]["isAdjustedToUTC"] is False
    assert stored["ts"]["timeUnit"] == stored["local_ts"]["timeUnit"] == "microseconds"


def test_a_file_of_another_schema_is_refused_before_anything_is_written(tmp_path: Path
                                                                         ) -> None:
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), tmp_path / "old.parquet")
    got = arrow_task.run(_task(tmp_path, [(str(tmp_path / "old.parquet"), 0, 1, 1)]))
    assert got["refused"] == "ineligible" and "field id" in got["reason"]
    assert not (tmp_path / "out").exists()


def test_an_input_symlinked_outside_is_refused_and_nothing_written(tmp_path: Path) -> None:
    lake, outside = tmp_path / "lake", tmp_path / "other"
    lake.mkdir()
    outside.mkdir()
    _write(outside / "secret.parquet", 0, 10)
    (lake / "link.parquet").symlink_to(outside / "secret.parquet")
    task = {**_task(lake, [(str(lake / "link.parquet"), 0, 10, 10)])}
    got = arrow_task.run(task)
    assert got["refused"] == "location" and "outside" in got["reason"]
    assert not (lake / "out").exists()


def test_an_output_outside_is_refused(tmp_path: Path) -> None:
    _write(tmp_path / "a.parquet", 0, 10)
    task = _task(tmp_path / "lake", [(str(tmp_path / "a.parquet"), 0, 10, 10)])
    task["allowed"] = [str(tmp_path)]
    task["output"] = "/elsewhere/out.parquet"
    got = arrow_task.run(task)
    assert got["refused"] == "location"
    assert not Path("/elsewhere").exists()


def test_an_existing_output_is_never_overwritten(tmp_path: Path) -> None:
    _write(tmp_path / "a.parquet", 0, 10)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "o.parquet").write_bytes(b"theirs")
    with pytest.raises(FileExistsError):
        arrow_task.run(_task(tmp_path, [(str(tmp_path / "a.parquet"), 0, 10, 10)]))
    assert (tmp_path / "out" / "o.parquet").read_bytes() == b"theirs"


def test_a_row_count_that_differs_from_the_manifest_fails(tmp_path: Path) -> None:
    _write(tmp_path / "a.parquet", 0, 10)
    with pytest.raises(ValueError, match="rows in the file"):
        arrow_task.run(_task(tmp_path, [(str(tmp_path / "a.parquet"), 0, 10, 11)]))


def test_writer_options_follow_the_table() -> None:
    opts = arrow_task.writer_options({**FORMAT, "level": None, "page_row_limit": 500}, COLUMNS)
    assert opts["compression"] == "zstd" and opts["compression_level"] == 3  # Iceberg's
    assert opts["max_rows_per_page"] == 500 and opts["data_page_size"] == 1024 ** 2
    snappy = arrow_task.writer_options({**FORMAT, "codec": "snappy"}, COLUMNS)
    assert snappy["compression"] == "snappy" and "compression_level" not in snappy
    assert opts["store_decimal_as_integer"] is True


def test_no_statistics_for_float_and_double_columns() -> None:
    stats = arrow_task.writer_options(FORMAT, COLUMNS)["write_statistics"]
    floats = {name for _, name, t, _ in COLUMNS if t in ("float", "double")}
    assert floats and not floats & set(stats)
    assert {name for _, name, _, _ in COLUMNS} - floats == set(stats)


def test_row_groups_as_small_as_icebergs_first_size_check() -> None:
    class Meta:
        num_rows, num_row_groups = 10_000, 1

        def row_group(self, _: int) -> Any:
            return type("G", (), {"total_byte_size": 100_000})()

    pf = type("PF", (), {"metadata": Meta()})()
    assert arrow_task.rows_per_group([pf], 1000) == 100  # 10 bytes a row; the floor is 100
    assert arrow_task.rows_per_group([pf], 1000, min_rows=50) == 100
    assert arrow_task.rows_per_group([pf], 100, min_rows=5) == 10


def test_switch_and_storage_rules() -> None:
    assert arrow_eligibility.switched_off(None, {}) is None  # on unless an operator says
    assert arrow_eligibility.switched_off("auto", {"TMS_ARROW_REWRITE": "1"}) is None
    assert "TMS_ARROW_REWRITE" in (arrow_eligibility.switched_off(None, {
        "TMS_ARROW_REWRITE": "0"}) or "")
    assert "spec" in (arrow_eligibility.switched_off("spark", {"TMS_ARROW_REWRITE": "1"}) or "")
    no_s3 = "no static S3 keys"
    assert arrow_eligibility.storage_refusal("x", "file:///lake/t", no_s3) is None
    assert arrow_eligibility.storage_refusal("x", "/lake/t", no_s3) is None
    # S3 only when the catalog's storage mapped onto pyarrow (arrow_s3), with its reason
    assert arrow_eligibility.storage_refusal("x", "s3a://bucket/t", None) is None
    assert "x on S3: no static S3 keys" == arrow_eligibility.storage_refusal(
        "x", "s3a://bucket/t", no_s3)
    assert "gs storage" in (arrow_eligibility.storage_refusal("x", "gs://bucket/t", None) or "")
    assert "hdfs storage" in (arrow_eligibility.storage_refusal("x", "hdfs://nn/t", None) or "")
    assert arrow_eligibility.type_refusal("decimal(38, 10)") is None
    assert arrow_eligibility.type_refusal("struct<1: a: long>") is not None
    assert arrow_eligibility.type_refusal("timestamp_ns") is not None


class _Obj:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


def _fake_table(location: str = "file:///lake/t", sorted_: bool = False,
                types: tuple[str, ...] = ("long",), version: int = 2) -> tuple[Any, Any]:
    fields = [_Obj(fieldId=lambda i=i: i + 1, name=lambda i=i: f"c{i}",
                   type=lambda t=t: t, isRequired=lambda: False)
              for i, t in enumerate(types)]
    handle = _Obj(location=lambda: location,
                  sortOrder=lambda: _Obj(isUnsorted=lambda: not sorted_),
                  schema=lambda: _Obj(columns=lambda: fields))
    jvm = _Obj(org=_Obj(apache=_Obj(iceberg=_Obj(TableUtil=_Obj(
        formatVersion=lambda h: version)))))
    return handle, jvm


def test_table_refusals() -> None:
    ok, jvm = _fake_table()
    assert arrow_eligibility.table_refusal(ok, jvm, {}, "zstd", "no keys") is None
    s3, jvm = _fake_table("s3a://bucket/t")
    assert "table location on S3: no keys" in (arrow_eligibility.table_refusal(
        s3, jvm, {}, "zstd", "no keys") or "")
    assert arrow_eligibility.table_refusal(s3, jvm, {}, "zstd", None) is None
    assert "write.data.path on S3" in (arrow_eligibility.table_refusal(
        ok, jvm, {"write.data.path": "s3://b/d"}, "zstd", "no keys") or "")
    sorted_table, jvm = _fake_table(sorted_=True)
    assert "sort order" in (arrow_eligibility.table_refusal(sorted_table, jvm, {}, "zstd", None)
                            or "")
    v3, jvm3 = _fake_table(version=3)
    assert "format version 3" in (arrow_eligibility.table_refusal(v3, jvm3, {}, "zstd", None) or "")
    assert "lz4" in (arrow_eligibility.table_refusal(ok, jvm, {}, "lz4", None) or "")
    assert "orc" in (arrow_eligibility.table_refusal(
        ok, jvm, {"write.format.default": "orc"}, "zstd", None) or "")
    assert "bloom" in (arrow_eligibility.table_refusal(
        ok, jvm, {"write.parquet.bloom-filter-enabled.column.c0": "true"}, "zstd", None) or "")
    nested, jvm = _fake_table(types=("long", "list<string>"))
    assert "list<string>" in (arrow_eligibility.table_refusal(nested, jvm, {}, "zstd", None) or "")


def test_group_refusals() -> None:
    ok = arrow_eligibility.InputFile("file:///lake/t/data/a.parquet", "PARQUET", 1, 100, 10,
                                     0, 100, 0)
    assert arrow_eligibility.group_refusal([ok], 1, "no keys") is None
    cases: dict[str, dict[str, Any]] = {
        "delete files apply": {"deletes": 1}, "input file format ORC": {"file_format": "ORC"},
        "a file of an older partition spec": {"spec_id": 0},
        "a split input file": {"start": 10},
        "input file on S3: no keys": {"path": "s3://b/t/a.parquet"},
        "input file on gs storage (local files and S3 take the arrow path)":
            {"path": "gs://b/t/a.parquet"}}
    for reason, change in cases.items():
        bad = dataclasses.replace(ok, **change)
        assert arrow_eligibility.group_refusal([ok, bad], 1, "no keys") == reason
    on_s3 = dataclasses.replace(ok, path="s3://b/t/a.parquet")
    assert arrow_eligibility.group_refusal([ok, on_s3], 1, None) is None


def test_open_no_follow_opens_a_real_path_and_refuses_a_symlinked_directory(
        tmp_path: Path) -> None:
    real = tmp_path / "lake" / "t" / "data"
    real.mkdir(parents=True)
    (real / "a.parquet").write_bytes(b"PAR1")
    fd = arrow_task.open_no_follow(str(real / "a.parquet"), os.O_RDONLY)
    try:
        assert os.read(fd, 4) == b"PAR1"
    finally:
        os.close(fd)
    other = tmp_path / "other_tenant"
    other.mkdir()
    (other / "a.parquet").write_bytes(b"SECRET")
    (tmp_path / "lake" / "t" / "via").symlink_to(other, target_is_directory=True)
    with pytest.raises(OSError):  # the last component alone would not catch a directory
        arrow_task.open_no_follow(str(tmp_path / "lake" / "t" / "via" / "a.parquet"),
                                  os.O_RDONLY)
    with pytest.raises(OSError):
        arrow_task.open_no_follow("relative/a.parquet", os.O_RDONLY)


def test_a_directory_swapped_for_a_symlink_after_the_check_refuses_the_task(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lake = tmp_path / "lake"
    data = lake / "t" / "data"
    data.mkdir(parents=True)
    (data / "a.parquet").write_bytes(b"PAR1")
    other = tmp_path / "other_tenant" / "data"
    other.mkdir(parents=True)
    (other / "a.parquet").write_bytes(b"SECRET")
    checked = arrow_store.check

    def check_then_swap(raw: str, allowed: Any, literal: bool = False) -> Any:
        where = checked(raw, allowed, literal=literal)  # passes: no symlink yet
        data.rename(lake / "t" / "moved")
        data.symlink_to(other, target_is_directory=True)  # the race an attacker wins
        return where

    monkeypatch.setattr(arrow_store, "check", check_then_swap)  # where open_checked looks
    with pytest.raises(arrow_task.TaskRefused) as refused:
        arrow_task.open_checked(str(data / "a.parquet"), [lake.as_uri()], os.O_RDONLY)
    assert refused.value.kind == "location"
    assert "symlink" in refused.value.reason


class _FakeRdd:
    def __init__(self, sc: _FakeContext, data: list[Any]) -> None:
        self._sc, self._data = sc, data

    def map(self, func: Any) -> _FakeRdd:
        self._sc.func = func
        return self

    def collect(self) -> list[Any]:
        return [{"ran": True}] * len(self._data)


class _FakeContext:
    """What run_tasks asks of a SparkContext: the broadcast threshold, parallelize, map."""

    defaultParallelism = 2  # noqa: N815 (SparkContext's name)

    def __init__(self, threshold: int) -> None:
        self.threshold, self.data, self.func = threshold, None, None
        self.tasks: list[Any] = []
        utils = type("PythonUtils", (), {"getBroadcastThreshold": lambda _jsc: threshold})
        self._jvm = type("Jvm", (), {"PythonUtils": utils})
        self._jsc = object()

    def parallelize(self, data: list[Any], slices: int) -> _FakeRdd:
        import pickle

        self.data = pickle.dumps(data)  # what PySpark writes to its temporary file
        self.tasks = data
        return _FakeRdd(self, data)

    def setJobDescription(self, text: str | None) -> None:
        return None


def test_s3_keys_travel_with_the_function_never_in_the_descriptors(tmp_path: Path) -> None:
    from pyspark import cloudpickle

    from tms.jobs import arrow_s3

    secret = "SECRET-7f3a9c-never-on-disk"
    s3 = arrow_s3.options({"s3.access-key-id": "AKIDEXAMPLE", "s3.secret-access-key": secret,
                           "s3.endpoint": "http://127.0.0.1:9000", "s3.region": "us-east-1"})
    tasks = [_task(tmp_path, [("s3://lake/t/data/a.parquet", 0, 10, 10)])]
    sc = _FakeContext(threshold=1 << 20)
    spark = type("Spark", (), {"sparkContext": sc})()
    assert arrow_spark.run_tasks(spark, tasks, s3) == [{"ran": True}]
    assert sc.data is not None and secret.encode() not in sc.data
    assert b"AKIDEXAMPLE" not in sc.data
    assert sc.func.keywords["s3"].secret_key == secret  # bound to the function, in memory
    assert [t["read_threads"] for t in sc.tasks] == [2]  # one task, two cores: it reads ahead
    assert secret not in repr(sc.func.keywords["s3"])  # and never shown
    # without S3 the plain function goes, with no keys at all
    sc2 = _FakeContext(threshold=1 << 20)
    arrow_spark.run_tasks(type("Spark", (), {"sparkContext": sc2})(), tasks, None)
    assert sc2.func is arrow_task.run
    # a function PySpark would broadcast (through a file) is refused before anything runs
    small = _FakeContext(threshold=len(cloudpickle.dumps(sc.func)))
    with pytest.raises(arrow_spark.SecretTooLarge, match="broadcast threshold"):
        arrow_spark.run_tasks(type("Spark", (), {"sparkContext": small})(), tasks, s3)
    assert small.data is None and small.func is None


@pytest.mark.parametrize("cores,want", [(2, 2), (1, 1), (64, 8)])
def test_a_cold_job_starts_its_python_workers_ahead(cores: int, want: int) -> None:
    """One trivial task per core (at most 8) importing pyarrow, in the background; the task
    function is the arrow module's own, shipped by value like the real tasks."""
    sc = _FakeContext(threshold=1 << 20)
    sc.defaultParallelism = cores
    arrow_spark.prestart_workers(type("Spark", (), {"sparkContext": sc})()).join(10)
    assert list(sc.tasks) == list(range(want)) and sc.func is arrow_task.prestart
    assert arrow_task.prestart(0) == os.getpid()  # it ran here: pyarrow imports


def test_a_failed_prestart_costs_the_job_nothing() -> None:
    class Broken(_FakeContext):
        def parallelize(self, data: list[Any], slices: int) -> _FakeRdd:
            raise RuntimeError("SparkContext was shut down")

    thread = arrow_spark.prestart_workers(
        type("Spark", (), {"sparkContext": Broken(threshold=1 << 20)})())
    thread.join(10)
    assert not thread.is_alive()  # ended quietly; the tasks start their workers as before
