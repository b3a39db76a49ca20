"""The Iceberg job's procedure calls, built without Spark."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tms.jobs import ICEBERG_MAINTENANCE_APP, WARM_DRIVER_APP
from tms.jobs import iceberg_maintenance as job
from tms.spark.job_package import job_zip


def _spec(action: str, table: str = "bench.orders", catalog: str = "bench"
          ) -> job.MaintenanceRequest:
    options = {"sort-order": "id"} if action == "clustering" else {}
    return job.parse_spec({"catalog_name": catalog, "catalog_properties": {},
                           "table": table,
                           "allowed_locations": ["/wh"], "action": action, "options": options})


def test_a_spec_without_allowed_locations_is_refused() -> None:
    """The job never runs on a table it cannot check against its catalog's allowed
    locations: the list is required (an empty one allows nothing)."""
    with pytest.raises(job.SpecError, match="allowed_locations is required"):
        job.parse_spec({"catalog_name": "c", "catalog_properties": {}, "table": "ns.t",
                        "action": "compaction"})
    with pytest.raises(job.SpecError, match="allowed_locations must be a list"):
        job.parse_spec({"catalog_name": "c", "table": "ns.t", "action": "compaction",
                        "allowed_locations": "/wh"})
    assert job.parse_spec({"catalog_name": "c", "table": "ns.t", "action": "compaction",
                           "allowed_locations": []}).allowed_locations == ()


def test_clustering_with_neither_option_sorts_by_the_tables_own_order() -> None:
    call = job.ACTIONS["clustering"](job.parse_spec({
        "catalog_name": "c", "table": "ns.t", "action": "clustering",
        "allowed_locations": ["/wh"]}))
    assert call.args == ("table => '`c`.`ns`.`t`'", "strategy => 'sort'")
    with pytest.raises(job.SpecError, match="one of the options"):
        job.ACTIONS["clustering"](job.parse_spec({
            "catalog_name": "c", "table": "ns.t", "action": "clustering",
            "allowed_locations": ["/wh"], "options": {"sort-order": "id",
                                                      "zorder-columns": "id"}}))


@pytest.mark.parametrize("action", sorted(job.ACTIONS))
def test_table_argument_is_catalog_qualified(action: str) -> None:
    # a namespace named like the catalog must not be read as the catalog
    spec = _spec(action)
    sql = job.ACTIONS[action](spec).sql(spec.catalog_name)
    assert sql.startswith("CALL `bench`.system.")
    assert "table => '`bench`.`bench`.`orders`'" in sql


def test_quotes_in_names_stay_inside_the_literal() -> None:
    spec = _spec("compaction", table="ns.a-b")
    assert "table => '`bench`.`ns`.`a-b`'" in job.ACTIONS["compaction"](spec).sql("bench")


def test_the_job_runs_when_shipped_alone(tmp_path: Path) -> None:
    # what spark-submit ships to a cluster: the app and the job's zip, no TMS installed
    # (-S -s and a bare environment: neither this checkout nor site-packages on the path)
    for f in (ICEBERG_MAINTENANCE_APP, WARM_DRIVER_APP):
        shutil.copy(f, tmp_path / f.name)
    env = {"PYTHONPATH": str(shutil.copy(job_zip(), tmp_path / "job.zip"))}
    spec, result = tmp_path / "spec.json", tmp_path / "result.json"
    spec.write_text(json.dumps({"catalog_name": "c", "table": "ns.t", "action": "compaction",
                                "allowed_locations": ["/lake/%252e%252e"]}))
    proc = subprocess.run([sys.executable, "-S", "-s", str(tmp_path / ICEBERG_MAINTENANCE_APP.name),
                           "--spec", str(spec), "--result", str(result)],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    payload = json.loads(result.read_text())
    assert payload["error_type"] == "SpecError" and "allowed_locations" in payload["error"]
    assert payload["retryable"] is False and payload["error_class"] == "invalid job spec"
    load = "import runpy; runpy.run_path('warm_driver.py', run_name='shipped')"
    imported = subprocess.run([sys.executable, "-S", "-s", "-c", load],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert imported.returncode == 0, imported.stderr
