"""TmsClient against a real API server and PostgreSQL: every method, retries, errors, TLS."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.client.support import (
    RESTART_DELAY_S,
    commit_rows,
    counted_channel,
    iceberg_table,
    restarted_later,
)
from tests.integration.certs import make_pki
from tests.integration.conftest import Api
from tms.api.auth import Authenticator
from tms.api.server import TlsConfig
from tms.v1 import tms_pb2
from tms_client import (
    AlreadyExistsError,
    CancelledError,
    Commit,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    RetryPolicy,
    Safety,
    TlsOptions,
    TmsClient,
    UnauthenticatedError,
    UnavailableError,
)

pytestmark = pytest.mark.integration

PATIENT = RetryPolicy(max_attempts=100, initial_backoff_s=0.05, max_backoff_s=0.3,
                      total_timeout_s=20.0)
SHORT = RetryPolicy(max_attempts=5, initial_backoff_s=0.05, max_backoff_s=0.1,
                    total_timeout_s=2.0)


def test_every_method_round_trips(api: Api, db_dsn: str) -> None:
    channel, counter = counted_channel(api.address)
    with TmsClient(api.address, channel=channel) as client:
        first = client.register_table("ns.events", iceberg_table(api), request_id="reg-1")
        again = client.register_table("ns.events", iceberg_table(api), request_id="reg-1")
        assert first.name == again.name == "tables/ns.events"
        with pytest.raises(AlreadyExistsError):
            client.register_table("ns.events", iceberg_table(api))
        client.register_table("ns.other", iceberg_table(api, name="other"))
        assert client.get_table("tables/ns.events").format == "iceberg"
        assert [t.name for t in client.iter_tables(page_size=1)] == [
            "tables/ns.events", "tables/ns.other"]
        assert len(client.list_tables(page_size=1).tables) == 1

        assert not client.notify_commit("ns.events", "1").duplicate
        assert client.notify_commit("ns.events", "1").duplicate
        commits = [Commit("ns.events", str(10_000 + i), files_added=1, operation="append")
                   for i in range(2500)] + [Commit("ns.missing", "x")]
        results = client.notify_commits(commits)
        assert counter.calls["NotifyCommits"] == 3  # 2501 commits in calls of at most 1000
        assert all(r.ok and not r.duplicate for r in results[:-1])
        assert isinstance(results[-1].error, NotFoundError)
        table = client.get_table("ns.events")
        assert table.commit_count == 2501 and table.last_commit_id == "12499"
        assert len(commit_rows(db_dsn, "ns.events")) == 2501

        explained = client.explain_table("ns.events")
        assert explained.table == "tables/ns.events" and explained.actions
        op = client.trigger_operation("ns.events", "compaction", reason="test",
                                      request_id="trig-1")
        assert client.trigger_operation("ns.events", "compaction", reason="test",
                                        request_id="trig-1").name == op.name
        assert client.get_operation(op.name).action == "compaction"
        assert client.get_operation(op.name.rsplit("/", 1)[-1], table="ns.events").name == op.name
        assert [o.name for o in client.list_operations("ns.events").operations] == [op.name]
        assert [o.name for o in client.iter_operations()] == [op.name]


def test_operator_methods_and_raw_calls(api: Api) -> None:
    """The operator's calls the CLI is built on: field-mask updates, deregistration, queue
    limits, cancel / retry, a raw call by method name and a cancellable pending call."""
    with TmsClient(api.address) as client:
        client.register_table("ns.events", iceberg_table(api))
        policy = {"compaction.min-small-files": "9"}
        t = client.update_table("ns.events", owner="team-b", policy=policy)
        assert (t.owner, dict(t.policy), t.queue) == ("team-b", policy, "default")
        t = client.update_table("tables/ns.events", priority=5)
        assert t.owner == "team-b" and t.priority == 5
        with pytest.raises(ValueError):
            client.update_table("ns.events")
        assert client.pause_table("ns.events").state == tms_pb2.Table.PAUSED
        assert client.resume_table("ns.events").state == tms_pb2.Table.ACTIVE

        q = client.update_queue("batch", 2)
        assert (q.name, q.max_running) == ("queues/batch", 2)
        assert not client.update_queue("queues/batch", None).HasField("max_running")
        op = client.trigger_operation("ns.events", "compaction")
        assert [x.queued for x in client.list_queues() if x.name == "queues/default"] == [1]
        assert client.cancel_operation(op.name).state == tms_pb2.Operation.CANCELLED
        again = client.retry_operation(op.name.rsplit("/", 1)[-1], table="ns.events")
        assert again.retry_of == op.name

        raw = client.call("ListQueues", tms_pb2.ListQueuesRequest(), safety=Safety.SAFE)
        assert {x.name for x in raw.queues} >= {"queues/default"}
        pending = client.start_call("GetTable", tms_pb2.GetTableRequest(name="tables/ns.events"))
        assert pending.result().name == "tables/ns.events"
        with pytest.raises(NotFoundError):
            client.start_call("GetTable", tms_pb2.GetTableRequest(name="tables/no")).result()

        assert api.store.operation_claim("exec-1", 30) is not None  # the retry is RUNNING now
        with pytest.raises(FailedPreconditionError) as info:
            client.deregister_table("ns.events")
        assert info.value.reason == "OPERATION_RUNNING"
        client.deregister_table("ns.events", force=True)
        with pytest.raises(NotFoundError):
            client.get_table("ns.events")


def test_a_pending_call_can_be_cancelled() -> None:
    """Cancelling a call that has not been answered ends it at once as CancelledError (the
    server here never answers: it is a port that accepts TCP but speaks no HTTP/2)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        target = f"127.0.0.1:{silent.getsockname()[1]}"
        with TmsClient(target, deadline_s=600.0) as client:
            pending = client.start_call("ListQueues", tms_pb2.ListQueuesRequest())
            assert not pending.done()
            assert pending.cancel()
            with pytest.raises(CancelledError):
                pending.result()


def test_retries_through_a_server_restart(api: Api) -> None:
    """The server goes away and a new one comes up on the same port: the calls succeed."""
    channel, counter = counted_channel(api.address)
    client = TmsClient(api.address, channel=channel, retry=PATIENT)
    client.register_table("ns.events", iceberg_table(api))
    start = time.monotonic()
    with restarted_later(api):
        assert not client.notify_commit("ns.events", "777").duplicate
        assert client.get_table("ns.events").last_commit_id == "777"
        elapsed = time.monotonic() - start
    assert elapsed >= RESTART_DELAY_S * 0.8  # it really waited for the new server
    assert counter.calls["NotifyCommit"] > 1  # ... by retrying
    # Registration with a request id is retried too (the API replays it).
    with restarted_later(api):
        client.register_table("ns.keyed", iceberg_table(api, name="keyed"), request_id="k-1")
    assert counter.calls["RegisterTable"] > 2
    client.close()


def test_unkeyed_registration_is_never_retried(make_api: Callable[..., Api]) -> None:
    api = make_api()
    channel, counter = counted_channel(api.address)
    client = TmsClient(api.address, channel=channel, retry=SHORT)
    api.server.stop(0)
    with pytest.raises(UnavailableError):
        client.register_table("ns.events", iceberg_table(api))
    assert counter.calls["RegisterTable"] == 1
    with pytest.raises(UnavailableError):
        client.trigger_operation("ns.events", "compaction")
    assert counter.calls["TriggerOperation"] == 1
    start = time.monotonic()
    with pytest.raises(UnavailableError):  # keyed: retried, within the total budget
        client.register_table("ns.events", iceberg_table(api), request_id="r-1")
    assert 1 < counter.calls["RegisterTable"] - 1 <= SHORT.max_attempts
    assert time.monotonic() - start < SHORT.total_timeout_s + 1.0


def test_refusals_are_not_retried_and_name_the_field(api: Api) -> None:
    channel, counter = counted_channel(api.address)
    client = TmsClient(api.address, channel=channel, retry=PATIENT)
    with pytest.raises(InvalidArgumentError) as info:
        client.notify_commit("Not A Table", "1")
    assert counter.calls["NotifyCommit"] == 1
    assert [v.field for v in info.value.violations] == ["table"]
    assert info.value.reason == "INVALID_ARGUMENT"
    with pytest.raises(InvalidArgumentError) as info:
        client.notify_commits([Commit("ns.events", "3"), Commit("ns.events", "")])
    assert counter.calls["NotifyCommits"] == 1
    assert [v.field for v in info.value.violations] == ["commits[1].commit_id"]
    with pytest.raises(NotFoundError) as nf:
        client.get_table("ns.nope")
    assert counter.calls["GetTable"] == 1 and nf.value.metadata["resource"] == "tables/ns.nope"
    with pytest.raises(InvalidArgumentError) as info:
        client.register_table("ns.bad", iceberg_table(api, namespace="", name=""))
    assert counter.calls["RegisterTable"] == 1 and info.value.violations


def test_token_and_mutual_tls(make_api: Callable[..., Api], tmp_path: Path) -> None:
    ca, server, client_pair = make_pki(tmp_path)
    auth = Authenticator.from_config({"tokens": [
        {"name": "ingest", "token": "writer-secret", "roles": ["writer"]},
        {"name": "ops", "token": "admin-secret", "roles": ["admin"]}]})
    api = make_api(auth=auth, tls=TlsConfig(server.cert, server.key, ca.cert))
    tls = TlsOptions.from_files(ca.cert, client_pair.cert, client_pair.key)
    with TmsClient(api.address, token="admin-secret", tls=tls) as admin:
        admin.register_table("ns.events", iceberg_table(api))
    with TmsClient.from_tls_files(api.address, ca.cert, client_pair.cert, client_pair.key,
                                  token="writer-secret") as writer:
        assert not writer.notify_commit("ns.events", "1").duplicate
        assert writer.get_table("ns.events").name == "tables/ns.events"  # its own table
        with pytest.raises(PermissionDeniedError):
            writer.list_tables()
    with TmsClient(api.address, tls=tls, retry=SHORT) as anonymous:
        with pytest.raises(UnauthenticatedError):
            anonymous.notify_commit("ns.events", "2")
