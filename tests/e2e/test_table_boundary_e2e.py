"""A table never reaches beyond itself, on the real processes (tms-api, tms-scheduler,
tms-executor, PostgreSQL, ZooKeeper, Spark).

The set-up ``docs/security.md`` describes: an admin's catalog whose allowed location is a
shared warehouse, admitting team A as owner. Team B keeps an Iceberg table under the same
warehouse that TMS has never heard of, its files a month old. Team A then points a table of
its own at the warehouse root (registered so, or moved there after registration) and asks
for orphan-file removal: before the table boundary was checked, the first was accepted and
the removal deleted every file of team B's table as "orphans"; the second was stored as the
table's new location by the scheduler, which compared it with registered tables only.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest

from bench.common.procs import create_catalog
from tests.helpers import stub_for, wait_for
from tms.domain import CatalogSpec, CatalogType
from tms.local import iceberg_data
from tms.v1 import tms_pb2

pytestmark = pytest.mark.e2e

CATALOG = "lake"
TEAM_A = "team-a"
TEAM_A_TOKEN = "team-a-owner-secret"
TEAM_A_WRITER_TOKEN = "team-a-writer-secret"
ADMIN_TOKEN = "platform-admin-secret"
MONTH_S = 30 * 24 * 3600
# older than the ~24 h Iceberg insists on, as the author asked
ORPHAN_AGE = timedelta(hours=24, minutes=10)
TERMINAL = (tms_pb2.Operation.SUCCEEDED, tms_pb2.Operation.FAILED,
            tms_pb2.Operation.CANCELLED, tms_pb2.Operation.SKIPPED)


def _tokens(path: Path) -> Path:
    path.write_text(json.dumps({"tokens": [
        {"name": "platform", "token": ADMIN_TOKEN, "roles": ["admin"]},
        {"name": "team-a-owner", "token": TEAM_A_TOKEN, "roles": ["owner"],
         "owners": [TEAM_A]},
        {"name": "team-a-writer", "token": TEAM_A_WRITER_TOKEN, "roles": ["writer"],
         "owners": [TEAM_A]},
    ]}))
    path.chmod(0o600)
    return path


def _as(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _backdate(files: list[Path], seconds: float) -> None:
    then = time.time() - seconds
    for f in files:
        os.utime(f, (then, then))


def _team_b_table(catalog: object, warehouse: Path) -> list[Path]:
    """Team B's month-old Iceberg table under the warehouse, unknown to TMS: its files."""
    catalog.create_namespace_if_not_exists("ns_b")  # type: ignore[attr-defined]
    table = catalog.create_table(  # type: ignore[attr-defined]
        "ns_b.events", schema=iceberg_data.SCHEMA,
        location=(warehouse / "ns_b" / "events").as_uri())
    iceberg_data.append_batches(table, 3, rows_per_commit=10)
    files = _files(warehouse / "ns_b" / "events")
    assert any(f.name.endswith(".metadata.json") for f in files)
    assert any(f.suffix == ".parquet" for f in files)
    _backdate(files, MONTH_S)
    return files


def _operation_end(stub: object, name: str) -> tms_pb2.Operation:
    def ended() -> tms_pb2.Operation | None:
        op = stub.GetOperation(tms_pb2.GetOperationRequest(name=name),  # type: ignore[attr-defined]
                               metadata=_as(ADMIN_TOKEN), timeout=10)
        return op if op.state in TERMINAL else None
    return wait_for(ended, f"{name} to end")


def _remove_orphans(stub: object, table_id: str) -> tms_pb2.Operation:
    older_than = (datetime.now(UTC) - ORPHAN_AGE).strftime("%Y-%m-%dT%H:%M:%SZ")
    op = stub.TriggerOperation(tms_pb2.TriggerOperationRequest(  # type: ignore[attr-defined]
        parent=f"tables/{table_id}", action="remove_orphan_files",
        params={"older-than": older_than}), metadata=_as(TEAM_A_TOKEN), timeout=10)
    return _operation_end(stub, op.name)


@pytest.fixture
def lake(make_stack, tmp_path: Path):  # type: ignore[no-untyped-def]
    stack = make_stack(api_args=["--tokens-file", str(_tokens(tmp_path / "tokens.json"))])
    warehouse = stack.state_dir / "warehouse"
    warehouse.mkdir()
    assert stack.postgres is not None
    dsn = stack.postgres.create_database("iceberg_lake")
    props = iceberg_data.sql_catalog_properties(dsn, warehouse.as_uri())
    create_catalog(stack.database_url, CatalogSpec(
        CATALOG, CatalogType.SQL, properties={k: v for k, v in props.items() if k != "type"},
        allowed_locations=(str(warehouse),), allowed_owners=(TEAM_A,)))
    stack.start_api()
    stack.start_scheduler()
    stack.start_executor()
    return stack, iceberg_data.load_catalog(CATALOG, props), warehouse


def test_a_table_at_the_warehouse_root_cannot_remove_another_teams_files(lake) -> None:  # type: ignore[no-untyped-def]
    stack, catalog, warehouse = lake
    team_b = _team_b_table(catalog, warehouse)
    catalog.create_namespace_if_not_exists("ns_a")
    umbrella = catalog.create_table("ns_a.umbrella", schema=iceberg_data.SCHEMA,
                                    location=warehouse.as_uri())
    iceberg_data.append_batches(umbrella, 2, rows_per_commit=10)
    stub = stub_for(stack)

    refused: grpc.RpcError | None = None
    try:
        stub.RegisterTable(tms_pb2.RegisterTableRequest(
            table_id="ns_a.umbrella", table=tms_pb2.Table(
                format="iceberg", catalog=CATALOG, namespace="ns_a", table_name="umbrella",
                owner=TEAM_A)), metadata=_as(TEAM_A_TOKEN), timeout=30)
    except grpc.RpcError as e:
        refused = e
    if refused is None:  # what happened before the rule: the removal runs
        op = _remove_orphans(stub, "ns_a.umbrella")
        lost = [str(f) for f in team_b if not f.exists()]
        assert not lost, (f"remove_orphan_files ended {tms_pb2.Operation.State.Name(op.state)} "
                          f"and deleted {len(lost)} of team B's {len(team_b)} files: {lost[:3]}")
        pytest.fail("a table whose location is the warehouse root was registered")
    assert refused.code() in (grpc.StatusCode.FAILED_PRECONDITION,
                              grpc.StatusCode.INVALID_ARGUMENT), refused
    message = refused.details()
    assert "location" in message and "warehouse" in message, message
    assert all(f.exists() for f in team_b)
    # team B can still register its own table: nothing claims its directory
    admin = stub.RegisterTable(tms_pb2.RegisterTableRequest(
        table_id="ns_b.events", table=tms_pb2.Table(
            format="iceberg", catalog=CATALOG, namespace="ns_b", table_name="events",
            owner="team-b")), metadata=_as(ADMIN_TOKEN), timeout=30)
    assert admin.location == str(warehouse / "ns_b" / "events")


def test_a_table_moved_to_the_warehouse_root_is_paused_not_cleaned(lake) -> None:  # type: ignore[no-untyped-def]
    stack, catalog, warehouse = lake
    team_b = _team_b_table(catalog, warehouse)
    catalog.create_namespace_if_not_exists("ns_a")
    mover = catalog.create_table("ns_a.mover", schema=iceberg_data.SCHEMA,
                                 location=(warehouse / "ns_a" / "mover").as_uri())
    iceberg_data.append_batches(mover, 2, rows_per_commit=10)
    stub = stub_for(stack)
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id="ns_a.mover", table=tms_pb2.Table(
        format="iceberg", catalog=CATALOG, namespace="ns_a", table_name="mover",
        owner=TEAM_A)), metadata=_as(TEAM_A_TOKEN), timeout=30)

    # a writer moves the table up to the warehouse root and tells TMS of a commit
    # (pyiceberg's update_location is not implemented; its SetLocationUpdate is what Spark's
    # ALTER TABLE ... SET LOCATION commits)
    from pyiceberg.table.update import SetLocationUpdate

    with mover.transaction() as tx:
        tx._apply((SetLocationUpdate(location=warehouse.as_uri()),))
    mover = catalog.load_table("ns_a.mover")
    sid = iceberg_data.append_batches(mover, 1, rows_per_commit=10)[0]
    stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table="tables/ns_a.mover", commit_id=str(sid)),
                      metadata=_as(TEAM_A_WRITER_TOKEN), timeout=10)

    def settled() -> tms_pb2.Table | None:
        t = stub.GetTable(tms_pb2.GetTableRequest(name="tables/ns_a.mover"),
                          metadata=_as(ADMIN_TOKEN), timeout=10)
        if t.state == tms_pb2.Table.PAUSED or t.location == str(warehouse):
            return t
        return None

    seen = wait_for(settled, "the scheduler to see the table's new location")
    if seen.state != tms_pb2.Table.PAUSED:  # what happened before the rule
        op = _remove_orphans(stub, "ns_a.mover")
        lost = [str(f) for f in team_b if not f.exists()]
        assert not lost, (f"remove_orphan_files ended {tms_pb2.Operation.State.Name(op.state)} "
                          f"and deleted {len(lost)} of team B's {len(team_b)} files: {lost[:3]}")
        pytest.fail(f"the scheduler stored the warehouse root as the table's location: {seen}")
    explained = stub.ExplainTable(tms_pb2.ExplainTableRequest(name="tables/ns_a.mover"),
                                  metadata=_as(ADMIN_TOKEN), timeout=10)
    reasons = " ".join(a.reason for a in explained.actions)
    assert "paused" in reasons and "warehouse" in reasons, reasons
    assert seen.location != str(warehouse)
    # asked by hand anyway: a paused table's operation does not run, and nothing is lost
    try:
        op = _remove_orphans(stub, "ns_a.mover")
        assert op.state != tms_pb2.Operation.SUCCEEDED, op
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.FAILED_PRECONDITION, e
    assert all(f.exists() for f in team_b)
