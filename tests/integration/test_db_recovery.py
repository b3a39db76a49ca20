"""The store's connection pool after PostgreSQL restarts (its own throw-away server, since the
test stops it): the first statement after the server accepts connections again succeeds.

Three ways it can fail: (1) a restart between two requests leaves the pool's idle connections
dead, and the pool hands them out (the first statements after the restart fail, and a pool
checking them waits 1 s, 2 s, ... between dead ones); (2) after a longer outage the pool's
reconnect backoff has grown to many seconds, so nothing connects for that long after the
server is back; (3) with a short reconnect timeout but nothing to start a new attempt when one
gives up, a caller already waiting (a single-threaded scheduler) waits out its whole timeout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.helpers import own_postgres
from tms.local.postgres import LocalPostgres
from tms.storage.postgres.db import Db

pytestmark = pytest.mark.integration

CALL_TIMEOUT_S = 2.0  # the API's pool timeout: a success means served within it
IDLE_CONNECTIONS = 10
OUTAGE_S = 8.0  # long enough for the library's default backoff to reach 8 s
OUTAGE_CALL_TIMEOUT_S = 0.5  # calls during the outage, like the API's health check
OUTAGE_CALL_STEP_S = 0.25
WAITER_TIMEOUT_S = 15.0  # the lone caller's pool timeout: far longer than the outage
SHORT_OUTAGE_S = 4.0  # longer than the pool's reconnect timeout


@pytest.fixture(scope="module")
def own_pg() -> Iterator[LocalPostgres]:
    with own_postgres("tms-pg-restart-") as server:
        yield server


def test_idle_connections_dead_after_a_quick_restart_are_never_handed_out(
        own_pg: LocalPostgres) -> None:
    db = Db(own_pg.dsn(), max_size=IDLE_CONNECTIONS, timeout_s=CALL_TIMEOUT_S)
    try:
        held = [db._pool.getconn() for _ in range(IDLE_CONNECTIONS)]  # noqa: SLF001
        for conn in held:
            db._pool.putconn(conn)  # noqa: SLF001 - now IDLE_CONNECTIONS idle connections
        own_pg.stop("fast")
        own_pg.start()
        for _ in range(IDLE_CONNECTIONS + 1):
            db.check(CALL_TIMEOUT_S)  # raises on a dead connection or a pool timeout
    finally:
        db.close()


def test_first_statement_after_a_long_outage_succeeds(own_pg: LocalPostgres) -> None:
    db = Db(own_pg.dsn(), timeout_s=CALL_TIMEOUT_S)
    try:
        db.check(CALL_TIMEOUT_S)
        own_pg.stop("immediate")
        failed = 0
        end = time.monotonic() + OUTAGE_S
        while time.monotonic() < end:  # requests keep coming while the server is down
            try:
                db.check(OUTAGE_CALL_TIMEOUT_S)
            except Exception:
                failed += 1
            time.sleep(OUTAGE_CALL_STEP_S)
        assert failed > 0
        own_pg.start()  # returns once a connection succeeded
        db.check(CALL_TIMEOUT_S)
    finally:
        db.close()


def test_a_caller_waiting_through_the_outage_gets_a_connection(own_pg: LocalPostgres) -> None:
    db = Db(own_pg.dsn(), timeout_s=WAITER_TIMEOUT_S)
    outcome: list[str] = []

    def wait_for_the_database() -> None:
        try:
            db.check()  # waits up to WAITER_TIMEOUT_S for a connection
            outcome.append("ok")
        except Exception as e:
            outcome.append(f"{type(e).__name__}: {e}")

    try:
        db.check()
        own_pg.stop("immediate")
        waiter = threading.Thread(target=wait_for_the_database, daemon=True)
        waiter.start()  # the only caller: nothing else asks the pool to connect
        time.sleep(SHORT_OUTAGE_S)
        own_pg.start()
        waiter.join(WAITER_TIMEOUT_S + CALL_TIMEOUT_S)
        assert outcome == ["ok"]
    finally:
        db.close()
