"""``tms status``, ``tms operations summary`` and the health columns and sort of ``tms tables
list``, run in-process against a real API server on a real PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest

from tests.integration.test_cli import (  # noqa: F401 (fixtures)
    Cli,
    _clean_env,
    _quiet_server_logs,
    register,
    row,
)
from tms.domain import Decision
from tms.domain.fleet import ProcessBeat
from tms.health.figures import inspection
from tms.storage.roles import EnqueueParams

pytestmark = pytest.mark.integration


@pytest.fixture
def cli(api, capsys) -> Cli:
    return Cli(capsys, api.address, catalog=api.catalog)


def _inspect(api, table_id: str, small: int) -> int:
    view = api.store.table_get(table_id)
    metrics = {"data_files": 100, "small_files": small, "total_bytes": 100 << 20}
    ins = inspection(view.table, metrics, [], {}, datetime.now(UTC))
    api.store.health_record_batch([ins], 300.0, 86_400.0)
    return ins.health.score


def test_tables_list_shows_and_sorts_by_health(cli: Cli, api) -> None:
    for t in ("a", "b", "c"):
        register(cli, t)
    scores = {"a": _inspect(api, "a", 50), "b": _inspect(api, "b", 5)}
    table = api.store.table_get("a").table
    api.store.decision_finish_batch("s1", [(table.pk, Decision("compaction", True,
                                                               "50 small files"), None)], [])
    op = api.store.operation_enqueue(EnqueueParams(table, "compaction", "policy", "r", 3, 0))
    out = cli.ok("tables", "list", "--sort", "health")
    lines = [line.split()[0] for line in out.splitlines()[1:]]
    assert lines == ["a", "b", "c"]  # least healthy first, never inspected last
    header = out.splitlines()[0].split()
    assert {"HEALTH", "DECISION"} <= set(header)
    a = row(out, "a")
    assert a[3] == str(scores["a"]) and f"{op} QUEUED" in a
    assert a[-1] == "compaction: 50 small files"
    assert row(out, "c")[3] == "-"
    out = cli.ok("tables", "list", "--sort=-health")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["b", "a", "c"]
    doc = cli.json("tables", "list", "--max-health", str(scores["a"]))
    assert [t["name"] for t in doc["tables"]] == ["tables/a"]
    assert doc["tables"][0]["health_score"] == scores["a"]
    code, _, err = cli("tables", "list", "--max-health", "500")
    assert code == 2 and "max_health" in err


def test_status_and_operations_summary(cli: Cli, api, db_dsn: str) -> None:
    register(cli, "a")
    table = api.store.table_get("a").table
    now = datetime.now(UTC)
    api.store.heartbeat_record(ProcessBeat("sched-x", "scheduler", "h1", now, 10.0, True,
                                           (0, 1)))
    api.store.heartbeat_record(ProcessBeat("exec-x", "executor", "h2", now, 10.0,
                                           running=("tables/a/operations/9",)))
    out = cli.ok("status")
    assert "schedulers alive:  1 (leader: sched-x)" in out
    assert "executors alive:   1" in out and "tables:            ACTIVE=1" in out
    assert row(out, "exec-x")[3] == "yes" and "tables/a/operations/9" in row(out, "exec-x")
    assert cli.json("status")["processes"][0]["id"] == "sched-x"

    op = api.store.operation_enqueue(EnqueueParams(table, "compaction", "policy", "r", 3, 0,
                                                   metrics={"data_files": 40}))
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE tms_operations SET state = 'SUCCEEDED', finished_at = now(), started_at ="
            " now(), result = '{\"outcome\": {\"data_files_removed\": 38, \"data_files_added\":"
            " 2, \"data_bytes_rewritten\": 3145728}}' WHERE id = %s", (op,))
    out = cli.ok("operations", "summary", "--days", "2")
    today = row(out, now.strftime("%Y-%m-%d"))
    assert today[1:] == ["1", "0", "0", "0", "40", "4", "3.0 MiB"]
    assert row(out, "total")[1] == "1"
    assert len(cli.json("operations", "summary", "--days", "3")["days"]) == 3
    code, _, err = cli("operations", "summary", "--days", "0")
    assert code == 2 and "--days" in err
