"""A job that never ends (a table's own retry settings, a catalog that stopped answering, a
hostile table) must not hold an executor for ever: past the executor's attempt timeout the
real spark-submit's process group is stopped and the operation ends FAILED, not retried.

Real parts: the TMS schema on the test PostgreSQL, the executor loop, the production
spark-submit engine running a PySpark application that sleeps far past the timeout."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from tests.helpers import wait_for
from tests.security.job_harness import Runner
from tms.domain import JobSpec, OperationState
from tms.local.postgres import LocalPostgres
from tms.storage.postgres import PostgresStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TIMEOUT_S = 20.0  # long enough for spark-submit's JVM to start the application
# the driver: writes its pid where its spec says (the engine passes no test environment on)
SLEEPER = """
import base64, json, os, sys, time
spec = json.loads(base64.b64decode(sys.argv[sys.argv.index("--spec-b64") + 1]))
with open(spec["pidfile"], "w") as f:
    f.write(str(os.getpid()))
time.sleep(3600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2] != "Z"


def test_a_job_past_the_attempt_timeout_is_stopped_and_not_retried(
        pg_server: LocalPostgres, tmp_path: Path) -> None:
    from tms.storage.migrate import migrate

    name = f"deadline_{uuid.uuid4().hex[:8]}"
    pg_server.create_database(name)
    dsn = pg_server.dsn(name)
    migrate(dsn)
    app = tmp_path / "sleeper.py"
    app.write_text(SLEEPER)
    pidfile = tmp_path / "driver.pid"
    store = PostgresStore(dsn)
    try:
        runner = Runner(store, tmp_path / "work", attempt_timeout_s=TIMEOUT_S)
        op = runner.run("sleepy", JobSpec("pyspark", str(app), {"pidfile": str(pidfile)}))
    finally:
        store.close()
    assert op.state is OperationState.FAILED, op
    error = op.outcome.error or ""
    assert error.startswith("not retryable: timed out"), error
    assert op.lease.attempt == 1  # three attempts allowed; no other was queued
    driver = int(pidfile.read_text())  # the job did start, and its driver is gone now
    wait_for(lambda: not _alive(driver), "the driver stopped")
