"""The health score and its history written by a real inspection: the scheduler over a
pyiceberg SQL catalog in PostgreSQL and a real ZooKeeper session; its heartbeat row; and the
leader's downsampling of the history on a real PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.helpers import SqlCatalog, sql_catalog
from tms.coordination import Coordinator
from tms.domain import CommitEvent, TableSpec
from tms.formats.iceberg.plugin import IcebergFormat
from tms.liveness import Heartbeat
from tms.local.iceberg_data import append_batches
from tms.local.postgres import LocalPostgres
from tms.local.zookeeper import LocalZooKeeper
from tms.scheduler.history import HistorySettings
from tms.scheduler.loop import Scheduler
from tms.storage.postgres import PostgresStore

pytestmark = pytest.mark.integration

SHARDS_WAIT_S = 60.0
SMALL_FILES = 12  # one small file per append: every data file is small


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def world(db_dsn: str, pg_server: LocalPostgres, zk_server: LocalZooKeeper, tmp_path: Path
          ) -> Iterator[tuple[PostgresStore, SqlCatalog, Scheduler, Clock]]:
    name = f"health_{int(time.time() * 1000) % 10**9}"
    pg_server.create_database(name)
    store = PostgresStore(db_dsn)
    coordinator = Coordinator(zk_server.hosts, f"s-{name}", shard_settle_s=0.2)
    try:
        cat = sql_catalog(store, str(pg_server.dsn(name)), tmp_path / "wh")
        append_batches(cat.table("ns", "small"), SMALL_FILES)
        append_batches(cat.table("ns", "fine"), 1)
        for t in ("small", "fine"):
            assert store.table_register(TableSpec(table_id=t, format="iceberg",
                                                  catalog=cat.catalog_id, namespace="ns",
                                                  table_name=t)) is not None
        coordinator.start()
        deadline = time.monotonic() + SHARDS_WAIT_S
        while coordinator.owned_shards() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        clock = Clock()
        beat = Heartbeat(store, "s1", "scheduler", lambda: (
            coordinator.leads, tuple(sorted(coordinator.held_shards)), ()), clock=clock,
            host="test-host")
        scheduler = Scheduler(store, coordinator, {"iceberg": IcebergFormat()}, "s1",
                              heartbeat=beat)
        yield store, cat, scheduler, clock
        scheduler.runner.close()
    finally:
        coordinator.stop()
        store.close()


def _rows(dsn: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql).fetchall()


def test_an_inspection_writes_health_and_history(
        world: tuple[PostgresStore, SqlCatalog, Scheduler, Clock], db_dsn: str) -> None:
    store, cat, scheduler, clock = world
    store.commits_notify([CommitEvent("small", "c1"), CommitEvent("fine", "c1")])
    assert scheduler.run_once() == 2
    health = dict(_rows(db_dsn, "SELECT t.table_id, h.score FROM tms_table_health h "
                                "JOIN tms_tables t ON t.id = h.table_pk"))
    scores = dict(_rows(db_dsn, "SELECT table_id, health_score FROM tms_tables"))
    assert health == scores  # the table's own score is the one of its parts
    assert scores["fine"] == 100 and scores["small"] < 100
    (parts,) = _rows(db_dsn, "SELECT h.parts FROM tms_table_health h JOIN tms_tables t "
                             "ON t.id = h.table_pk WHERE t.table_id = 'small'")[0]
    small = next(p for p in parts if p["name"] == "small_files")
    assert small["value"] == 1.0 and small["penalty"] == small["max_penalty"] == 35
    history = _rows(db_dsn, "SELECT t.table_id, h.data_files, h.small_files, h.snapshots, "
                            "h.resolution FROM tms_table_history h JOIN tms_tables t "
                            "ON t.id = h.table_pk ORDER BY 1")
    assert history == [("fine", 1, 0, 1, 0),  # too few files: small files not counted
                       ("small", SMALL_FILES, SMALL_FILES, SMALL_FILES, 0)]

    # the scheduler's heartbeat, paced by its clock: written at the first pass only
    procs = _rows(db_dsn, "SELECT id, kind, host, leader, cardinality(shards) > 0 "
                          "FROM tms_processes")
    assert procs == [("s1", "scheduler", "test-host", False, True)]
    assert scheduler.heartbeat is not None and scheduler.heartbeat.beats == 1

    # inspected again, nothing changed: no new point (the table's trend is unchanged)
    store.commits_notify([CommitEvent("small", "c2")])
    assert scheduler.run_once() == 1
    assert scheduler.heartbeat.beats == 1
    assert len(_rows(db_dsn, "SELECT 1 FROM tms_table_history")) == 2
    # a changed table, its last point older than the spacing: a new point
    _rows(db_dsn, "UPDATE tms_table_history SET at = at - interval '10 minutes' RETURNING 1")
    append_batches(cat.table("ns", "small"), 1)
    store.commits_notify([CommitEvent("small", "c3")])
    clock.t += 60.0
    assert scheduler.run_once() == 1
    assert scheduler.heartbeat.beats == 2
    files = [r[0] for r in _rows(db_dsn, "SELECT h.data_files FROM tms_table_history h "
                                         "JOIN tms_tables t ON t.id = h.table_pk WHERE "
                                         "t.table_id = 'small' ORDER BY h.at")]
    assert files == [SMALL_FILES, SMALL_FILES + 1]


def test_downsampling_keeps_the_last_point_of_each_hour_and_day(store: PostgresStore,
                                                                db_dsn: str) -> None:
    from tests.helpers import store_catalog
    store_catalog(store, "c")
    view = store.table_register(TableSpec(table_id="t", format="iceberg", catalog="c",
                                          namespace="ns", table_name="t"))
    assert view is not None
    pk = view.table.pk
    # points every 20 minutes from 400 days ago to now, data_files counting up
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO tms_table_history (table_pk, at, data_files, small_files, "
            "mean_file_bytes, total_bytes, delete_files, snapshots, manifests) "
            "SELECT %s, now() - make_interval(mins => 20 * i), 1000000 - i, 0, 0, 0, 0, 0, 0 "
            "FROM generate_series(0, 400 * 72) AS i", (pk,))
        # the newest point of every hour and of every UTC day, as they were before
        conn.execute("CREATE TABLE last_of_hour AS SELECT max(at) AS at FROM tms_table_history"
                     " GROUP BY date_trunc('hour', at, 'UTC')")
        conn.execute("CREATE TABLE last_of_day AS SELECT max(at) AS at FROM tms_table_history"
                     " GROUP BY date_trunc('day', at, 'UTC')")
    settings = HistorySettings(budget_s=30.0)
    changed = settings.downsample(store)
    assert changed > 0 and settings.after_pk == 0  # walked past the last table
    rows = _rows(db_dsn, "SELECT resolution, count(*), min(at) > now() - interval '366 days',"
                         " bool_and(at < now() - interval '29 days') FROM tms_table_history "
                         "GROUP BY 1 ORDER BY 1")
    by_res = {r[0]: r for r in rows}
    assert 71 <= by_res[0][1] <= 3 * 26  # the last day (and the partial hour before it)
    assert 29 * 24 - 2 <= by_res[1][1] <= 31 * 24  # hourly for about 29 days
    assert by_res[2][3] and by_res[2][2]  # daily: older than 29 days, none beyond a year
    assert 330 <= by_res[2][1] <= 337
    # each kept point is the newest of its hour (hourly) or of its UTC day (daily)
    misplaced = _rows(db_dsn, """
        SELECT resolution, count(*) FROM tms_table_history h
        WHERE (resolution = 1 AND at NOT IN (SELECT at FROM last_of_hour))
           OR (resolution = 2 AND at NOT IN (SELECT at FROM last_of_day))
        GROUP BY 1""")
    assert misplaced == []
    assert settings.downsample(store) == 0  # nothing left to do
