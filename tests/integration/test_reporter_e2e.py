"""TMS's Iceberg metrics reporter end to end: a real Spark session whose catalog names
``tms.reporter.TmsMetricsReporter`` reads and writes a table registered with TMS; its scan
reports become the table's read profile (ExplainTable) and its commit reports commit
notifications, through the API's real report intake, with a token of the narrow reporter role.
A scoped reporter cannot report for another tenant's table, and TMS being away never fails a
query."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import wait_for
from tests.integration.conftest import Api
from tms.api.auth import Authenticator
from tms.api.report_intake import ReportIntake
from tms.api.report_server import ReportServer
from tms.jobs.spark_catalogs import catalog_conf
from tms.local import iceberg_data
from tms.local.ports import free_port
from tms.spark.provision import default_jars
from tms.spark.provision_io import jars_dir
from tms.spark.provision_reporter import ensure_reporter_jar, reporter_jar
from tms.v1 import tms_pb2

pytestmark = pytest.mark.timeout(600)
SESSION = Path(__file__).with_name("reporter_session.py")
TOKENS = {"tokens": [
    {"name": "ops", "token": "admin-token", "roles": ["admin"]},
    {"name": "lake-reporter", "token": "reporter-token", "roles": ["reporter"]},
    {"name": "team-b-reporter", "token": "scoped-token", "roles": ["reporter"],
     "owners": ["team-b"]},
    {"name": "reader", "token": "reader-token", "roles": ["reader"]},
]}
ADMIN = [("authorization", "Bearer admin-token")]


@pytest.fixture
def reporter(tms_home: Path) -> Path:
    runtime = jars_dir(tms_home) / "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
    ensure_reporter_jar(tms_home, runtime)
    return reporter_jar(tms_home)


@pytest.fixture
def lake(make_api: Callable[..., Api]) -> Any:
    auth = Authenticator.from_config(TOKENS)
    api = make_api(auth=auth)
    intake = ReportServer(ReportIntake(api.store), auth, "127.0.0.1", 0)
    intake.start()
    yield api, intake
    intake.stop()


def spark_conf(api: Api, tms_home: Path, jar: Path, url: str, token_file: Path,
               **extra: str) -> dict[str, str]:
    jars = [j for j in default_jars(tms_home) if "fence" not in j] + [str(jar)]
    conf = {"spark.jars": ",".join(jars),
            "spark.sql.extensions":
                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
            "spark.ui.enabled": "false"}
    conf.update(catalog_conf(api.catalog.catalog_id, api.catalog.properties))
    prefix = f"spark.sql.catalog.{api.catalog.catalog_id}."
    conf.update({prefix + "metrics-reporter-impl": "tms.reporter.TmsMetricsReporter",
                 prefix + "tms.reporter.url": url,
                 prefix + "tms.reporter.catalog": api.catalog.catalog_id,
                 prefix + "tms.reporter.token-file": str(token_file),
                 prefix + "tms.reporter.flush-interval-ms": "100"})
    conf.update({prefix + k: v for k, v in extra.items()})
    return conf


def run_session(conf: dict[str, str], sql: list[str]) -> dict[str, int]:
    res = subprocess.run([sys.executable, str(SESSION), json.dumps(
        {"conf": conf, "sql": sql, "wait_s": 15})], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_scans_and_commits_reach_tms(lake: Any, reporter: Path, tms_home: Path,
                                     tmp_path: Path) -> None:
    api, intake = lake
    stub = api.stub()
    events = api.catalog.table("ns", "events")
    iceberg_data.append_batches(events, 3)
    other = api.catalog.table("ns", "other_team")  # registered for team-b only
    iceberg_data.append_batches(other, 1)
    stub.RegisterTable(tms_pb2.RegisterTableRequest(
        table_id="events", table=api.catalog.pb("ns", "events", owner="team-a")), metadata=ADMIN)
    stub.RegisterTable(tms_pb2.RegisterTableRequest(
        table_id="other", table=api.catalog.pb("ns", "other_team", owner="team-a")),
        metadata=ADMIN)
    token = tmp_path / "token"
    token.write_text("reporter-token\n")
    cat = api.catalog.catalog_id
    counters = run_session(
        spark_conf(api, tms_home, reporter, f"http://127.0.0.1:{intake.port}", token),
        [f"SELECT count(*) FROM {cat}.ns.events WHERE kind = 'buy'",
         f"SELECT id FROM {cat}.ns.events WHERE kind = 'view' AND ts > TIMESTAMP '2026-01-01'",
         f"SELECT amount FROM {cat}.ns.events WHERE ts BETWEEN TIMESTAMP '2026-01-01' "
         "AND TIMESTAMP '2026-01-02'",
         f"INSERT INTO {cat}.ns.events VALUES (999, 'buy', 1.0, TIMESTAMP '2026-01-03')"])
    assert counters["dropped"] == 0 and counters["sent"] >= 4, counters

    explain = stub.ExplainTable(tms_pb2.ExplainTableRequest(name="tables/events"),
                                metadata=ADMIN)
    profile = explain.read_profile
    assert profile.reports >= 3, profile
    uses = {(c.column, c.operator): c.share for c in profile.columns}
    assert uses[("kind", "eq")] == pytest.approx(2 / profile.recent_scans, rel=0.01)
    assert ("ts", "range") in uses and ("amount", "projected") in uses
    assert "filter on" in profile.summary
    assert 0 <= profile.kept_share <= 1

    # the INSERT's commit report became a commit notification of that snapshot
    snapshot = events.refresh().current_snapshot().snapshot_id
    table = wait_for(lambda: (t := stub.GetTable(tms_pb2.GetTableRequest(
        name="tables/events"), metadata=ADMIN)).last_commit_id == str(snapshot) and t,
        "the commit report recorded as the table's last commit")
    assert table.commit_count >= 1


def test_a_scoped_or_wrong_token_reports_nothing(lake: Any, reporter: Path, tms_home: Path,
                                                  tmp_path: Path) -> None:
    api, intake = lake
    stub = api.stub()
    iceberg_data.append_batches(api.catalog.table("ns", "events"), 1)
    stub.RegisterTable(tms_pb2.RegisterTableRequest(
        table_id="events", table=api.catalog.pb("ns", "events", owner="team-a")), metadata=ADMIN)
    cat = api.catalog.catalog_id
    sql = [f"SELECT count(*) FROM {cat}.ns.events WHERE id = 3"]
    url = f"http://127.0.0.1:{intake.port}"
    scoped, reader = tmp_path / "scoped", tmp_path / "reader"
    scoped.write_text("scoped-token")
    reader.write_text("reader-token")
    # team-b's reporter token: accepted by the intake, but the table is team-a's
    assert run_session(spark_conf(api, tms_home, reporter, url, scoped), sql)["sent"] >= 1
    # a reader's token: refused (403), the batch dropped by the reporter, the query unharmed
    assert run_session(spark_conf(api, tms_home, reporter, url, reader), sql)["dropped"] >= 1
    explain = stub.ExplainTable(tms_pb2.ExplainTableRequest(name="tables/events"),
                                metadata=ADMIN)
    assert not explain.HasField("read_profile")


def test_tms_away_never_fails_a_query(api: Api, reporter: Path, tms_home: Path,
                                      tmp_path: Path) -> None:
    iceberg_data.append_batches(api.catalog.table("ns", "events"), 1)
    token = tmp_path / "token"
    token.write_text("x")
    cat = api.catalog.catalog_id
    counters = run_session(
        spark_conf(api, tms_home, reporter, f"http://127.0.0.1:{free_port()}", token,
                   **{"tms.reporter.timeout-ms": "300"}),
        [f"SELECT count(*) FROM {cat}.ns.events WHERE id = 3",
         f"INSERT INTO {cat}.ns.events VALUES (5, 'buy', 1.0, TIMESTAMP '2026-01-03')"])
    assert counters["sent"] == 0 and counters["dropped"] == counters["queued"] >= 2
