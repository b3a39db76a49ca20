"""AsyncTmsClient against a real API server: the basics, retries through a restart, refusals."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest

from tests.client.support import RESTART_DELAY_S, AioCallCounter, iceberg_table, restarted_later
from tests.integration.conftest import Api
from tms_client import (
    AsyncTmsClient,
    Commit,
    InvalidArgumentError,
    NotFoundError,
    RetryPolicy,
    UnavailableError,
)
from tms_client.channel import CHANNEL_OPTIONS

pytestmark = pytest.mark.integration

PATIENT = RetryPolicy(max_attempts=100, initial_backoff_s=0.05, max_backoff_s=0.3,
                      total_timeout_s=20.0)
SHORT = RetryPolicy(max_attempts=4, initial_backoff_s=0.05, max_backoff_s=0.1,
                    total_timeout_s=2.0)


def counted_client(address: str, retry: RetryPolicy) -> tuple[AsyncTmsClient, AioCallCounter]:
    counter = AioCallCounter()
    channel = grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS,
                                        interceptors=[counter])
    return AsyncTmsClient(address, channel=channel, retry=retry), counter


def test_async_basics(api: Api) -> None:
    async def run() -> None:
        async with AsyncTmsClient(api.address) as client:
            await client.register_table("ns.events", iceberg_table(api), request_id="r")
            assert (await client.get_table("ns.events")).name == "tables/ns.events"
            assert [t.name async for t in client.iter_tables()] == ["tables/ns.events"]
            assert not (await client.notify_commit("ns.events", "1")).duplicate
            results = await client.notify_commits(
                [Commit("ns.events", str(i)) for i in range(1, 1201)])
            assert [r.duplicate for r in results[:2]] == [True, False]
            assert (await client.get_table("ns.events")).commit_count == 1200
            assert (await client.explain_table("ns.events")).actions
            op = await client.trigger_operation("ns.events", "compaction")
            assert (await client.get_operation(op.name)).name == op.name
            listed = await client.list_operations("ns.events", action="compaction")
            assert [o.name for o in listed.operations] == [op.name]
            with pytest.raises(NotFoundError):
                await client.get_table("ns.nope")

    asyncio.run(run())


def test_async_retries_through_restart_but_not_refusals(api: Api) -> None:
    async def run() -> None:
        client, counter = counted_client(api.address, PATIENT)
        await client.register_table("ns.events", iceberg_table(api))
        start = time.monotonic()
        with restarted_later(api):
            assert not (await client.notify_commit("ns.events", "5000")).duplicate
            assert time.monotonic() - start >= RESTART_DELAY_S * 0.8
            sent = counter.calls["NotifyCommit"]
            assert sent > 1
            with pytest.raises(InvalidArgumentError) as info:
                await client.notify_commit("ns.events", "")
            assert counter.calls["NotifyCommit"] == sent + 1
            assert [v.field for v in info.value.violations] == ["commit_id"]
        await client.close()

    asyncio.run(run())


def test_async_refusal_is_sent_once_and_unkeyed_write_not_retried(api: Api) -> None:
    async def run() -> None:
        client, counter = counted_client(api.address, SHORT)
        with pytest.raises(InvalidArgumentError):
            await client.notify_commits([Commit("Bad Table", "1")])
        assert counter.calls["NotifyCommits"] == 1
        api.server.stop(0)
        with pytest.raises(UnavailableError):
            await client.register_table("ns.events", iceberg_table(api))
        assert counter.calls["RegisterTable"] == 1
        with pytest.raises(UnavailableError):
            await client.get_table("ns.events")
        assert counter.calls["GetTable"] > 1
        await client.close()

    asyncio.run(run())
