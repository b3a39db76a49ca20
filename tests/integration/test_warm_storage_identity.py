"""The warm driver never shares a cached object-store file system between two catalogs whose
endpoint or credentials differ. Hadoop caches a FileSystem per scheme, bucket and user, not per
conf: two catalogs with a bucket of the same name on two S3 endpoints (two moto servers on
loopback) would, in one driver JVM, both be served the first one's S3A file system, so the
second catalog's job would read and commit against the first endpoint. Here each catalog's
compaction runs on the warm engine in turn, and each succeeds on its own endpoint: the engine
started a new driver for the second storage identity."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_spark_s3 import _checksum
from tests.integration.test_warm_engine import Harness, settings  # noqa: F401 (fixture)
from tests.servers.moto import MotoServer, moto_server
from tests.unit.fakes import make_catalog, make_op, make_table
from tms import catalogs
from tms.domain import CatalogType, JobSpec
from tms.formats.iceberg.plugin import IcebergFormat
from tms.local import iceberg_data
from tms.spark.settings import SparkSettings

pytestmark = pytest.mark.integration

COMMITS = 4
ROWS_PER_COMMIT = 30


@pytest.fixture(scope="module")
def motos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MotoServer, MotoServer]]:
    with moto_server(tmp_path_factory.mktemp("moto_a")) as a, \
            moto_server(tmp_path_factory.mktemp("moto_b")) as b:
        yield a, b


def _catalog(pg: Any, moto: MotoServer, catalog_id: str, bucket: str, key: str
             ) -> catalogs.CatalogAccess:
    warehouse = f"{moto.create_bucket(bucket)}/wh"
    uri = pg.dsn.replace("postgresql://", "postgresql+psycopg://", 1)
    return catalogs.access(make_catalog(
        catalog_id, type=CatalogType.SQL, properties={"uri": uri, "warehouse": warehouse},
        storage_options={"s3.endpoint": moto.endpoint, "s3.region": moto.region,
                         "s3.path-style-access": "true", "s3.access-key-id": key,
                         "s3.secret-access-key": f"{key}-secret"},
        allowed_locations=(f"s3://{bucket}",)))


def _table(access: catalogs.CatalogAccess, namespace: str) -> Any:
    cat = iceberg_data.load_catalog(access.catalog_id, catalogs.pyiceberg_properties(access))
    table = iceberg_data.create_table(cat, namespace, "events")
    iceberg_data.append_batches(table, COMMITS, ROWS_PER_COMMIT)
    return table


def _job(access: catalogs.CatalogAccess, namespace: str) -> JobSpec:
    table = make_table(format="iceberg", catalog=access.catalog_id, namespace=namespace,
                       table_name="events")
    op = make_op(params={"min-input-files": "2", "target-file-size-bytes": str(64 << 20)})
    return IcebergFormat().build_job(table, access, op)


def test_catalogs_with_a_same_named_bucket_on_two_endpoints_never_share_a_driver(
        pg: Any, motos: tuple[MotoServer, MotoServer], settings: SparkSettings,  # noqa: F811
        tmp_path: Path) -> None:
    bucket = f"tms-same-{uuid.uuid4().hex[:8]}"  # the same name on both endpoints
    namespace = f"it_{uuid.uuid4().hex[:8]}"
    a = _catalog(pg, motos[0], "lake_a", bucket, "key-a")
    b = _catalog(pg, motos[1], "lake_b", bucket, "key-b")
    table_a, table_b = _table(a, namespace), _table(b, namespace)
    before_a, before_b = _checksum(table_a), _checksum(table_b)
    harness = Harness(settings, tmp_path)
    try:
        first = harness.run(_job(a, namespace))
        assert first.succeeded, f"{first.error}\n{first.log_tail[-3000:]}"
        pid = harness.driver_pid()
        second = harness.run(_job(b, namespace))
        assert second.succeeded, f"{second.error}\n{second.log_tail[-3000:]}"
        assert harness.driver_pid() != pid  # a driver of its own for the other endpoint
        assert harness.fallback.jobs == 0  # both ran warm
        for res in (first, second):
            assert res.result is not None
            assert res.result["rewritten_data_files_count"] == COMMITS
        # each table compacted on its own endpoint, its rows unchanged
        assert _checksum(table_a) == before_a and _checksum(table_b) == before_b
        assert iceberg_data.stats(table_a.refresh())["data_files"] == \
            first.result["added_data_files_count"]
        assert iceberg_data.stats(table_b.refresh())["data_files"] == \
            second.result["added_data_files_count"]
    finally:
        harness.engine.close()
