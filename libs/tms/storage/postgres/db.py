"""The connection pool every role of :class:`PostgresStore` shares, and how a named query is
run. Thread-safe: every call borrows a pooled connection for one statement.

Recovery after a database outage (API, scheduler and executor all use this pool) rests on two
settings of psycopg_pool itself:

* ``reconnect_timeout`` and ``reconnect_failed``: the pool retries a failed connection attempt
  with exponential backoff (1 s, 2 s, 4 s, ...) until ``reconnect_timeout``, then gives up and
  calls ``reconnect_failed``. With the library's default (5 minutes) the backoff had grown to
  8-16 s by the end of a 20 s outage, so the service stayed down that long after PostgreSQL was
  back. Here an attempt chain gives up after ``POOL_RECONNECT_TIMEOUT_S`` and the callback
  starts a fresh one at once (``ConnectionPool.check``, which grows the pool when it has no
  connection): in effect a backoff capped at about a second, so the pool connects within about
  that long of PostgreSQL accepting connections. Without the restart a caller already waiting
  for a connection (the scheduler's single thread, say) would wait out its whole timeout, since
  only a new request starts a new attempt.
* ``check``: a connection is checked before it is handed out, so the connections that were
  idle in the pool when PostgreSQL restarted are never given to a caller. The pool's own check
  (``ConnectionPool.check_connection``, an empty query) costs a round trip on every borrow,
  which would double the round trips of every store call; so the socket is polled first
  (no round trip): a server that restarted or ended the session has closed the socket or sent
  a message, and only then is the full check run. One failed check means the server went
  away, so every idle connection is drained at once (``ConnectionPool.drain``) instead of being
  found dead one by one, each after a longer wait of the pool's own check backoff.
"""

from __future__ import annotations

import select
from typing import Any

import psycopg
import structlog
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import ConnectionPool

from tms.storage.queries import q

POOL_MIN_SIZE = 1
POOL_MAX_SIZE = 10
POOL_TIMEOUT_S = 10.0
# a failing reconnect attempt chain gives up after this and a new one starts at once, so
# reconnecting never waits on a grown backoff (see the module docstring)
POOL_RECONNECT_TIMEOUT_S = 1.0
# libpq keepalives (seconds; tcp_user_timeout in ms) so a connection to a vanished server fails
# instead of hanging
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5,
              "keepalives_count": 3, "tcp_user_timeout": 30_000}

Row = dict[str, Any]

log = structlog.get_logger("tms.storage")


class Db:
    def __init__(self, dsn: str, *, min_size: int = POOL_MIN_SIZE,
                 max_size: int = POOL_MAX_SIZE, timeout_s: float = POOL_TIMEOUT_S,
                 reconnect_timeout_s: float = POOL_RECONNECT_TIMEOUT_S) -> None:
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            dsn, min_size=min_size, max_size=max_size, timeout=timeout_s, open=True,
            reconnect_timeout=reconnect_timeout_s, reconnect_failed=self._reconnect_again,
            check=self._check_connection,
            # autocommit: a store call is one statement, so one round trip, no BEGIN/COMMIT
            kwargs={"row_factory": dict_row, "autocommit": True, **KEEPALIVES},
        )

    def _check_connection(self, conn: psycopg.Connection[Any]) -> None:
        """The pool's check before handing a connection out. On failure the server has gone
        away (restart, failover): every idle connection is as dead as this one, so all are
        replaced now rather than each costing the next caller a failed check and a wait."""
        if not conn.closed and _quiet(conn):
            return  # the server sent nothing since the last use: alive, as far as can be known
        try:
            ConnectionPool.check_connection(conn)
        except Exception:
            log.warning("stale database connection; replacing the pool's idle connections")
            self._pool.drain()
            raise

    @staticmethod
    def _reconnect_again(pool: ConnectionPool[Any]) -> None:
        """A reconnect attempt chain gave up: start another now (the pool grows when it has no
        connection), so attempts go on about once a second until the database is back."""
        if not pool.closed:
            pool.check()

    def close(self) -> None:
        self._pool.close()

    def check(self, timeout_s: float | None = None) -> None:
        """Raise when the database cannot be reached within ``timeout_s`` (default: the
        pool's timeout); used by health checks."""
        with self._pool.connection(timeout=timeout_s) as conn:
            conn.execute(q("meta_ping"))

    def _one(self, name: str, params: Row) -> Row | None:
        with self._pool.connection() as conn:
            return conn.execute(q(name), params).fetchone()  # type: ignore[return-value]

    def _all(self, name: str, params: Row) -> list[Row]:
        with self._pool.connection() as conn:
            return conn.execute(q(name), params).fetchall()  # type: ignore[return-value]

    def _tuples(self, name: str, params: Row) -> list[tuple[Any, ...]]:
        """As ``_all`` with rows as tuples: a dict per row costs the hot path (the intake)."""
        with self._pool.connection() as conn:
            return conn.cursor(row_factory=tuple_row).execute(q(name), params).fetchall()  # type: ignore[arg-type]

    def _write(self, name: str, params: Row) -> None:
        with self._pool.connection() as conn:
            conn.execute(q(name), params)


def _quiet(conn: psycopg.Connection[Any]) -> bool:
    """True when nothing is waiting to be read on an idle connection's socket. Between
    statements the server sends nothing unprompted except when it ends the session (restart,
    shutdown, terminated backend: an error message, then the socket closes), so anything
    readable, a hang-up or an error means the full check must run."""
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN | select.POLLPRI)
    return not poller.poll(0)
