"""The Hudi writer configuration through the API: an admin's CreateCatalog is checked against
the writer schema (INVALID_ARGUMENT naming each property), on a real server and database."""

from __future__ import annotations

import grpc

from tests.integration.test_api import error_of
from tms.v1 import tms_pb2

GOOD = {"hudi.writer.hoodie.cleaner.commits.retained": "30",
        "hudi.writer.hoodie.keep.min.commits": "40",
        "hudi.writer.hoodie.write.lock.zookeeper.lock_key": "trips",
        "hudi.writer.properties-file": "lake/{table_id}.properties",
        "hudi.utilities-jar": "/opt/hudi/hudi-utilities-slim-bundle_2.12-1.0.2.jar"}


def create(stub, catalog_id: str, properties: dict[str, str],
           secrets: dict[str, str] | None = None) -> tms_pb2.Catalog:
    return stub.CreateCatalog(tms_pb2.CreateCatalogRequest(catalog_id=catalog_id, catalog=(
        tms_pb2.Catalog(type="hadoop", properties=properties, secrets=secrets or {},
                        allowed_locations=["/lake"]))))


def test_writer_settings_are_checked_when_a_catalog_is_stored(api) -> None:
    stub = api.stub()
    made = create(stub, "lake", GOOD)
    assert dict(made.properties) == GOOD  # a known ...lock_key is not taken for a secret
    bad = {"hudi.writer.hoodie.base.path": "/elsewhere",
           "hudi.writer.hoodie.write.lock.provider": "com.evil.Lock",
           "hudi.writer.hoodie.cleaner.commits.retained": "30\ninclude=/etc/passwd",
           "hudi.writer.properties-file": "../../etc/passwd",
           "hudi.spark-bundle": "/a.jar,/b.jar"}
    code, fields = error_of(lambda: create(stub, "bad", bad))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    # a control character is refused by the generic rule, which names the key's first 40
    named = [k[:40] if "\n" in v else k for k, v in bad.items()]
    assert sorted(fields) == sorted(f"catalog.properties[{k}]" for k in named)
    code, fields = error_of(lambda: create(
        stub, "bad", {}, {"hudi.writer.hoodie.base.path": "env:TMS_SECRET_X"}))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert fields == ["catalog.secrets[hudi.writer.hoodie.base.path]"]
