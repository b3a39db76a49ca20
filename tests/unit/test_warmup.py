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


def test_statements_append_files_merge_manifests_rewrite_then_drop() -> None:
    sql = warmup.statements(1000, files=4)
    assert sql[0].startswith(f"CREATE TABLE {warmup.WARMUP_TABLE}")
    assert "'write.parquet.compression-codec'='zstd'" in sql[0]
    inserts = sql[1:-3]
    assert len(inserts) == 4
    ranges = [s.rsplit("FROM range(", 1)[1] for s in inserts]
    assert ranges == ["0, 250, 1, 1)", "250, 500, 1, 1)", "500, 750, 1, 1)", "750, 1000, 1, 1)"]
    # the merge a rewrite runs first on a table of many small manifests (manifest_prep),
    # then the rewrite: both code paths compiled before the first real compaction
    assert sql[-3] == (f"CALL {warmup.WARMUP_CATALOG}.system.rewrite_manifests("
                       "table => 'warmup.events')")
    assert sql[-2].startswith(f"CALL {warmup.WARMUP_CATALOG}.system.rewrite_data_files(")
    assert sql[-1] == f"DROP TABLE {warmup.WARMUP_TABLE} PURGE"


def test_warm_up_registers_its_own_catalog_runs_everything_and_cleans_up() -> None:
    spark = FakeSpark()
    took = warmup.warm_up(spark, 1000)
    assert took is not None and took >= 0
    prefix = f"spark.sql.catalog.{warmup.WARMUP_CATALOG}"
    assert spark.conf.values[prefix] == warmup.HADOOP_CATALOG
    assert spark.conf.values[f"{prefix}.type"] == "hadoop"
    warehouse = Path(spark.conf.values[f"{prefix}.warehouse"].removeprefix("file://"))
    assert not warehouse.exists()  # the temporary warehouse is gone
    assert spark.sql_run == warmup.statements(1000)


def test_a_failed_warm_up_is_logged_and_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    spark = FakeSpark(fail_on="rewrite_data_files")
    assert warmup.warm_up(spark, 1000) is None
    assert "warm-up failed, serving without: RuntimeError: boom" in capsys.readouterr().err
    warehouse = spark.conf.values[f"spark.sql.catalog.{warmup.WARMUP_CATALOG}.warehouse"]
    assert not Path(warehouse.removeprefix("file://")).exists()


def test_zero_rows_runs_nothing() -> None:
    spark = FakeSpark()
    assert warmup.warm_up(spark, 0) is None
    assert spark.sql_run == [] and spark.conf.values == {}


def test_a_job_cannot_use_the_warm_up_catalog_name() -> None:
    spec = im.parse_spec({"catalog_name": warmup.WARMUP_CATALOG, "catalog_properties": {},
                          "table": "ns.t", "action": "rewrite_manifests"})
    with pytest.raises(RuntimeError, match="reserved by the warm driver's warm-up"):
        warm_driver.register_catalog(FakeSpark(), spec, {})
