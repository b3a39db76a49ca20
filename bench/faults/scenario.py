"""Building blocks the fault tests share: tables of the "constant" format, flipping a table to
"needs maintenance", waiting for the scheduler, and timing a fault's recovery.

A "constant" table's file count is a table policy key (the plugin's own), so whether it needs
compaction is known in advance: tables with 20 files must end with exactly one operation each
(no executor serves their queue), tables with 3 files with none. That turns "no decision lost,
none doubled" into an exact expectation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import TypeAlias

import psycopg
from google.protobuf.field_mask_pb2 import FieldMask

from bench.common.procs import constant_catalog
from tms.v1 import tms_pb2, tms_pb2_grpc

CONSTANT_TABLES = 60  # "constant" plugin tables the writers spread commits over
NEEDY_EVERY = 6  # every 6th constant table has 20 files and needs compaction

NEEDY_FILES = "20"  # >= the plugin's threshold of 10: compaction is due
TIDY_FILES = "3"
CONSTANT_QUEUE = "constant"  # no executor serves it: operations stay QUEUED, countable
RPC_TIMEOUT_S = 10.0
FILES_KEY = "constant.files"  # the test plugin's file count
POLL_STEP_S = 0.1

Stub: TypeAlias = tms_pb2_grpc.TableManagementServiceStub


def register_constant(stub: Stub, database_url: str, table_id: str, files: str) -> None:
    """A constant table with ``files`` files, in the constant catalog (made when missing in
    the TMS database at ``database_url``)."""
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=tms_pb2.Table(
        format="constant", catalog=constant_catalog(database_url), table_name=table_id,
        queue=CONSTANT_QUEUE, policy={FILES_KEY: files})), timeout=RPC_TIMEOUT_S)


def constant_tables(stub: Stub, database_url: str, prefix: str, count: int = CONSTANT_TABLES,
                    needy_every: int = NEEDY_EVERY) -> tuple[list[str], set[str]]:
    """Register ``count`` constant tables; every ``needy_every``-th needs compaction.
    Returns all names and the needy ones."""
    names = [f"{prefix}{i:04d}" for i in range(count)]
    needy = {n for i, n in enumerate(names) if i % needy_every == 0}
    constant_catalog(database_url)
    for n in names:
        register_constant(stub, database_url, n, NEEDY_FILES if n in needy else TIDY_FILES)
    return names, needy


def make_needy(stub: Stub, table_id: str) -> None:
    """The table now has 20 files: its next decision queues a compaction."""
    stub.UpdateTable(tms_pb2.UpdateTableRequest(
        table=tms_pb2.Table(name=f"tables/{table_id}", policy={FILES_KEY: NEEDY_FILES}),
        update_mask=FieldMask(paths=["policy"])), timeout=RPC_TIMEOUT_S)


def all_decided(dsn: str) -> bool:
    """No table waits with a "new commits" mark, and every table has been decided once."""
    with psycopg.connect(dsn) as conn:
        marks = conn.execute("SELECT count(*) FROM tms_dirty_tables").fetchone()
        undecided = conn.execute(
            "SELECT count(*) FROM tms_tables t WHERE NOT EXISTS "
            "(SELECT 1 FROM tms_decisions d WHERE d.table_pk = t.id)").fetchone()
    return marks == (0,) and undecided == (0,)


def operations_created_between(dsn: str, start: datetime, end: datetime) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM tms_operations WHERE created_at > %s "
                           "AND created_at < %s", (start, end)).fetchone()
    return int(row[0]) if row else 0


def decisions_after(dsn: str, after: datetime) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM tms_decisions WHERE decided_at > %s",
                           (after,)).fetchone()
    return int(row[0]) if row else 0


def has_operation(dsn: str, table_id: str) -> bool:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT 1 FROM tms_operations o JOIN tms_tables t "
                           "ON t.id = o.table_pk WHERE t.table_id = %s", (table_id,)).fetchone()
    return row is not None


def seconds_until(probe: Callable[[], object], timeout_s: float,
                  step_s: float = POLL_STEP_S) -> float | None:
    """Seconds until ``probe`` is truthy, or None after ``timeout_s`` (bounded, never fails:
    the caller records the outcome against its bound)."""
    t0 = time.monotonic()
    while True:
        if probe():
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout_s:
            return None
        time.sleep(step_s)
