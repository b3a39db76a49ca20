"""The connection pool every role of :class:`PostgresStore` shares, and how a named query is
run. Thread-safe: every call borrows a pooled connection for one statement."""

from __future__ import annotations

from typing import Any

from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from tms.storage.queries import q

POOL_MIN_SIZE = 1
POOL_MAX_SIZE = 10
POOL_TIMEOUT_S = 10.0
# libpq keepalives (seconds; tcp_user_timeout in ms) so a connection to a vanished server fails
# instead of hanging
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5,
              "keepalives_count": 3, "tcp_user_timeout": 30_000}

Row = dict[str, Any]


class Db:
    def __init__(self, dsn: str, *, min_size: int = POOL_MIN_SIZE,
                 max_size: int = POOL_MAX_SIZE, timeout_s: float = POOL_TIMEOUT_S) -> None:
        self._pool = ConnectionPool(
            dsn, min_size=min_size, max_size=max_size, timeout=timeout_s, open=True,
            # autocommit: a store call is one statement, so one round trip, no BEGIN/COMMIT
            kwargs={"row_factory": dict_row, "autocommit": True, **KEEPALIVES},
        )

    def close(self) -> None:
        self._pool.close()

    def check(self) -> None:
        """Raise when the database cannot be reached (used by health checks)."""
        with self._pool.connection() as conn:
            conn.execute(q("meta_ping"))

    def _one(self, name: str, params: Row) -> Row | None:
        with self._pool.connection() as conn:
            return conn.execute(q(name), params).fetchone()  # type: ignore[return-value]

    def _all(self, name: str, params: Row) -> list[Row]:
        with self._pool.connection() as conn:
            return conn.execute(q(name), params).fetchall()  # type: ignore[return-value]

    def _write(self, name: str, params: Row) -> None:
        with self._pool.connection() as conn:
            conn.execute(q(name), params)
