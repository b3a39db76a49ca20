"""The job's spec travels inline on a command line, so it carries secret references that the
driver resolves; resolved, they map onto Spark exactly as the values did. The report request
the job encodes by hand is the protobuf message the API decodes."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tms import secrets
from tms.catalogs import access, job_catalog, job_properties
from tms.domain import Catalog, CatalogSpec, CatalogType, DiscoveryStatus
from tms.jobs import iceberg_maintenance, report
from tms.spark.job_package import sources
from tms.v1 import tms_pb2

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PG = "postgresql+psycopg://tms@127.0.0.1:5432/db"


def _catalog(kind: CatalogType, props: dict[str, str], secrets: dict[str, str],
             storage: dict[str, str] | None = None) -> Catalog:
    return Catalog(1, CatalogSpec("lake", kind, props, secrets, storage or {}),
                   DiscoveryStatus(), NOW, NOW)


CASES: list[tuple[Catalog, dict[str, str]]] = [
    (_catalog(CatalogType.SQL, {"uri": PG, "warehouse": "file:///w"},
              {"jdbc.password": "env:TMS_SECRET_PG"}), {"TMS_SECRET_PG": "p@ss/w:rd"}),
    (_catalog(CatalogType.SQL, {"warehouse": "file:///w"}, {"uri": "env:TMS_SECRET_URI"}),
     {"TMS_SECRET_URI": "postgresql+psycopg://u:p%40x@h:5433/db?sslmode=require"}),
    (_catalog(CatalogType.JDBC, {"uri": "jdbc:postgresql://[::1]:5432/db"},
              {"jdbc.password": "file:pg"}), {}),
    (_catalog(CatalogType.REST, {"uri": "http://rest:8181", "warehouse": "s3://b/w"},
              {"token": "env:TMS_SECRET_REST", "s3.secret-access-key": "file:s3",
               "fs.s3a.session.token": "file:pg"},
              {"s3.endpoint": "http://s3:9000", "s3.access-key-id": "AKIA",
               "fs.s3a.path.style.access": "true"}), {"TMS_SECRET_REST": "t0k"}),
]


@pytest.mark.parametrize(("catalog", "env"), CASES)
def test_references_resolved_in_the_driver_reach_spark_exactly_as_values(
        catalog: Catalog, env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "pg").write_text("file-pw\n")
    (tmp_path / "s3").write_text("s3-secret")
    env = {**env, secrets.ENV_SECRET_DIR: str(tmp_path)}
    cat = access(catalog, env, tmp_path)
    props, refs = job_catalog(cat)
    for value in cat.secret_values:  # not one secret value in what goes on argv
        assert value not in json.dumps([props, refs])
    spec = iceberg_maintenance.parse_spec({
        "catalog_name": "lake", "catalog_properties": props, "catalog_secrets": refs,
        "table": "ns.t", "allowed_locations": ["/wh"], "action": "compaction"})
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        resolved = spec.resolved_properties()
        in_driver = {**iceberg_maintenance.session_hadoop_conf(resolved),
                     **iceberg_maintenance.catalog_conf("lake", resolved)}
    values = job_properties(cat)
    assert in_driver == {**iceberg_maintenance.session_hadoop_conf(values),
                         **iceberg_maintenance.catalog_conf("lake", values)}


def test_a_missing_secret_in_the_driver_is_not_retried_and_names_the_reference(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMS_SECRET_GONE", raising=False)
    spec = iceberg_maintenance.parse_spec({
        "catalog_name": "lake", "catalog_properties": {"type": "rest"},
        "catalog_secrets": {"token": "env:TMS_SECRET_GONE"}, "table": "ns.t",
                            "allowed_locations": ["/wh"],
        "action": "compaction"})
    with pytest.raises(secrets.SecretError) as info:
        spec.resolved_properties()
    payload = iceberg_maintenance.failure_payload(info.value)
    assert payload["retryable"] is False and "env:TMS_SECRET_GONE" in payload["error"]
    assert payload["error_class"] == "secret not available to the driver"


@pytest.mark.parametrize("secrets", [
    {"token": "env:PATH"}, {"token": "file:../etc/shadow"}, {"token": "hunter2"},
    {"bad key": "env:TMS_SECRET_X"}, {"token": 5}, "env:TMS_SECRET_X",
])
def test_bad_secret_references_are_spec_errors(secrets: Any) -> None:
    with pytest.raises(iceberg_maintenance.SpecError):
        iceberg_maintenance.parse_spec({
            "catalog_name": "lake", "catalog_properties": {}, "catalog_secrets": secrets,
            "table": "ns.t", "allowed_locations": ["/wh"], "action": "compaction"})


@pytest.mark.parametrize("target", [
    {"target": "h:1", "operation": "tables/t/operations/1", "attempt": 0},
    {"target": "h:1", "operation": "x", "attempt": 1},
    {"target": "h 1", "operation": "tables/t/operations/1", "attempt": 1},
    {"target": "h:1", "operation": "tables/t/operations/1", "attempt": True},
    "h:1",
])
def test_bad_report_targets_are_spec_errors(target: Any) -> None:
    with pytest.raises(iceberg_maintenance.SpecError):
        iceberg_maintenance.parse_spec({"catalog_name": "lake", "table": "ns.t",
                                        "allowed_locations": ["/wh"],
                                        "action": "compaction", "report": target})


def test_the_hand_encoded_request_is_the_protobuf_message() -> None:
    body = report.encode_request("tables/t.1/operations/300", 2**31 - 1, "tok-_x",
                                 json.dumps({"ok": True, "é": "ü" * 200}))
    parsed = tms_pb2.ReportJobResultRequest.FromString(body)
    assert (parsed.operation, parsed.attempt, parsed.token) == (
        "tables/t.1/operations/300", 2**31 - 1, "tok-_x")
    assert json.loads(parsed.result_json) == {"ok": True, "é": "ü" * 200}


def test_without_a_token_the_job_says_it_cannot_report() -> None:
    with pytest.raises(report.ReportError, match="cannot report its result"):
        report.send({"target": "127.0.0.1:1", "operation": "tables/t/operations/1",
                     "attempt": 1}, {"ok": True}, {})


def test_an_inline_spec_round_trips_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    spec = {"catalog_name": "lake", "table": "ns.t",
            "allowed_locations": ["/wh"], "action": "compaction"}
    arg = base64.b64encode(json.dumps(spec).encode()).decode()
    result = tmp_path / "r.json"
    # no Spark here: a bad option fails before a session starts, and is still reported
    bad = base64.b64encode(json.dumps({**spec, "options": {"nope": "1"}}).encode()).decode()
    assert iceberg_maintenance.main(["--spec-b64", bad, "--result", str(result)]) == 1
    assert "unknown option" in json.loads(result.read_text())["error"]
    assert iceberg_maintenance.main(["--spec-b64", "not base64!", "--result",
                                     str(result)]) == 1
    assert json.loads(result.read_text())["error_type"] == "SpecError"
    parsed = iceberg_maintenance.read_spec(iceberg_maintenance_args(arg))
    assert parsed == spec


def iceberg_maintenance_args(arg: str) -> Any:
    import argparse

    return argparse.Namespace(spec=None, spec_b64=arg)


def test_the_resolver_and_the_reporter_ship_with_the_job() -> None:
    names = dict(sources())  # standard library only: tests/unit/test_job_package.py
    assert {"tms/secrets.py", "tms/jobs/report.py"} <= set(names)
