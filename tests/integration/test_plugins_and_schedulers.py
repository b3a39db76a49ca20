"""A third-party format plugin found through its entry point, and three real schedulers using
it while one of them loses its ZooKeeper session mid-run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest

from tests.helpers import constant_catalog, stub_for, wait_for
from tms.v1 import tms_pb2

pytestmark = pytest.mark.integration
PLUGINS = Path(__file__).resolve().parent.parent / "plugins"
TABLES = 100
NOTIFICATIONS = 1000
SESSION_TIMEOUT_S = 4.0


@pytest.fixture
def plugin_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the test plugin installed for this test and every process it starts."""
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", f"{PLUGINS}{os.pathsep}{old}" if old else str(PLUGINS))


def test_third_party_plugin_is_found_without_touching_tms(plugin_path: None) -> None:
    out = subprocess.run(
        [sys.executable, "-c",
         "from tms.formats.registry import load_formats; print(sorted(load_formats()))"],
        capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['constant', 'hudi', 'iceberg']"


def test_three_schedulers_one_session_expired(make_stack, plugin_path: None) -> None:
    stack = make_stack(scheduler_args=["--zk-session-timeout-s", str(SESSION_TIMEOUT_S),
                                       "--poll-interval-s", "0.2", "--shard-settle-s", "0.5"])
    stack.start_api()
    schedulers = [stack.start_scheduler(i) for i in range(3)]
    stub = stub_for(stack)
    catalog = constant_catalog(stack.database_url)
    needs = {f"t{i:03d}" for i in range(0, TABLES, 2)}  # every other table: 20 files
    for i in range(TABLES):
        name = f"t{i:03d}"
        stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=name, table=tms_pb2.Table(
            format="constant", catalog=catalog, table_name=name,
            policy={"constant.files": "20" if name in needs else "3"})), timeout=10)

    def batch(k: int) -> None:
        commits = [tms_pb2.NotifyCommitRequest(table=f"tables/t{(k * 10 + j) % TABLES:03d}",
                                               commit_id=str(k * 100 + j)) for j in range(10)]
        res = stub.NotifyCommits(tms_pb2.NotifyCommitsRequest(commits=commits), timeout=30)
        assert not any(r.error.code for r in res.results)

    victim = schedulers[1]
    assert victim.proc is not None
    wait_for(lambda: all('"scheduler started"' in s.log_path.read_text() for s in schedulers),
             "all three schedulers to hold a ZooKeeper session")
    with ThreadPoolExecutor(4) as pool:
        first_half = list(pool.map(batch, range(NOTIFICATIONS // 20)))
        # freeze one scheduler past its session timeout: ZooKeeper expires its session and
        # its shards, the others take them over; it wakes up to a lost session
        os.kill(victim.proc.pid, signal.SIGSTOP)
        time.sleep(SESSION_TIMEOUT_S * 2)  # the fault itself: a stopped process, for a while
        second_half = list(pool.map(batch, range(NOTIFICATIONS // 20, NOTIFICATIONS // 10)))
        os.kill(victim.proc.pid, signal.SIGCONT)
    assert len(first_half) + len(second_half) == NOTIFICATIONS // 10

    def settled() -> list[tuple[str, str, int]] | None:
        with psycopg.connect(stack.database_url) as conn:
            marks = conn.execute("SELECT count(*) FROM tms_dirty_tables").fetchone()
            undecided = conn.execute(
                "SELECT count(*) FROM tms_tables t WHERE NOT EXISTS "
                "(SELECT 1 FROM tms_decisions d WHERE d.table_pk = t.id)").fetchone()
            if marks != (0,) or undecided != (0,):
                return None
            return conn.execute(
                "SELECT t.table_id, o.state::text, count(*) FROM tms_operations o "
                "JOIN tms_tables t ON t.id = o.table_pk GROUP BY 1, 2").fetchall()

    ops = wait_for(settled, "every notification to be decided", timeout_s=120)
    assert all(n == 1 for _, _, n in ops), "a table got two operations"
    assert {t for t, _, _ in ops} == needs, "exactly the tables that need maintenance got it"
    with psycopg.connect(stack.database_url) as conn:
        events = conn.execute("SELECT count(*) FROM tms_commit_events").fetchone()
    assert events == (NOTIFICATIONS,)
    assert all(s.alive for s in schedulers)
    wait_for(lambda: '"state": "LOST"' in victim.log_path.read_text(),
             "the frozen scheduler to learn it lost its session", timeout_s=60)
    assert all(s.alive for s in schedulers)
