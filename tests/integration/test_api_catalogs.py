"""Catalog RPCs against a real API server and PostgreSQL: create / get / list / update /
delete, pagination, field masks, a catalog in use, and every validation rule by field."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import field_mask_pb2

from tests.integration.test_api import error_of
from tests.integration.test_api_rpcs import error_info
from tms.api.allowlist import RegistrationAllowlist
from tms.domain import TableSpec
from tms.v1 import tms_pb2

pytestmark = pytest.mark.integration

PG_URI = "postgresql+psycopg://tms@127.0.0.1:5432/lake"


def catalog(**over: object) -> tms_pb2.Catalog:
    fields: dict = dict(type="sql", properties={"uri": PG_URI, "warehouse": "s3://lake/wh"},
                        secrets={"jdbc.password": "env:TMS_SECRET_LAKE_PG"},
                        allowed_locations=["s3://lake/wh"])
    fields.update(over)
    return tms_pb2.Catalog(**fields)


def create(stub, catalog_id: str = "lake", metadata=None, **over: object) -> tms_pb2.Catalog:
    return stub.CreateCatalog(tms_pb2.CreateCatalogRequest(
        catalog_id=catalog_id, catalog=catalog(**over)), metadata=metadata)


def update(stub, c: tms_pb2.Catalog, *paths: str) -> tms_pb2.Catalog:
    return stub.UpdateCatalog(tms_pb2.UpdateCatalogRequest(
        catalog=c, update_mask=field_mask_pb2.FieldMask(paths=list(paths))))


def refused(stub, catalog_id: str = "lake", **over: object) -> list[str]:
    """The fields a refused CreateCatalog names (it must be INVALID_ARGUMENT)."""
    code, fields = error_of(lambda: create(stub, catalog_id, **over))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, code
    return fields


def without_fixture_catalog(api) -> None:
    """Delete the fixture's own catalogs/cat, for tests that count every catalog."""
    api.stub().DeleteCatalog(tms_pb2.DeleteCatalogRequest(name=f"catalogs/{api.catalog.catalog_id}"))


def test_crud_round_trip(api) -> None:
    stub = api.stub()
    made = create(stub, storage_options={"s3.region": "eu-west-1", "fs.s3a.path.style.access":
                                         "true"},
                  allowed_owners=["team-a"], allowed_tokens=["ingest"],
                  default_policy={"compaction.min-small-files": "20"},
                  discovery=tms_pb2.CatalogDiscovery(enabled=True, include=["sales.*"],
                                                     owner="team-a", priority=5))
    assert made.name == "catalogs/lake" and made.type == "sql"
    assert made.secrets == {"jdbc.password": "env:TMS_SECRET_LAKE_PG"}
    assert made.discovery.interval_s == 300 and made.discovery.queue == "default"
    assert made.discovery.include == ["sales.*"] and made.table_count == 0
    assert made.create_time.seconds > 0 and made.update_time.seconds > 0
    got = stub.GetCatalog(tms_pb2.GetCatalogRequest(name="catalogs/lake"))
    assert got == made
    stub.DeleteCatalog(tms_pb2.DeleteCatalogRequest(name="catalogs/lake"))
    code, meta = error_info(lambda: stub.GetCatalog(tms_pb2.GetCatalogRequest(
        name="catalogs/lake")))
    assert code == grpc.StatusCode.NOT_FOUND and meta["resource"] == "catalogs/lake"


def test_not_found_and_already_exists(api) -> None:
    stub = api.stub()
    create(stub)
    code, meta = error_info(lambda: create(stub))
    assert code == grpc.StatusCode.ALREADY_EXISTS and meta["resource"] == "catalogs/lake"
    for call in (lambda: stub.GetCatalog(tms_pb2.GetCatalogRequest(name="catalogs/nope")),
                 lambda: stub.DeleteCatalog(tms_pb2.DeleteCatalogRequest(name="catalogs/nope")),
                 lambda: update(stub, tms_pb2.Catalog(name="catalogs/nope"), "properties")):
        code, _ = error_info(call)
        assert code == grpc.StatusCode.NOT_FOUND
    for name in ("", "lake", "catalogs/", "catalogs/Lake", "catalogs/la-ke", "catalogs/a/b",
                 "tables/lake", "catalogs/" + "a" * 64):
        code, fields = error_of(lambda n=name: stub.GetCatalog(tms_pb2.GetCatalogRequest(
            name=n)))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["name"], name


def test_pagination(api) -> None:
    without_fixture_catalog(api)
    stub = api.stub()
    ids = [f"c{i:02d}" for i in range(7)]
    for cid in reversed(ids):
        create(stub, cid)
    seen, token = [], ""
    while True:
        page = stub.ListCatalogs(tms_pb2.ListCatalogsRequest(page_size=3, page_token=token))
        assert len(page.catalogs) <= 3
        seen += [c.name for c in page.catalogs]
        token = page.next_page_token
        if not token:
            break
    assert seen == [f"catalogs/{c}" for c in ids]
    assert len(stub.ListCatalogs(tms_pb2.ListCatalogsRequest()).catalogs) == 7
    for req in (tms_pb2.ListCatalogsRequest(page_size=-1),
                tms_pb2.ListCatalogsRequest(page_token="garbage"),
                tms_pb2.ListCatalogsRequest(page_token="x" * 600)):
        code, fields = error_of(lambda r=req: stub.ListCatalogs(r))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and fields, req
    # a token of another list is refused
    tables_token = stub.ListTables(tms_pb2.ListTablesRequest(page_size=1)).next_page_token
    assert tables_token == ""  # no tables; forge one through the table listing's encoder
    from tms.api import pagination
    forged = pagination.encode({"m": "tables", "format": "", "state": 0, "owner": "",
                                "queue": ""}, "c01")
    code, fields = error_of(lambda: stub.ListCatalogs(tms_pb2.ListCatalogsRequest(
        page_token=forged)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["page_token"]
    bad_key = pagination.encode({"m": "catalogs"}, "' OR 1=1 --")
    code, fields = error_of(lambda: stub.ListCatalogs(tms_pb2.ListCatalogsRequest(
        page_token=bad_key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["page_token"]


def test_field_mask_update(api) -> None:
    stub = api.stub()
    create(stub, storage_options={"s3.region": "eu-west-1"}, allowed_owners=["a"])
    change = catalog(name="catalogs/lake", properties={"uri": PG_URI},
                     storage_options={"s3.endpoint": "http://minio:9000"},
                     allowed_locations=["s3://lake/wh", "s3://lake/other"],
                     allowed_owners=["ignored-not-in-mask"], type="rest",
                     discovery=tms_pb2.CatalogDiscovery(enabled=True, interval_s=60,
                                                        queue="batch"),
                     default_policy={"execution.max-attempts": "2"})
    got = update(stub, change, "properties", "storage_options", "allowed_locations",
                 "discovery", "default_policy")
    assert got.type == "sql"  # not updatable
    assert got.properties == {"uri": PG_URI}  # a map path replaces it whole
    assert got.storage_options == {"s3.endpoint": "http://minio:9000"}
    assert list(got.allowed_locations) == ["s3://lake/wh", "s3://lake/other"]
    assert list(got.allowed_owners) == ["a"]
    assert got.secrets == {"jdbc.password": "env:TMS_SECRET_LAKE_PG"}
    assert (got.discovery.enabled, got.discovery.interval_s, got.discovery.queue) == \
        (True, 60, "batch")
    assert got.default_policy == {"execution.max-attempts": "2"}
    assert got.update_time.ToDatetime() >= got.create_time.ToDatetime()
    got = update(stub, catalog(name="catalogs/lake", secrets={}), "secrets")
    assert got.secrets == {}
    for paths, field in ((["name"], "update_mask"), ([], "update_mask"),
                         (["type"], "update_mask"), (["table_count"], "update_mask")):
        code, fields = error_of(lambda ps=paths: update(stub, change, *ps))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == [field], paths
    # the merged catalog is validated: a replaced list cannot be emptied
    code, fields = error_of(lambda: update(stub, catalog(name="catalogs/lake",
                                                         allowed_locations=[]),
                                           "allowed_locations"))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert fields == ["catalog.allowed_locations"]
    code, fields = error_of(lambda: stub.UpdateCatalog(tms_pb2.UpdateCatalogRequest()))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["catalog"]


def test_delete_refused_while_tables_use_it(api) -> None:
    without_fixture_catalog(api)
    stub = api.stub()
    create(stub)
    for i in range(2):
        assert api.store.table_register(TableSpec(
            f"t{i}", "iceberg", catalog="lake", namespace="ns", table_name=f"t{i}")) is not None
    assert stub.GetCatalog(tms_pb2.GetCatalogRequest(name="catalogs/lake")).table_count == 2
    code, meta = error_info(lambda: stub.DeleteCatalog(tms_pb2.DeleteCatalogRequest(
        name="catalogs/lake")))
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert meta["reason"] == "CATALOG_IN_USE" and meta["table_count"] == "2"
    assert stub.GetCatalog(tms_pb2.GetCatalogRequest(name="catalogs/lake")).name
    for i in range(2):
        api.store.table_delete(f"t{i}", force=True)
    stub.DeleteCatalog(tms_pb2.DeleteCatalogRequest(name="catalogs/lake"))
    assert stub.ListCatalogs(tms_pb2.ListCatalogsRequest()).catalogs == []


def test_catalog_id_and_type(api) -> None:
    stub = api.stub()
    for cid in ("", "Lake", "1lake", "la-ke", "la.ke", "_lake", "a" * 64, "lake\n", "läke"):
        assert "catalog_id" in refused(stub, cid), cid
    assert create(stub, "a" * 63).name == "catalogs/" + "a" * 63
    for ctype in ("", "SQL", "iceberg", "sql ", "nessie"):
        assert refused(stub, type=ctype) == ["catalog.type"], ctype
    code, fields = error_of(lambda: stub.CreateCatalog(tms_pb2.CreateCatalogRequest(
        catalog_id="x")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields == ["catalog"]


def test_every_problem_is_named_at_once(api) -> None:
    fields = refused(api.stub(), "Bad", type="sql", properties={"password": "x"},
                     secrets={"jdbc.password": "env:PATH"},
                     storage_options={"spark.executor.memory": "1g"}, allowed_locations=[],
                     discovery=tms_pb2.CatalogDiscovery(priority=5000))
    assert set(fields) >= {"catalog_id", "catalog.properties[password]",
                           "catalog.properties[uri]", "catalog.secrets[jdbc.password]",
                           "catalog.storage_options[spark.executor.memory]",
                           "catalog.allowed_locations", "catalog.discovery.priority"}


@pytest.mark.parametrize("ctype,props,field", [
    ("sql", {}, "catalog.properties[uri]"),
    ("jdbc", {}, "catalog.properties[uri]"),
    ("rest", {}, "catalog.properties[uri]"),
    ("hive", {}, "catalog.properties[uri]"),
    ("sql", {"uri": "sqlite:////tmp/x.db"}, "catalog.properties[uri]"),
    ("sql", {"uri": "mysql://h/db"}, "catalog.properties[uri]"),
    ("sql", {"uri": "postgresql+psycopg:///db"}, "catalog.properties[uri]"),
    ("sql", {"uri": "jdbc:postgresql://h/db"}, "catalog.properties[uri]"),
    ("jdbc", {"uri": PG_URI}, "catalog.properties[uri]"),
    ("jdbc", {"uri": "jdbc:mysql://h/db"}, "catalog.properties[uri]"),
    ("rest", {"uri": "ftp://catalog"}, "catalog.properties[uri]"),
    ("rest", {"uri": "catalog:8181"}, "catalog.properties[uri]"),
    ("hive", {"uri": "http://metastore:9083"}, "catalog.properties[uri]"),
    ("sql", {"uri": PG_URI, "type": "rest"}, "catalog.properties[type]"),
    ("sql", {"uri": PG_URI, "warehouse": "s3://other/wh"}, "catalog.properties[warehouse]"),
    ("sql", {"uri": PG_URI, "warehouse": "s3://lake/wh/../x"},
     "catalog.properties[warehouse]"),
    ("sql", {"uri": PG_URI, "bad key": "x"}, "catalog.properties[bad key]"),
    ("sql", {"uri": PG_URI, "k" * 129: "x"}, "catalog.properties[" + "k" * 40 + "]"),
    ("sql", {"uri": PG_URI, "k": "x" * 4097}, "catalog.properties[k]"),
    ("sql", {"uri": PG_URI, "k": "a\nb"}, "catalog.properties[k]"),
    ("sql", {"uri": PG_URI, "k": "a\u202eb"}, "catalog.properties[k]"),
    ("sql", {"uri": PG_URI, "k": "a\x85b"}, "catalog.properties[k]"),
])
def test_type_properties(api, ctype: str, props: dict, field: str) -> None:
    assert refused(api.stub(), type=ctype, properties=props, secrets={}) == [field]


@pytest.mark.parametrize("ctype,props,secrets", [
    ("sql", {"uri": "postgresql://tms@db.internal:5432/lake"}, {}),
    ("sql", {"uri": "postgresql+psycopg2://tms@db/lake?sslmode=require"}, {}),
    ("jdbc", {"uri": "jdbc:postgresql://db:5432/lake", "jdbc.user": "tms"},
     {"jdbc.password": "file:lake-pg"}),
    ("sql", {}, {"uri": "env:TMS_SECRET_LAKE_URI"}),  # the whole uri as a secret
    ("rest", {"uri": "https://catalog.internal/api", "warehouse": "analytics"}, {}),
    ("hive", {"uri": "thrift://metastore:9083"}, {}),
    ("glue", {"glue.region": "eu-west-1"}, {}),
    ("hadoop", {}, {}),
])
def test_type_properties_accepted(api, ctype: str, props: dict, secrets: dict) -> None:
    made = create(api.stub(), type=ctype, properties=props, secrets=secrets)
    assert made.type == ctype and dict(made.properties) == props


def test_maps_and_lists(api) -> None:
    stub = api.stub()
    many = {f"k{i}": "v" for i in range(65)}
    assert refused(stub, properties={"uri": PG_URI, **many}) == ["catalog.properties"]
    assert refused(stub, secrets={"bad key": "env:TMS_SECRET_X"}) == \
        ["catalog.secrets[bad key]"]
    assert refused(stub, properties={"uri": PG_URI, "jdbc.user": "a"},
                   secrets={"jdbc.user": "env:TMS_SECRET_U"}) == ["catalog.secrets[jdbc.user]"]
    assert refused(stub, secrets={"type": "env:TMS_SECRET_T"}) == ["catalog.secrets[type]"]
    assert refused(stub, storage_options={"uri": "x"}) == ["catalog.storage_options[uri]",
                                                           "catalog.storage_options[uri]"]
    for key in ("spark.executor.memory", "hadoop.security.authentication", "py-io-impl",
                "S3.region", "fs"):
        assert refused(stub, storage_options={key: "x"}) == \
            [f"catalog.storage_options[{key}]"], key
    for key in ("fs.s3a.endpoint", "s3.region", "gcs.project-id", "adls.account-name",
                "hdfs.host"):
        create(stub, f"ok_{key.split('.')[0]}", storage_options={key: "x"})
    assert refused(stub, allowed_owners=[""]) == ["catalog.allowed_owners[0]"]
    assert refused(stub, allowed_owners=["o" * 257]) == ["catalog.allowed_owners[0]"]
    assert refused(stub, allowed_tokens=["a\tb"]) == ["catalog.allowed_tokens[0]"]
    assert refused(stub, allowed_tokens=[f"t{i}" for i in range(65)]) == \
        ["catalog.allowed_tokens"]
    assert refused(stub, allowed_locations=[f"s3://lake/p{i}" for i in range(65)]) == \
        ["catalog.allowed_locations"]


def test_discovery_settings(api) -> None:
    stub = api.stub()
    D = tms_pb2.CatalogDiscovery
    for d, field in ((D(interval_s=9), "catalog.discovery.interval_s"),
                     (D(interval_s=86401), "catalog.discovery.interval_s"),
                     (D(interval_s=-1), "catalog.discovery.interval_s"),
                     (D(priority=-1001), "catalog.discovery.priority"),
                     (D(queue="Bad Queue"), "catalog.discovery.queue"),
                     (D(owner="a\x00b"), "catalog.discovery.owner"),
                     (D(include=["sales.*", "a b"]), "catalog.discovery.include[1]"),
                     (D(exclude=["x;drop"]), "catalog.discovery.exclude[0]"),
                     (D(include=[""]), "catalog.discovery.include[0]"),
                     (D(include=["*"] * 65), "catalog.discovery.include")):
        assert refused(stub, discovery=d) == [field], d
    made = create(stub, discovery=D(enabled=True, interval_s=10, include=["s?les.[a-z]*"],
                                    exclude=["tmp.*", "[!a]*"], queue="disc", priority=-1000))
    assert made.discovery.interval_s == 10 and made.discovery.queue == "disc"
    assert create(stub, "big", discovery=D(interval_s=86400)).discovery.interval_s == 86400


def test_default_policy(api) -> None:
    stub = api.stub()
    for policy, field in (({"no.such.key": "1"}, "catalog.default_policy[no.such.key]"),
                          ({"execution.max-attempts": "zero"},
                           "catalog.default_policy[execution.max-attempts]"),
                          ({"spark.conf.spark.driver.extraJavaOptions": "-Dx"},
                           "catalog.default_policy[spark.conf.spark.driver.extraJavaOptions]")):
        assert refused(stub, default_policy=policy) == [field], policy
    assert refused(stub, default_policy={"k\n": "1"})  # bounded map first
    # keys of every registered format are known: iceberg's and hudi's
    made = create(stub, default_policy={"compaction.min-small-files": "10",
                                        "clean.commits": "5", "execution.max-attempts": "4"})
    assert made.default_policy["clean.commits"] == "5"


def test_allowed_locations_within_the_operator_bound(make_api) -> None:
    api = make_api(allowlist=RegistrationAllowlist(("s3://lake", "/srv/lake")))
    stub = api.stub()
    create(stub, "a", allowed_locations=["s3://lake/wh", "s3a://lake/wh2"])
    create(stub, "b", type="hadoop", properties={}, secrets={},
           allowed_locations=["/srv/lake/t", "file:///srv/lake/u", "file://localhost/srv/lake"])
    for loc in ("s3://other/wh", "s3://lake-evil/wh", "/srv/lakehouse", "/srv", "gs://lake/wh",
                "/srv/lake/../etc"):
        assert refused(stub, "c", allowed_locations=["s3://lake/wh", loc]) == \
            ["catalog.allowed_locations[1]"], loc
