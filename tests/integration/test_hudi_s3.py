"""Hudi tables on S3 (moto on loopback): real fixture tables copied with boto3, inspected and
discovered through the Hudi plugin with the catalog's storage options, and compared with the
same tables inspected locally and with hudi-rs (the ``hudi`` package) as the oracle."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import fastavro
import grpc
import pytest

from tests.integration.conftest import Api
from tests.integration.discovery_support import unzip_hudi
from tests.integration.test_api import error_of
from tests.servers.moto import MotoServer, moto_server
from tms.catalogs import access
from tms.formats.hudi.timeline import WRITE_ACTIONS, TimelineError, read_timeline
from tms.formats.registry import load_formats
from tms.scheduler.discovery import Discovery
from tms.v1 import tms_pb2

pytestmark = pytest.mark.integration

BUCKET = "hudi-lake"
TABLES = {"trips_v6": "quickstart_trips_table__mor__avro__v6_trips_8i3d.zip",
          "trips_v8": "quickstart_trips_table__mor__avro__v8_trips_8i3u1d.zip",
          "txns_v9": "sample_table__mor__avro__v9_txns_simple_meta.zip"}
KEY_ENV, SECRET_ENV = "TMS_SECRET_HUDI_S3_KEY", "TMS_SECRET_HUDI_S3_SECRET"


def upload(moto: MotoServer, local: Path, prefix: str) -> None:
    s3 = moto.boto3_client("s3")
    for f in sorted(local.rglob("*")):
        if f.is_file():
            s3.upload_file(str(f), BUCKET, f"{prefix}/{f.relative_to(local)}")  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MotoServer, Path]]:
    """moto with every table of TABLES under s3://hudi-lake/ns/<name>; the local copies."""
    root = tmp_path_factory.mktemp("hudi-s3")
    with moto_server(root / "moto") as moto:
        moto.create_bucket(BUCKET)
        for name, fixture in TABLES.items():
            upload(moto, unzip_hudi(root / "local" / name, fixture), f"ns/{name}")
        yield moto, root / "local"


def storage(moto: MotoServer) -> dict[str, str]:
    return {"s3.endpoint": moto.endpoint, "s3.region": moto.region,
            "s3.path-style-access": "true", "s3.access-key-id": moto.access_key,
            "s3.secret-access-key": moto.secret_key}


def oracle(moto: MotoServer, uri: str) -> dict[str, Any]:
    """What hudi-rs reads from the S3 copy: the write actions' counts and the latest."""
    from hudi import HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(uri).with_storage_options({
        "aws_endpoint_url": moto.endpoint, "aws_access_key_id": moto.access_key,
        "aws_secret_access_key": moto.secret_key, "aws_region": moto.region,
        "aws_allow_http": "true"}).build()
    tl = table.get_timeline()
    return {"table_name": table.table_name, "table_type": table.table_type,
            "commit": len(tl.get_completed_commits()),
            "deltacommit": len(tl.get_completed_deltacommits()),
            "replacecommit": len(tl.get_completed_replacecommits()),
            "latest": tl.get_latest_commit_timestamp()}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_s3_inspection_matches_local_and_hudi_rs(lake: tuple[MotoServer, Path],
                                                 name: str) -> None:
    moto, local = lake
    uri = f"s3://{BUCKET}/ns/{name}"
    on_s3 = read_timeline(uri, storage_options=storage(moto))
    assert on_s3.metrics() == read_timeline(str(local / name)).metrics()
    writes = [i for i in on_s3.instants if i.state.value == "COMPLETED"
              and i.action in WRITE_ACTIONS]
    mine = {"table_name": on_s3.table_name, "table_type": on_s3.table_type.value,
            **{a: on_s3.completed_by_action.get(a, 0) for a in sorted(WRITE_ACTIONS)},
            "latest": max(i.time for i in writes)}
    assert mine == oracle(moto, uri)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_s3_slices_and_file_versions_match_local(lake: tuple[MotoServer, Path],
                                                 name: str) -> None:
    """Inspection on S3 (hudi-rs with the catalog's options; every file version listed
    through pyarrow, sizes included) sees what it sees on the local copy."""
    from tms.formats.hudi import inspect as hudi_inspect

    moto, local = lake
    uri, here = f"s3://{BUCKET}/ns/{name}", str(local / name)
    writer = {"hoodie.cleaner.commits.retained": "1"}
    now = datetime(2026, 6, 1, tzinfo=UTC)
    on_s3 = hudi_inspect.inspect(read_timeline(uri, storage_options=storage(moto)), uri,
                                 storage(moto), writer, now, UTC)
    assert on_s3 == hudi_inspect.inspect(read_timeline(here), here, {}, writer, now, UTC)
    assert "clean_unknown" not in on_s3 and on_s3["base_bytes"] > 0


def test_hostile_timeline_path_is_refused(lake: tuple[MotoServer, Path]) -> None:
    """hoodie.timeline.path is the table writer's: a path out of .hoodie is never listed."""
    moto, local = lake
    props = (local / "txns_v9" / ".hoodie" / "hoodie.properties").read_text()
    moto.boto3_client("s3").put_object(  # type: ignore[attr-defined]
        Bucket=BUCKET, Key="evil/t/.hoodie/hoodie.properties",
        Body=props + "hoodie.timeline.path=../../ns/trips_v8/.hoodie\n")
    with pytest.raises(TimelineError, match="bad hoodie.timeline.path"):
        read_timeline(f"s3://{BUCKET}/evil/t", storage_options=storage(moto))


def test_a_pending_plan_naming_another_tables_objects_is_refused(
        lake: tuple[MotoServer, Path]) -> None:
    """The v9 table copied to its own prefix with a pending clustering plan planted (the
    fixture's real plan, written back with its own schema): its objects (``s3a://`` as Hadoop
    names them) pass; an object of the table next to it, of another bucket, or a plan larger
    than the cap (refused from its listed size) do not."""
    from tests.unit.test_hudi_plans import _clustering
    from tms.formats.hudi.plan_guard import check_table
    from tms.formats.hudi.plans import MAX_PLAN_BYTES, PlanRefused

    moto, local = lake
    s3 = moto.boto3_client("s3")
    upload(moto, local / "txns_v9", "tenant_a/txns")
    base = f"s3://{BUCKET}/tenant_a/txns"
    key = "tenant_a/txns/.hoodie/timeline/20990101000000000.clustering.requested"

    def plant(*data_files: str) -> None:
        schema, record = _clustering(Path("/unused"))
        slices = record["clusteringPlan"]["inputGroups"][0]["slices"]
        slices[:] = [{**slices[0], "dataFilePath": path} for path in data_files]
        for group in record["clusteringPlan"]["inputGroups"][1:]:
            group["slices"] = []
        out = io.BytesIO()
        fastavro.writer(out, fastavro.parse_schema(schema), [record])
        s3.put_object(Bucket=BUCKET, Key=key, Body=out.getvalue())  # type: ignore[attr-defined]

    plant(f"s3a://{BUCKET}/tenant_a/txns/region=us/a.parquet", "b.parquet")
    assert check_table(base, storage(moto)) == 1
    for foreign in (f"s3a://{BUCKET}/ns/trips_v6/city=chennai/x.parquet",
                    f"s3://{BUCKET}/tenant_a/txns_other/x.parquet",
                    "s3://another-bucket/tenant_a/txns/x.parquet"):
        plant(foreign)
        with pytest.raises(PlanRefused, match="20990101000000000 clustering") as e:
            check_table(base, storage(moto))
        assert foreign in str(e.value) and "outside the table" in str(e.value)
    s3.put_object(Bucket=BUCKET, Key=key,  # type: ignore[attr-defined]
                  Body=b"Obj\x01" + b"\0" * MAX_PLAN_BYTES)
    with pytest.raises(PlanRefused, match="above the"):
        check_table(base, storage(moto))


def test_a_failed_writes_markers_naming_another_tables_objects_are_refused(
        lake: tuple[MotoServer, Path]) -> None:
    """The v9 table copied to its own prefix with a write left inflight and its markers (a
    timeline-server MARKERS file and a direct marker, as Hudi lays them out): its own objects
    pass; a marker naming an object of the table next to it (by ``..``, ``s3a://``, a sibling
    prefix) or of another bucket is refused, before Hudi's rollback would delete it."""
    from tms.formats.hudi.plan_guard import check_table
    from tms.formats.hudi.plans import PlanRefused

    moto, local = lake
    s3 = moto.boto3_client("s3")
    upload(moto, local / "txns_v9", "tenant_b/txns")
    base, t = f"s3://{BUCKET}/tenant_b/txns", "20990101000000000"

    def put(key: str, body: bytes) -> None:
        s3.put_object(Bucket=BUCKET, Key=f"tenant_b/txns/{key}", Body=body)  # type: ignore[attr-defined]

    put(f".hoodie/timeline/{t}.deltacommit.requested", b"")
    put(f".hoodie/timeline/{t}.deltacommit.inflight", b"")
    put(f".hoodie/.temp/{t}/MARKERS.type", b"TIMELINE_SERVER_BASED")
    put(f".hoodie/.temp/{t}/region=us/b.parquet.marker.CREATE", b"")
    put(f".hoodie/.temp/{t}/MARKERS0", b"region=us/a.parquet.marker.CREATE\n")
    assert check_table(base, storage(moto)) == 0  # no plan; the write's markers pass
    for foreign in ("../../ns/trips_v6/city=chennai/x.parquet",
                    f"s3a://{BUCKET}/ns/trips_v6/city=chennai/x.parquet",
                    f"s3://{BUCKET}/tenant_b/txns_other/x.parquet",
                    "s3://another-bucket/tenant_b/txns/x.parquet"):
        put(f".hoodie/.temp/{t}/MARKERS0", f"{foreign}.marker.CREATE\n".encode())
        with pytest.raises(PlanRefused, match=f"{t} deltacommit") as e:
            check_table(base, storage(moto))
        assert foreign in str(e.value)


def test_a_completed_commit_naming_another_tables_partition_is_refused(
        lake: tuple[MotoServer, Path]) -> None:
    """The v9 table copied to its own prefix, no write pending, with a completed delta commit
    added (the fixture's own, written back in its schema) whose partition key is the cleaner's
    next partition to list and clean: a partition of its own passes; one reaching the table
    next to it (``..``), another bucket or an absolute key is refused, as is metadata above
    the cap (from its listed size)."""
    from tms.formats.hudi import clean_guard as hudi_clean_guard
    from tms.formats.hudi.plans import MAX_PLAN_BYTES, PlanRefused

    moto, local = lake
    s3 = moto.boto3_client("s3")
    upload(moto, local / "txns_v9", "tenant_c/txns")
    base = f"s3://{BUCKET}/tenant_c/txns"
    timeline = local / "txns_v9" / ".hoodie" / "timeline"
    real = next(p for p in sorted(timeline.iterdir()) if p.name.endswith(".deltacommit")
                and "_" in p.name)
    rd = fastavro.reader(io.BytesIO(real.read_bytes()))
    schema, record = rd.writer_schema, next(iter(rd))
    assert isinstance(record, dict) and isinstance(schema, dict)
    stats = next(iter(record["partitionToWriteStats"].values()))
    key = "tenant_c/txns/.hoodie/timeline/20990101000000000_20990101000000001.deltacommit"

    def plant(partition: str) -> None:
        out = io.BytesIO()
        fastavro.writer(out, schema, [{**record, "partitionToWriteStats": {partition: stats}}])
        s3.put_object(Bucket=BUCKET, Key=key, Body=out.getvalue())  # type: ignore[attr-defined]

    checked = hudi_clean_guard.check_table(base, storage(moto))
    plant("region=us")
    assert hudi_clean_guard.check_table(base, storage(moto)) == checked + 1
    for foreign, words in (("../../ns/trips_v6/city=chennai", "'.' or '..' segment"),
                           ("s3a://another-bucket/p", "':' before its first '/'"),
                           ("/ns/trips_v6/city=chennai", "absolute path")):
        plant(foreign)
        with pytest.raises(PlanRefused, match="20990101000000000_20990101000000001") as e:
            hudi_clean_guard.check_table(base, storage(moto))
        assert foreign in str(e.value) and words in str(e.value), str(e.value)
    s3.put_object(Bucket=BUCKET, Key=key,  # type: ignore[attr-defined]
                  Body=b"Obj\x01" + b"\0" * MAX_PLAN_BYTES)
    with pytest.raises(PlanRefused, match="above the"):
        hudi_clean_guard.check_table(base, storage(moto))


def test_hostile_table_properties_on_s3_are_refused(lake: tuple[MotoServer, Path]) -> None:
    """The v9 table copied to its own prefix: as shipped, its properties (and its metadata
    table's) pass; a history path, index definitions or a backup file reaching the table next
    to it or another bucket, a class of the writer's, or a bootstrap source outside the
    catalog's allowed locations are refused."""
    from tms.formats.hudi import props_guard as hudi_props_guard
    from tms.formats.hudi.plans import PlanRefused

    moto, local = lake
    s3 = moto.boto3_client("s3")
    upload(moto, local / "txns_v9", "tenant_d/txns")
    base, allowed = f"s3://{BUCKET}/tenant_d/txns", [f"s3://{BUCKET}/tenant_d"]
    real = (local / "txns_v9" / ".hoodie" / "hoodie.properties").read_text()
    assert hudi_props_guard.check_table(base, storage(moto), allowed) == 2
    for name, line, words in (
            ("hoodie.properties", "hoodie.timeline.history.path=../../../ns/trips_v8",
             "'..' segment"),
            ("hoodie.properties", "hoodie.timeline.history.path=s3a://another-bucket/h",
             "':' before its first '/'"),
            ("hoodie.properties", "hoodie.table.index.defs.path:/ns/trips_v8/x.json",
             "absolute path"),
            ("hoodie.properties", "hoodie.table.keygenerator.class=com.evil.X",
             "not one of the classes Hudi ships"),
            ("hoodie.properties", f"hoodie.bootstrap.base.path=s3://{BUCKET}/ns/trips_v8",
             "outside the allowed locations"),
            ("hoodie.properties.backup", "hoodie.archivelog.folder=../../../ns/trips_v6",
             "'..' segment")):
        key = f"tenant_d/txns/.hoodie/{name}"
        s3.put_object(Bucket=BUCKET, Key=key, Body=f"{real}{line}\n")  # type: ignore[attr-defined]
        with pytest.raises(PlanRefused, match=name.replace(".", "[.]") + ":") as e:
            hudi_props_guard.check_table(base, storage(moto), allowed)
        assert words in str(e.value), str(e.value)
        s3.put_object(Bucket=BUCKET, Key=key, Body=real)  # type: ignore[attr-defined]
    s3.delete_object(Bucket=BUCKET, Key="tenant_d/txns/.hoodie/hoodie.properties.backup")  # type: ignore[attr-defined]
    assert hudi_props_guard.check_table(base, storage(moto), allowed) == 2


def hadoop_catalog(api: Api, moto: MotoServer, allowed: str = f"s3://{BUCKET}/ns") -> None:
    api.stub().CreateCatalog(tms_pb2.CreateCatalogRequest(catalog_id="hudi_s3", catalog=(
        tms_pb2.Catalog(type="hadoop", storage_options={
            "s3.endpoint": moto.endpoint, "s3.region": moto.region,
            "s3.path-style-access": "true"},
            secrets={"s3.access-key-id": f"env:{KEY_ENV}",
                     "s3.secret-access-key": f"env:{SECRET_ENV}"},
            allowed_locations=[allowed],
            discovery=tms_pb2.CatalogDiscovery(enabled=True, interval_s=10)))))


@pytest.fixture
def environ(lake: tuple[MotoServer, Path], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {KEY_ENV: lake[0].access_key, SECRET_ENV: lake[0].secret_key}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def register(api: Api, table_id: str, base_path: str) -> tms_pb2.Table:
    return api.stub().RegisterTable(tms_pb2.RegisterTableRequest(
        table_id=table_id, table=tms_pb2.Table(format="hudi", catalog="hudi_s3",
                                               base_path=base_path)))


def test_register_discover_and_inspect_on_s3(lake: tuple[MotoServer, Path],
                                             make_api: Callable[..., Api],
                                             environ: dict[str, str]) -> None:
    moto, local = lake
    api = make_api()
    hadoop_catalog(api, moto)
    made = register(api, "trips", f"s3://{BUCKET}/ns/trips_v8")
    assert made.location == f"s3://{BUCKET}/ns/trips_v8"

    later = datetime.now(UTC) + timedelta(hours=1)
    discovery = Discovery(api.store, load_formats(), now=lambda: later, environ=environ)
    (report,) = [r for r in discovery.run_once() if r.catalog_id == "hudi_s3"]
    assert report.error is None and report.skipped == [], report
    assert sorted(report.registered) == ["hudi_s3.trips_v6", "hudi_s3.txns_v9"]

    plugin = load_formats()["hudi"]
    catalog = api.store.catalog_get("hudi_s3")
    assert catalog is not None
    for table_id, name in (("trips", "trips_v8"), ("hudi_s3.txns_v9", "txns_v9")):
        view = api.store.table_get(table_id)
        assert view is not None
        metrics = plugin.inspect(view.table, access(catalog, environ))
        timeline = read_timeline(str(local / name)).metrics()
        assert {k: metrics[k] for k in timeline} == timeline
        # the file slices are read on S3 too (hudi-rs with the catalog's storage options)
        assert "slices_error" not in metrics, metrics["slices_error"]
        from hudi import HudiTable

        slices = HudiTable(str(local / name)).get_file_slices()
        assert (metrics["file_groups"], metrics["log_files"]) == (
            len(slices), sum(len(s.log_file_names) for s in slices))


@pytest.mark.parametrize("base_path,code", [
    ("s3://other-bucket/ns/trips_v8", grpc.StatusCode.PERMISSION_DENIED),  # another bucket
    (f"s3://{BUCKET}/nsx/trips_v8", grpc.StatusCode.PERMISSION_DENIED),  # a prefix, not a dir
    (f"s3://{BUCKET}/ns/../evil/t", grpc.StatusCode.INVALID_ARGUMENT),
    (f"s3://{BUCKET}/ns/%2e%2e/evil/t", grpc.StatusCode.INVALID_ARGUMENT),
    (f"s3://key:secret@{BUCKET}/ns/trips_v8", grpc.StatusCode.INVALID_ARGUMENT),
])
def test_hostile_base_paths_are_refused(lake: tuple[MotoServer, Path],
                                        make_api: Callable[..., Api], environ: dict[str, str],
                                        base_path: str, code: grpc.StatusCode) -> None:
    api = make_api()
    hadoop_catalog(api, lake[0])
    got, _ = error_of(lambda: register(api, "evil", base_path))
    assert got == code
    assert api.store.table_get("evil") is None
