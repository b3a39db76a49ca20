"""A policy value stored before the schema tightened (written straight into the table's row)
must not stop the scheduler for the other tables of its batch, nor burn operation ids."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from tests.helpers import store_catalog
from tests.unit.fakes import FAKE_ROOT, FakeCoordinator, FakeFormat
from tms.domain import CatalogType, CommitEvent, Decision, Operation, Table, TableSpec
from tms.formats.iceberg.policy import K
from tms.policy.common import MAX_PULL_INTERVAL_S
from tms.scheduler.loop import Scheduler
from tms.storage.postgres import PostgresStore

pytestmark = pytest.mark.integration


class PolicyFormat(FakeFormat):
    """Reads a policy key through the schema, as the real formats do."""

    def evaluate(self, table: Table, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, Operation | None], now: datetime) -> list[Decision]:
        need = K["compaction.min-small-files"].as_int(table.policy)
        return [Decision("compaction", metrics["small_files"] >= need, "small files",
                         dict(metrics))]


def _seq(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT last_value FROM tms_operations_id_seq").fetchone()
    assert row is not None
    return int(row[0])


def test_one_bad_stored_value_does_not_stop_the_batch(db_dsn: str) -> None:
    store = PostgresStore(db_dsn)
    try:
        store_catalog(store, "c", CatalogType.HADOOP, allowed_locations=(FAKE_ROOT,))
        for name in ("a", "bad-eval", "bad-interval", "z"):
            assert store.table_register(TableSpec(table_id=name, format="fake", catalog="c",
                                                  table_name=name)) is not None
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            for name, policy in (
                    ("bad-eval", {"compaction.min-small-files": " 5"}),
                    ("bad-interval", {"scheduler.pull-interval-s": "99999999999999999999"})):
                conn.execute("UPDATE tms_tables SET policy = %s WHERE table_id = %s",
                             (Jsonb(policy), name))
        scheduler = Scheduler(store, FakeCoordinator(), {"fake": PolicyFormat()},  # type: ignore[arg-type]
                              "s1")
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            for round_ in range(2):
                store.commits_notify([CommitEvent(t, f"c{round_}") for t in
                                      ("a", "bad-eval", "bad-interval", "z")])
                assert scheduler.decide_batch() == 4
                if round_ == 0:
                    after_first = _seq(conn)
            assert _seq(conn) == after_first  # the second pass queued nothing new, burnt nothing
            ops = dict(conn.execute(
                "SELECT t.table_id, count(o.id) FROM tms_tables t LEFT JOIN tms_operations o "
                "ON o.table_pk = t.id GROUP BY t.table_id").fetchall())
            reasons = dict(conn.execute(
                "SELECT t.table_id, d.reason FROM tms_decisions d JOIN tms_tables t "
                "ON t.id = d.table_pk").fetchall())
            far = conn.execute(
                "SELECT next_check_at <= now() + make_interval(secs => %s) FROM tms_tables "
                "WHERE table_id = 'bad-interval'", (float(MAX_PULL_INTERVAL_S),)).fetchone()
        assert ops == {"a": 1, "bad-eval": 0, "bad-interval": 1, "z": 1}
        assert reasons["bad-eval"].startswith("policy evaluation failed")
        assert "compaction.min-small-files" in reasons["bad-eval"]
        assert far == (True,)
    finally:
        store.close()
