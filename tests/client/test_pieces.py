"""The client's pure parts without servers: retry decisions, backoff bounds, event mapping,
batching, drop-log rate limiting."""

from __future__ import annotations

import logging
import subprocess
import sys
from datetime import UTC, datetime

import grpc
import pytest

from tms_client import Commit, EventError, EventMapping, RetryPolicy
from tms_client.commits import check_commit, chunks, split_refused
from tms_client.droplog import DropLog
from tms_client.errors import FieldViolation
from tms_client.retry import RetryState, Safety

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE
IMPORT_PROBE_TIMEOUT_S = 60.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_backoff_is_jittered_and_capped() -> None:
    policy = RetryPolicy(initial_backoff_s=0.1, max_backoff_s=1.0, backoff_multiplier=2.0)
    assert policy.backoff_s(1, rand=lambda: 1.0) == pytest.approx(0.1)
    assert policy.backoff_s(3, rand=lambda: 1.0) == pytest.approx(0.4)
    assert policy.backoff_s(30, rand=lambda: 1.0) == 1.0
    assert policy.backoff_s(30, rand=lambda: 0.0) == 0.0
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


def test_retry_decisions() -> None:
    clock = FakeClock()
    state = RetryState(RetryPolicy(max_attempts=3, total_timeout_s=5.0), 10.0, Safety.SAFE,
                       clock)
    assert state.attempt_timeout_s() == 5.0  # the per-call deadline, cut to the budget
    assert state.next_wait_s(grpc.StatusCode.INVALID_ARGUMENT) is None
    assert state.next_wait_s(grpc.StatusCode.NOT_FOUND) is None
    assert state.next_wait_s(grpc.StatusCode.PERMISSION_DENIED) is None
    assert state.next_wait_s(UNAVAILABLE) is not None
    assert state.next_wait_s(grpc.StatusCode.DEADLINE_EXCEEDED) is not None
    state.attempt_timeout_s()
    state.attempt_timeout_s()
    assert state.next_wait_s(UNAVAILABLE) is None  # attempts spent
    unsafe = RetryState(RetryPolicy(), 10.0, Safety.UNSAFE, clock)
    unsafe.attempt_timeout_s()
    assert unsafe.next_wait_s(UNAVAILABLE) is None
    late = RetryState(RetryPolicy(total_timeout_s=1.0), 10.0, Safety.SAFE, clock)
    late.attempt_timeout_s()
    clock.now += 1.0
    assert late.next_wait_s(UNAVAILABLE) is None  # total budget spent


def test_commit_checks_batches_and_refusals() -> None:
    assert check_commit(Commit("sales.orders", "1")) is None
    assert check_commit(Commit("tables/sales.orders", "1")) is None
    assert "table_id" in (check_commit(Commit("Sales", "1")) or "")
    assert "commit_id" in (check_commit(Commit("t", "")) or "")
    assert "commit_id" in (check_commit(Commit("t", "a\nb")) or "")
    assert "negative" in (check_commit(Commit("t", "1", bytes_added=-1)) or "")
    commits = [Commit("t", str(i)) for i in range(2001)]
    assert [len(c) for c in chunks(commits)] == [1000, 1000, 1]
    kept, refused = split_refused(commits[:3], [FieldViolation("commits[1].commit_id", "x")])
    assert [c.commit_id for c in kept] == ["0", "2"] and refused == [commits[1]]
    naive = Commit("t", "1", datetime(2026, 1, 1)).to_proto()
    assert naive.commit_time.ToDatetime(tzinfo=UTC) == datetime(2026, 1, 1, tzinfo=UTC)


def test_mapping_shapes() -> None:
    mapping = EventMapping()
    plain = mapping.map({"namespace": ["Sales", "EU"], "name": "Orders", "snapshot_id": 5,
                         "commit_time": 1_700_000_000_000, "bytes_added": "10"})
    assert plain.commits == [Commit("sales.eu.orders", "5",
                                    datetime.fromtimestamp(1_700_000_000, UTC), None, 10, "")]
    unit_sep = mapping.map({"namespace": "a\x1fb", "name": "t", "commit_id": "c"})
    assert unit_sep.commits[0].table_id == "a.b.t"
    explicit = mapping.map({"table_id": "x.y", "commit_id": "c", "operation": "append"})
    assert explicit.commits[0].table_id == "x.y"
    other = mapping.map({"specversion": "1.0", "id": "1", "source": "s", "type": "dropTable"})
    assert other.commits == [] and other.ignored
    keep = EventMapping(("commit",), "{warehouse}-{name}", lowercase=False)
    assert keep.map({"name": "t", "warehouse": "w", "commit_id": "1"}).commits[0].table_id \
        == "w-t"
    with pytest.raises(EventError, match="table_id must match"):  # case kept: not an id
        keep.map({"name": "T", "warehouse": "w", "commit_id": "1"})
    with pytest.raises(ValueError):
        EventMapping(table_id_template="{catalog}.{name}")
    with pytest.raises(EventError) as info:
        mapping.map({"name": "t", "commit_id": "1"})  # no namespace for the template
    assert "namespace" in str(info.value)
    with pytest.raises(EventError) as info:
        mapping.map({"namespace": "n", "name": "t", "commit_id": "1", "commit_time": "soon"})
    assert info.value.field == "commit_time"


def test_drop_log_is_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    drops = DropLog(logging.getLogger("test.drops"), interval_s=10.0, clock=clock)
    with caplog.at_level(logging.WARNING, logger="test.drops"):
        for _ in range(1000):
            drops.record("queue_full", 1, "full")
        clock.now += 11.0
        drops.record("unavailable", 5, "down")
        drops.record("unavailable", 5, "down")
        drops.flush()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    assert "1 queue_full" in lines[0]
    assert "999 queue_full" in lines[1] and "5 unavailable" in lines[1]
    assert "5 unavailable" in lines[2]


def test_the_client_imports_none_of_the_services_dependencies() -> None:
    """Writers install grpcio and protobuf, not PostgreSQL, Spark or ZooKeeper libraries."""
    probe = (
        "import sys, tms_client, tms_client.hook, tms_client.cloudevents_receiver\n"
        "heavy = ('psycopg', 'psycopg_pool', 'pyspark', 'kazoo', 'structlog', 'pyiceberg',"
        " 'pyarrow', 'sqlalchemy')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy"
        " or (m.startswith('tms.') and not m.startswith('tms.v1'))))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=IMPORT_PROBE_TIMEOUT_S)
    assert out.stdout.strip() == "[]"
