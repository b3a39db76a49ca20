"""Unchanged tables are not measured again, through the real scheduler: a pyiceberg SQL
catalog in PostgreSQL, TMS's PostgreSQL store, a real ZooKeeper session holding the shards,
and decisions on four threads. A table's metadata is measured at its first decision, not at
the next while its catalog names the same metadata file and its policy is the same; a commit
or a policy change makes it measured again."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from tests.helpers import SqlCatalog, sql_catalog
from tms.coordination import Coordinator
from tms.domain import CommitEvent, Table, TableSpec
from tms.formats.iceberg.plugin import IcebergFormat
from tms.local.iceberg_data import append_batches
from tms.local.postgres import LocalPostgres
from tms.local.zookeeper import LocalZooKeeper
from tms.scheduler.loop import Scheduler
from tms.storage.postgres import PostgresStore

pytestmark = pytest.mark.integration

TABLES = ("a", "b", "c")
SHARDS_WAIT_S = 60.0


class Counting(IcebergFormat):
    def __init__(self) -> None:
        super().__init__()
        self.measured: list[str] = []

    def _measure(self, table: Table, tbl: Any) -> dict[str, Any]:
        self.measured.append(table.table_name)
        return super()._measure(table, tbl)


@pytest.fixture
def world(db_dsn: str, pg_server: LocalPostgres, zk_server: LocalZooKeeper,
          tmp_path: Path) -> Iterator[tuple[PostgresStore, SqlCatalog, Scheduler, Counting]]:
    name = f"unchanged_{int(time.time() * 1000) % 10**9}"
    pg_server.create_database(name)
    store = PostgresStore(db_dsn)
    coordinator = Coordinator(zk_server.hosts, f"s-{name}", shard_settle_s=0.2)
    try:
        cat = sql_catalog(store, str(pg_server.dsn(name)), tmp_path / "wh")
        for t in TABLES:
            append_batches(cat.table("ns", t), 2)
            assert store.table_register(TableSpec(table_id=t, format="iceberg",
                                                  catalog=cat.catalog_id, namespace="ns",
                                                  table_name=t)) is not None
        coordinator.start()
        deadline = time.monotonic() + SHARDS_WAIT_S
        while coordinator.owned_shards() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        fmt = Counting()
        scheduler = Scheduler(store, coordinator, {"iceberg": fmt}, "s1", decision_threads=4)
        yield store, cat, scheduler, fmt
        scheduler.runner.close()
    finally:
        coordinator.stop()
        store.close()


def _due(store: PostgresStore, commit: str) -> None:
    store.commits_notify([CommitEvent(t, commit) for t in TABLES])


def test_unchanged_changed_and_policy_changed_tables(
        world: tuple[PostgresStore, SqlCatalog, Scheduler, Counting], db_dsn: str) -> None:
    store, cat, scheduler, fmt = world
    _due(store, "c1")
    assert scheduler.decide_batch() == 3
    assert sorted(fmt.measured) == ["a", "b", "c"]  # first look: every table measured

    _due(store, "c2")
    assert scheduler.decide_batch() == 3
    assert sorted(fmt.measured) == ["a", "b", "c"]  # nothing changed: nothing measured
    assert fmt.unchanged.hits == 3

    append_batches(cat.table("ns", "b"), 1)  # a new snapshot of b
    with psycopg.connect(db_dsn, autocommit=True) as conn:  # a new policy for c
        conn.execute("UPDATE tms_tables SET policy = %s WHERE table_id = 'c'",
                     (Jsonb({"compaction.small-file-bytes": "1024"}),))
    fmt.measured.clear()
    _due(store, "c3")
    assert scheduler.decide_batch() == 3
    assert sorted(fmt.measured) == ["b", "c"]

    with psycopg.connect(db_dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT t.table_id, d.metrics->>'data_files' FROM tms_decisions d "
            "JOIN tms_tables t ON t.id = d.table_pk WHERE d.action = 'compaction'").fetchall()
    assert dict(rows)["b"] == "3" and dict(rows)["a"] == "2"  # the reused metrics recorded


def test_a_table_the_catalog_no_longer_holds_is_not_served_from_memory(
        world: tuple[PostgresStore, SqlCatalog, Scheduler, Counting], db_dsn: str) -> None:
    store, cat, scheduler, fmt = world
    _due(store, "c1")
    assert scheduler.decide_batch() == 3
    cat.pyiceberg.drop_table("ns.a")
    cat.pyiceberg.rename_table("ns.b", "ns.b_renamed")
    fmt.measured.clear()
    _due(store, "c2")
    assert scheduler.decide_batch() == 3
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        reasons = dict(conn.execute(
            "SELECT t.table_id, string_agg(d.reason, ' | ') FROM tms_decisions d "
            "JOIN tms_tables t ON t.id = d.table_pk GROUP BY t.table_id").fetchall())
    assert "no longer holds the table" in reasons["a"]  # dropped: not served from memory
    assert "no longer holds the table" in reasons["b"]  # renamed: the same
    assert "no longer holds" not in reasons["c"] and fmt.measured == []  # c: reused
    assert fmt.prefetched.batches == 2  # one catalog call per batch for the pointers


def test_an_unreachable_catalog_fails_each_inspection_as_before(
        world: tuple[PostgresStore, SqlCatalog, Scheduler, Counting], db_dsn: str) -> None:
    """The batch lookup fails, then every table asks on its own and fails: each decision says
    the inspection failed and the table is looked at again soon, nothing served from memory."""
    from tms.catalogs import CatalogCache
    from tms.domain import CatalogUpdate
    from tms.scheduler.decide import INSPECT_FAILURE_RETRY_S

    store, cat, scheduler, fmt = world
    _due(store, "c1")
    assert scheduler.decide_batch() == 3
    props = dict(cat.spec.properties, uri="postgresql+psycopg://nobody@127.0.0.1:1/none")
    assert store.catalog_update(cat.catalog_id, CatalogUpdate(properties=props)) is not None
    scheduler.catalogs = CatalogCache(store.catalog_get)  # seen now, not after its TTL
    hits = fmt.unchanged.hits
    _due(store, "c2")
    assert scheduler.decide_batch() == 3
    assert fmt.unchanged.hits == hits and fmt.prefetched.batches == 1  # only the first batch
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT d.reason, t.next_check_at - now() FROM tms_decisions d "
            "JOIN tms_tables t ON t.id = d.table_pk").fetchall()
    assert rows and all(r.startswith("inspection failed: catalog ") for r, _ in rows)
    assert all(left.total_seconds() <= INSPECT_FAILURE_RETRY_S for _, left in rows)
