"""The table boundary inside the Spark job, right before anything is deleted (a real cold
spark-submit per test, real pyiceberg tables on the test PostgreSQL).

The processes refuse a table whose location reaches beyond it when they first see that
location; the job checks again, since storage changes in between (a team creates a table
below another's files) and a spec may come from before the rule. Orphan removal lists only
the directories the table writes.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.security.job_harness import Lake, cold_engine
from tms.domain import JobSpec
from tms.local import iceberg_data

pytestmark = pytest.mark.integration

MONTH_S = 30 * 24 * 3600


def _run(job: JobSpec, tmp_path: Path) -> Any:
    return cold_engine().run(job, tmp_path / "work", threading.Event(), lambda _h: None)


def _local(uri: str) -> Path:
    return Path(uri.removeprefix("file:").removeprefix("//"))


def _backdate(root: Path) -> list[Path]:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    then = time.time() - MONTH_S
    for f in files:
        os.utime(f, (then, then))
    return files


def _older_than() -> dict[str, str]:
    return {"older-than": (datetime.now(UTC) - timedelta(hours=25)).isoformat()}


def _refused(result: Any, *words: str) -> None:
    assert not result.succeeded and result.retryable is False, result.error
    for word in ("location refused", "nothing deleted", *words):
        assert word in (result.error or ""), result.error


def _unregistered_neighbour(lake: Lake, where: Path) -> list[Path]:
    """Another team's Iceberg table at ``where``, a month old: its files."""
    lake.catalog.create_namespace_if_not_exists(lake.namespace)
    other = lake.catalog.create_table(f"{lake.namespace}.b_{uuid.uuid4().hex[:6]}",
                                      schema=iceberg_data.SCHEMA, location=where.as_uri())
    iceberg_data.append_batches(other, 2, 10)
    return _backdate(where)


def test_orphan_removal_of_a_table_at_the_warehouse_root_is_refused(pg: Any,
                                                                    tmp_path: Path) -> None:
    lake = Lake(pg.dsn, tmp_path / "lake")
    team_b = _unregistered_neighbour(lake, lake.allowed / "ns_b" / "events")
    lake.table("umbrella", location=lake.allowed)  # its location: the catalog's warehouse

    result = _run(lake.job("umbrella", "remove_orphan_files", _older_than(),
                           allowed=[str(lake.allowed)]), tmp_path)

    _refused(result, "warehouse")
    assert all(f.exists() for f in team_b)


@pytest.mark.parametrize("action", ["remove_orphan_files", "expire_snapshots"])
def test_a_delete_under_a_location_holding_another_table_is_refused(
        pg: Any, tmp_path: Path, action: str) -> None:
    lake = Lake(pg.dsn, tmp_path / "lake")
    mine = lake.allowed / "ns_a" / "big"
    lake.table("big", location=mine)
    team_b = _unregistered_neighbour(lake, mine / "archive" / "events")
    options = _older_than() if action == "remove_orphan_files" else {"retain-last": "1"}

    result = _run(lake.job("big", action, options, allowed=[str(lake.allowed)]), tmp_path)

    _refused(result, "another Iceberg table", str(mine / "archive" / "events"))
    assert all(f.exists() for f in team_b)


def test_a_hudi_table_below_is_refused_too(pg: Any, tmp_path: Path) -> None:
    lake = Lake(pg.dsn, tmp_path / "lake")
    mine = lake.allowed / "ns_a" / "t"
    lake.table("t", location=mine)
    hudi = mine / "data" / "h"
    (hudi / ".hoodie").mkdir(parents=True)
    (hudi / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=h\n")
    (hudi / "f.parquet").write_bytes(b"another format's data")
    _backdate(hudi)

    result = _run(lake.job("t", "remove_orphan_files", _older_than(),
                           allowed=[str(lake.allowed)]), tmp_path)

    _refused(result, "holds a Hudi table")
    assert (hudi / "f.parquet").exists()


def test_orphan_removal_lists_only_the_directories_the_table_writes(pg: Any,
                                                                    tmp_path: Path) -> None:
    lake = Lake(pg.dsn, tmp_path / "lake")
    table = lake.table("t")
    where = _local(table.location())
    orphan = where / "data" / f"orphan-{uuid.uuid4().hex}.parquet"
    orphan.write_bytes(b"left by a failed write")
    kept = where / "exports" / "report.csv"  # under the location, not written by the table
    kept.parent.mkdir()
    kept.write_text("a,b\n")
    for f in (orphan, kept):
        os.utime(f, (time.time() - MONTH_S, time.time() - MONTH_S))

    result = _run(lake.job("t", "remove_orphan_files", _older_than(),
                           allowed=[str(lake.allowed)]), tmp_path)

    assert result.succeeded, result.error
    listed = [str(_local(p)) for p in result.result["orphan_file_location"]]
    assert listed == [str(orphan)]
    assert not orphan.exists() and kept.exists()
    assert result.result["boundary"]["entries_scanned"] > 0


def test_another_table_at_the_same_location_is_refused(pg: Any, tmp_path: Path) -> None:
    """Another team created a table at this table's very location: its metadata files sit in
    this table's metadata directory, where no scan marker can tell them apart; their
    table-uuid does."""
    lake = Lake(pg.dsn, tmp_path / "lake")
    mine = lake.allowed / "ns_a" / "t"
    lake.table("t", location=mine)
    twin = _unregistered_neighbour(lake, mine)  # also backdates the table's own files
    twin_only = [f for f in twin if "metadata" not in f.parts or f.suffix == ".json"]

    result = _run(lake.job("t", "remove_orphan_files", _older_than(),
                           allowed=[str(lake.allowed)]), tmp_path)

    _refused(result, "two tables share this location")
    assert all(f.exists() for f in twin_only)
