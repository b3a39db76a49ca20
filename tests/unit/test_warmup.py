"""The warm driver's warm-up (tms.jobs.warmup) against a recording stand-in for a session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tms.jobs import iceberg_maintenance as im
from tms.jobs import warm_driver, warmup


class FakeConf:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def set(self, key: str, value: str) -> None:
        self.values[key] = value


class FakeResult:
    def collect(self) -> list[Any]:
        return []


class FakeCatalog:
    def clearCache(self) -> None:  # noqa: N802 - pyspark's name
        pass


class FakeSpark:
    def __init__(self, fail_on: str | None = None) -> None:
        self.conf, self.catalog = FakeConf(), FakeCatalog()
        self.sql_run: list[str] = []
        self.fail_on = fail_on

    def sql(self, text: str) -> FakeResult:
        self.sql_run.append(text)
        if self.fail_on and self.fail_on in text:
            raise RuntimeError("boom")
        return FakeResult()


def test_rows_from_env_default_off_and_bad_values() -> None:
    assert warmup.rows_from_env({}) == warmup.WARMUP_ROWS
    assert warmup.rows_from_env({warmup.ENV_WARMUP_ROWS: "0"}) == 0
    assert warmup.rows_from_env({warmup.ENV_WARMUP_ROWS: "5000"}) == 5000
    for bad in ("-1", "1e6", "lots", str(warmup.MAX_WARMUP_ROWS + 1)):
        assert warmup.rows_from_env({warmup.ENV_WARMUP_ROWS: bad}) == warmup.WARMUP_ROWS


def test_spark_written_fallback_appends_files_then_merges_manifests() -> None:
    sql = warmup.setup_statements(1000, None, files=4)
    assert sql[0].startswith(f"CREATE TABLE {warmup.WARMUP_TABLE}")
    assert "'write.parquet.compression-codec'='zstd'" in sql[0]
    inserts = sql[1:-1]
    assert len(inserts) == 4
    ranges = [s.rsplit("FROM range(", 1)[1] for s in inserts]
    assert ranges == ["0, 250, 1, 1)", "250, 500, 1, 1)", "500, 750, 1, 1)", "750, 1000, 1, 1)"]
    # the merge a rewrite runs first on a table of many small manifests (manifest_prep)
    assert sql[-1] == (f"CALL {warmup.WARMUP_CATALOG}.system.rewrite_manifests("
                       "table => 'warmup.events')")
    assert warmup.REWRITE_SQL.startswith(
        f"CALL {warmup.WARMUP_CATALOG}.system.rewrite_data_files(")
    assert warmup.DROP_SQL == f"DROP TABLE {warmup.WARMUP_TABLE} PURGE"


def test_files_are_written_as_pyiceberg_writes_them(tmp_path: Path) -> None:
    """zstd, dictionary pages, decimals as integers, Iceberg field ids, every column type of
    the table: the decoders a real compaction's inputs need are the ones the warm-up trains."""
    pq = pytest.importorskip("pyarrow.parquet")
    dirs = warmup.write_files(tmp_path, 4000, files=4, commits=2)
    assert dirs is not None and len(dirs) == 2
    files = sorted(p for d in dirs for p in d.iterdir())
    assert len(files) == 4
    meta = pq.ParquetFile(files[0]).metadata
    assert meta.num_rows == 1000
    schema = meta.schema.to_arrow_schema()
    assert [f.name for f in schema] == ["id", "kind", "amount", "user_id", "ts", "price",
                                        "label"]
    assert [f.metadata[b"PARQUET:field_id"] for f in schema] == [
        str(i).encode() for i in range(1, 8)]
    assert str(schema.field("price").type) == "decimal128(12, 2)"
    assert meta.schema.column(5).physical_type == "INT64"  # store_decimal_as_integer
    for c in range(meta.num_columns):
        col = meta.row_group(0).column(c)
        assert col.compression == "ZSTD" and "RLE_DICTIONARY" in col.encodings
    table = pq.read_table(files[0])
    assert len(set(table.column("kind").to_pylist())) == 4
    assert len(set(table.column("label").to_pylist())) > 500  # strings of many values too
    sql = warmup.setup_statements(4000, dirs)
    assert "compression-codec" not in sql[0]  # as pyiceberg: the data says zstd
    assert sql[1:3] == [f"CALL {warmup.WARMUP_CATALOG}.system.add_files(table => "
                        f"'warmup.events', source_table => '`parquet`.`{d.as_uri()}`')"
                        for d in dirs]


def test_warm_up_compacts_through_the_request_path_and_cleans_up() -> None:
    spark, specs = FakeSpark(), []
    took = warmup.warm_up(spark, 1000, compact=specs.append)
    assert took is not None and took >= 0
    prefix = f"spark.sql.catalog.{warmup.WARMUP_CATALOG}"
    assert spark.conf.values[prefix] == warmup.HADOOP_CATALOG
    assert spark.conf.values[f"{prefix}.type"] == "hadoop"
    warehouse = Path(spark.conf.values[f"{prefix}.warehouse"].removeprefix("file://"))
    assert not warehouse.parent.exists()  # the temporary directory is gone
    assert "rewrite_data_files" not in " ".join(spark.sql_run)  # the request path did it
    assert spark.sql_run[-1] == warmup.DROP_SQL
    [spec] = specs
    parsed = im.parse_spec(spec)  # what a request's spec goes through
    assert (parsed.catalog_name, parsed.table, parsed.action) == (
        warmup.WARMUP_CATALOG, ("warmup", "events"), "compaction")
    assert parsed.options == warmup.COMPACTION_OPTIONS
    assert parsed.allowed_locations == (warehouse.parent.as_uri(),)


def test_without_a_compact_function_the_procedure_runs() -> None:
    spark = FakeSpark()
    assert warmup.warm_up(spark, 1000) is not None
    assert spark.sql_run[-2:] == [warmup.REWRITE_SQL, warmup.DROP_SQL]


def test_a_failed_warm_up_is_logged_and_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    spark = FakeSpark(fail_on="rewrite_data_files")
    assert warmup.warm_up(spark, 1000) is None
    assert "warm-up failed, serving without: RuntimeError: boom" in capsys.readouterr().err
    warehouse = spark.conf.values[f"spark.sql.catalog.{warmup.WARMUP_CATALOG}.warehouse"]
    assert not Path(warehouse.removeprefix("file://")).parent.exists()


def test_zero_rows_runs_nothing() -> None:
    spark = FakeSpark()
    assert warmup.warm_up(spark, 0) is None
    assert spark.sql_run == [] and spark.conf.values == {}


def test_a_job_cannot_use_the_warm_up_catalog_name() -> None:
    spec = im.parse_spec({"catalog_name": warmup.WARMUP_CATALOG, "catalog_properties": {},
                          "table": "ns.t",
                          "allowed_locations": ["/wh"], "action": "rewrite_manifests"})
    with pytest.raises(RuntimeError, match="reserved by the warm driver's warm-up"):
        warm_driver.register_catalog(FakeSpark(), spec, {})


def test_files_are_written_a_row_group_at_a_time(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory stays bounded by a row group whatever the row count (TMS_WARMUP_ROWS)."""
    pq = pytest.importorskip("pyarrow.parquet")
    monkeypatch.setattr(warmup, "PYICEBERG_ROW_GROUP_ROWS", 300)
    dirs = warmup.write_files(tmp_path, 1000, files=1, commits=1)
    assert dirs is not None
    [path] = list(dirs[0].iterdir())
    meta = pq.ParquetFile(path).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [300, 300, 300,
                                                                                100]
    assert pq.read_table(path).column("id").to_pylist() == list(range(1000))
