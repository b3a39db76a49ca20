"""The Iceberg job's procedure calls, built without Spark."""

from __future__ import annotations

import pytest

from tms.jobs import iceberg_maintenance as job


def _spec(action: str, table: str = "bench.orders", catalog: str = "bench"
          ) -> job.MaintenanceRequest:
    options = {"sort-order": "id"} if action == "clustering" else {}
    return job.parse_spec({"catalog_name": catalog, "catalog_properties": {},
                           "table": table, "action": action, "options": options})


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
