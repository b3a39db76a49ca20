"""CommitNotifier against a real API: batches, TMS down (bounded notify, counted drops, no
raise), recovery after the server comes back, bad entries that do not poison a batch."""

from __future__ import annotations

import logging
import time

import pytest

from tests.client.support import commit_rows, counted_channel, iceberg_table, start_again
from tests.integration.conftest import Api
from tms_client import CommitNotifier, RetryPolicy, TmsClient
from tms_client.notifier import MAX_ENQUEUE_TIMEOUT_S

pytestmark = pytest.mark.integration

FLUSH_TIMEOUT_S = 15.0
NOTIFY_SLACK_S = 0.05  # scheduling noise on a busy 2-core machine
PATIENT = RetryPolicy(max_attempts=100, max_backoff_s=0.2, total_timeout_s=10.0)
FAST_GIVE_UP = RetryPolicy(max_attempts=3, initial_backoff_s=0.05, max_backoff_s=0.1,
                           total_timeout_s=0.5)


def test_commits_go_out_in_batches(api: Api, db_dsn: str) -> None:
    channel, counter = counted_channel(api.address)
    client = TmsClient(api.address, channel=channel)
    client.register_table("ns.events", iceberg_table(api))
    with CommitNotifier(client, batch_size=400) as notifier:
        for i in range(1200):
            assert notifier.notify("ns.events", str(i + 1), files_added=1, operation="append")
        assert notifier.flush(FLUSH_TIMEOUT_S)
        stats = notifier.stats()
    assert stats.enqueued == stats.sent == 1200 and stats.dropped == 0
    assert 3 <= counter.calls["NotifyCommits"] < 1200
    assert counter.calls["NotifyCommit"] == 0
    assert len(commit_rows(db_dsn, "ns.events")) == 1200
    assert client.get_table("ns.events").last_commit_id == "1200"


def test_tms_down_then_back(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    """While TMS is down notify() stays fast and quiet and drops are counted; once TMS is
    back, later commits arrive."""
    client = TmsClient(api.address, retry=FAST_GIVE_UP)
    client.register_table("ns.events", iceberg_table(api))
    api.server.stop(0)
    notifier = CommitNotifier(client, queue_size=20, batch_size=5, retry=FAST_GIVE_UP)
    slowest_s = 0.0
    with caplog.at_level(logging.WARNING, logger="tms_client.notifier"):
        for i in range(300):
            start = time.monotonic()
            notifier.notify("ns.events", str(100 + i))  # must not raise
            slowest_s = max(slowest_s, time.monotonic() - start)
        assert notifier.flush(FLUSH_TIMEOUT_S)
    stats = notifier.stats()
    assert slowest_s <= MAX_ENQUEUE_TIMEOUT_S + NOTIFY_SLACK_S
    assert stats.sent == 0 and stats.dropped_queue_full > 0 and stats.dropped_unavailable > 0
    assert stats.dropped_queue_full + stats.dropped_unavailable == 300
    drop_lines = [r for r in caplog.records if "dropped" in r.getMessage()]
    assert 1 <= len(drop_lines) <= 2  # rate-limited: not one line per drop

    server = start_again(api)
    try:
        # once the notifier's channel has reconnected (a read waits for it), commits flow
        client.get_table("ns.events", retry=PATIENT)
        for i in range(10):
            notifier.notify("ns.events", str(200 + i))
        assert notifier.flush(FLUSH_TIMEOUT_S)
        assert notifier.stats().sent == 10
        table = client.get_table("ns.events")
        assert table.commit_count == 10 and table.last_commit_id == "209"
        assert notifier.close(FLUSH_TIMEOUT_S)
    finally:
        server.stop(0)


def test_bad_entries_do_not_poison_a_batch(api: Api, db_dsn: str) -> None:
    client = TmsClient(api.address)
    client.register_table("ns.events", iceberg_table(api))
    notifier = CommitNotifier(client, linger_s=0.5)
    assert not notifier.notify("Not A Table", "1")
    assert not notifier.notify("ns.events", "")
    assert not notifier.notify("ns.events", "x", files_added=-1)
    assert notifier.notify("ns.events", "11")
    assert notifier.notify("ns.unknown", "lost")  # valid, but no such table: refused by TMS
    assert notifier.notify("ns.events", "12")
    assert notifier.flush(FLUSH_TIMEOUT_S)
    stats = notifier.stats()
    assert (stats.dropped_invalid, stats.rejected, stats.sent) == (3, 1, 2)
    assert [r[0] for r in commit_rows(db_dsn, "ns.events")] == ["11", "12"]
    assert notifier.close(FLUSH_TIMEOUT_S)
    assert not notifier.notify("ns.events", "after-close")
    assert notifier.stats().dropped_closed == 1


def test_close_gives_up_within_its_timeout_when_tms_stays_down(api: Api) -> None:
    client = TmsClient(api.address)
    api.server.stop(0)
    patient = RetryPolicy(max_attempts=1000, initial_backoff_s=0.05, max_backoff_s=0.2,
                          total_timeout_s=60.0)
    notifier = CommitNotifier(client, retry=patient)
    for i in range(50):
        notifier.notify("ns.events", str(i))
    start = time.monotonic()
    assert not notifier.close(1.0)
    assert time.monotonic() - start < 3.0
    stats = notifier.stats()
    assert stats.sent == 0 and stats.dropped_closed == 50
