"""Catalog discovery on real PostgreSQL with a real pyiceberg SQL catalog (and real Hudi
tables on disk): new tables found and registered, include/exclude, dropped tables marked
MISSING with their queued operations cancelled, reappearing tables active again, failing
listings recorded without touching the tables, and the claim fencing two leaders."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import PgHandle
from tests.helpers import iceberg_catalog, wait_for
from tests.integration.discovery_support import (
    INTERVAL_S,
    HudiLake,
    IcebergLake,
    discovery_settings,
    unzip_hudi,
)
from tms.coordination import NUM_SHARDS
from tms.domain import CatalogUpdate, OperationState, TableState
from tms.local import iceberg_data
from tms.local.ports import free_port
from tms.storage.postgres import PostgresStore
from tms.storage.roles import EnqueueParams

pytestmark = pytest.mark.integration


@pytest.fixture
def lake(store: PostgresStore, pg: PgHandle, tmp_path: Path) -> IcebergLake:
    return IcebergLake(store, pg.dsn, tmp_path, include=("sales.*", "ops.*"),
                       exclude=("sales.tmp_*",), owner="data-team", queue="bulk",
                       priority=7)


def test_new_tables_found_and_registered(lake: IcebergLake) -> None:
    orders = lake.create(("sales", "orders"))
    lake.create(("sales", "tmp_scratch"))  # excluded
    lake.create(("hr", "salaries"))  # not included
    lake.create(("ops", "deep", "events"))  # nested namespace "ops.deep" is under "ops.*"

    report = lake.listing()
    assert report.error is None and report.skipped == []
    assert sorted(report.registered) == ["lake.ops.deep.events", "lake.sales.orders"]
    rows = lake.rows()
    assert rows["lake.sales.orders"] == {
        "namespace": "sales", "name": "orders", "state": "ACTIVE", "owner": "data-team",
        "queue": "bulk", "priority": 7, "policy": {}, "format": "iceberg", "base_path": "",
        "location": orders.removeprefix("file://")}
    view = lake.store.table_get("lake.sales.orders")
    assert view is not None and view.table.catalog == "lake"
    status = lake.catalog().status
    assert (status.last_registered, status.last_missing, status.last_error) == (2, 0, None)
    assert status.last_at == lake.clock()

    # listed again: nothing new, nothing registered twice
    again = lake.listing()
    assert again.registered == [] and again.missing == 0 and again.listed == 4
    assert sorted(lake.rows()) == ["lake.ops.deep.events", "lake.sales.orders"]


def test_discovered_flag_is_set(lake: IcebergLake, db_dsn: str) -> None:
    import psycopg

    lake.create(("sales", "orders"))
    lake.listing()
    with psycopg.connect(db_dsn) as conn:
        row = conn.execute("SELECT discovered FROM tms_tables WHERE table_id = %s",
                           ("lake.sales.orders",)).fetchone()
    assert row == (True,)


def test_dropped_table_marked_missing_then_found_again(lake: IcebergLake) -> None:
    lake.create(("sales", "orders"))
    lake.create(("sales", "refunds"))
    lake.listing()
    view = lake.store.table_get("lake.sales.orders")
    assert view is not None
    op_id = lake.store.operation_enqueue(EnqueueParams(view.table, "compaction", "manual",
                                                       "test", 1, 0))
    assert op_id is not None

    lake.iceberg.drop_table(("sales", "orders"))
    report = lake.listing()
    assert (report.missing, report.cancelled) == (1, 1)
    rows = lake.rows()
    assert rows["lake.sales.orders"]["state"] == "MISSING"
    assert rows["lake.sales.refunds"]["state"] == "ACTIVE"
    op = lake.store.operation_get("lake.sales.orders", op_id)
    assert op is not None and op.state is OperationState.CANCELLED
    assert op.outcome.error == "table no longer in catalog lake"
    status = lake.catalog().status
    assert (status.last_registered, status.last_missing, status.last_error) == (0, 1, None)

    # a MISSING table's commit mark reaches the scheduler as MISSING (which it skips); its
    # pull check never comes
    lake.store.commits_mark_dirty(view.table.pk)
    batch = lake.store.decision_begin_batch(list(range(NUM_SHARDS)), NUM_SHARDS, 100)
    states = {d.table.table_id: (d.table.state, d.had_commits) for d in batch}
    assert states["lake.sales.orders"] == (TableState.MISSING, True)
    again = lake.store.decision_begin_batch(list(range(NUM_SHARDS)), NUM_SHARDS, 100)
    assert "lake.sales.orders" not in {d.table.table_id for d in again}

    # marked once: the next listing leaves it as it is
    assert lake.listing().missing == 0

    lake.create(("sales", "orders"))
    back = lake.listing()
    assert back.found_again == 1 and back.registered == []
    assert lake.rows()["lake.sales.orders"]["state"] == "ACTIVE"


def test_paused_table_is_not_marked(lake: IcebergLake) -> None:
    lake.create(("sales", "orders"))
    lake.listing()
    lake.store.table_set_state("lake.sales.orders", TableState.PAUSED)
    lake.iceberg.drop_table(("sales", "orders"))
    assert lake.listing().missing == 0
    assert lake.rows()["lake.sales.orders"]["state"] == "PAUSED"


def test_unreachable_catalog_recorded_tables_left_alone(lake: IcebergLake) -> None:
    lake.create(("sales", "orders"))
    lake.listing()
    dead = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/nothing"
    lake.store.catalog_update("lake", CatalogUpdate(
        properties={"uri": dead, "warehouse": lake.warehouse.as_uri()},
        secrets={"jdbc.password": "env:TMS_SECRET_LAKE_PW"}))
    lake.use_environ({"TMS_SECRET_LAKE_PW": "hunter2-very-secret"})

    report = lake.listing()
    assert report.error is not None and report.error.startswith("listing failed:")
    status = lake.catalog().status
    assert status.last_error == report.error
    assert "hunter2-very-secret" not in status.last_error
    assert (status.last_registered, status.last_missing) == (0, 0)
    assert lake.rows()["lake.sales.orders"]["state"] == "ACTIVE"

    # a secret that is not there: the error names the reference, the tables stay
    lake.use_environ({})
    report = lake.listing()
    assert report.error is not None and "env:TMS_SECRET_LAKE_PW" in report.error
    assert lake.rows()["lake.sales.orders"]["state"] == "ACTIVE"


def test_claim_fences_two_leaders(lake: IcebergLake, store: PostgresStore) -> None:
    """The claim moves the next listing ahead in the same statement: a second leader at the
    same moment finds nothing due, and the catalog is due again one interval later."""
    at = datetime.now(UTC) + timedelta(seconds=1)
    first = store.catalog_claim_discovery(at, 10)
    assert [c.catalog_id for c in first] == ["lake"]
    assert store.catalog_claim_discovery(at, 10) == []
    assert store.catalog_claim_discovery(at + timedelta(seconds=INTERVAL_S - 1), 10) == []
    assert [c.catalog_id for c in store.catalog_claim_discovery(
        at + timedelta(seconds=INTERVAL_S), 10)] == ["lake"]


def test_disabled_catalog_is_never_listed(store: PostgresStore, pg: PgHandle,
                                          tmp_path: Path) -> None:
    off = IcebergLake(store, pg.dsn, tmp_path, enabled=False)
    off.create(("sales", "orders"))
    off.clock.advance(INTERVAL_S + 1)
    assert off.discovery.run_once() == []
    assert off.rows() == {}


def test_hudi_tables_found_in_a_hadoop_catalog(store: PostgresStore, tmp_path: Path) -> None:
    lake = HudiLake(store, tmp_path, queue="hudi")
    trips = unzip_hudi(lake.root / "sales" / "trips")
    unzip_hudi(lake.root / "raw" / "events")
    (lake.root / "sales" / "not_a_table").mkdir()

    report = lake.listing()
    assert report.error is None and report.skipped == []
    assert sorted(report.registered) == ["files.raw.events", "files.sales.trips"]
    row = lake.rows()["files.sales.trips"]
    assert row | {"policy": None} == {
        "namespace": "sales", "name": "trips", "state": "ACTIVE", "owner": "", "queue": "hudi",
        "priority": 0, "policy": None, "format": "hudi", "base_path": str(trips),
        "location": str(trips)}

    shutil.rmtree(trips)
    gone = lake.listing()
    assert gone.missing == 1
    assert lake.rows()["files.sales.trips"]["state"] == "MISSING"
    assert lake.rows()["files.raw.events"]["state"] == "ACTIVE"


def test_scheduler_process_discovers_while_leading(make_stack) -> None:
    """The real tms-scheduler runs discovery on its leader: a catalog created with discovery
    on gets its table registered without anything else happening."""
    stack = make_stack(scheduler_args=["--discovery-poll-interval-s", "0.2"])
    iceberg, props = iceberg_catalog(stack, "lake")
    iceberg_data.create_table(iceberg, "sales", "orders")
    store = PostgresStore(stack.database_url)
    try:
        # iceberg_catalog created catalogs/lake; discovery is switched on for it
        assert store.catalog_update("lake", CatalogUpdate(
            discovery=discovery_settings(queue="found"))) is not None
        stack.start_scheduler(0)
        view = wait_for(lambda: store.table_get("lake.sales.orders"), "the table discovered")
        assert view.table.queue == "found"
        status = wait_for(lambda: store.catalog_get("lake").status.last_at and
                          store.catalog_get("lake").status, "the listing recorded")
        assert status.last_error is None and status.last_registered == 1
    finally:
        store.close()
