"""Commit intake's fast path: it accepts only what the field-by-field checks accept, and a
request it refuses gets the checks' answer (INVALID_ARGUMENT naming every bad field).

The attacker's inputs go through a real gRPC server (the servicer registered guarded, as
tms-api does) with a fake intake store: control characters, huge strings, bytes that are
not a valid message, duplicate commit ids within a batch, another tenant's table.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from concurrent import futures
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from tms.api import commits
from tms.api import validate as v
from tms.api.auth import Authenticator
from tms.api.commit_ids import CommitIdChecks
from tms.api.errors import ApiError
from tms.api.interceptors import add_guarded
from tms.api.servicer import TableManagementServicer
from tms.domain import CommitEvent
from tms.formats.registry import load_formats
from tms.local.ports import free_port
from tms.observability import tracing
from tms.v1 import tms_pb2, tms_pb2_grpc

TOKENS = {"admin": "intake-admin-token", "tenant_a": "intake-tenant-a-token"}
AUTH = Authenticator.from_config({"tokens": [
    {"name": "admin", "token": TOKENS["admin"], "roles": ["admin"]},
    {"name": "a", "token": TOKENS["tenant_a"], "roles": ["writer"], "tables": ["a_*"]},
]})
KNOWN_TABLES = {"a_events", "a_clicks", "b_payroll"}
REFUSED = CommitIdChecks(load_formats()).refused


class IntakeStore:
    """What the intake needs of the store: commits_notify and table_owners."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()
        self.calls: list[list[CommitEvent]] = []

    def commits_notify(self, events: Sequence[CommitEvent]) -> list[bool | None]:
        self.calls.append(list(events))
        out: list[bool | None] = []
        for e in events:
            if e.table_id not in KNOWN_TABLES:
                out.append(None)
            else:
                out.append((e.table_id, e.commit_id) not in self.seen)
                self.seen.add((e.table_id, e.commit_id))
        return out

    def table_owners(self, table_ids: Sequence[str]) -> dict[str, str]:
        return {}


@pytest.fixture
def api() -> Iterator[tuple[Any, IntakeStore]]:
    store = IntakeStore()
    servicer = TableManagementServicer(store, {}, AUTH)  # type: ignore[arg-type]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    add_guarded(server, tms_pb2_grpc.add_TableManagementServiceServicer_to_server, servicer)
    port = server.add_insecure_port(f"127.0.0.1:{free_port()}")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield channel, store
    finally:
        channel.close()
        server.stop(0).wait()
        servicer.close()


def _creds(who: str = "admin") -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {TOKENS[who]}")]


def _req(table: str = "tables/a_events", commit_id: str = "c1", **kw: Any
         ) -> tms_pb2.NotifyCommitRequest:
    return tms_pb2.NotifyCommitRequest(table=table, commit_id=commit_id, **kw)


def _fields(err: grpc.RpcError) -> str:
    return str(err.details())  # type: ignore[attr-defined]


# --- the fast path never accepts more than the checks -----------------------------------------
HOSTILE = ["", "a", "x" * 255, "x" * 256, "x" * 257, "x" * 64, "x" * 65, "x" * 100_000,
           "é", "\u2028", "\ufeff", "a\x00b", "a\nb", "a\rb", "\t", "a\x7f", "a\x1f", "a\x1b[31m",
           "tables/", "tables/a", "tables/a_events", "tables/A", "tables/a/b", "tables/a\n",
           "tables/a\x00", "tables/-a", "tables/" + "a" * 63, "tables/" + "a" * 64,
           "tables/a.b-c_d", "Tables/a", " tables/a", "tables/a ", "tables//a", "tables/\u0430"]


def _random_request(rng: random.Random) -> tms_pb2.NotifyCommitRequest:
    req = _req(rng.choice(HOSTILE), rng.choice(HOSTILE))
    if rng.random() < 0.5:
        req.stats.files_added = rng.choice([0, 1, -1, 2**63 - 1, -(2**63)])
        req.stats.bytes_added = rng.choice([0, 4096, -1])
        req.stats.operation = rng.choice(HOSTILE)
    if rng.random() < 0.3:
        req.commit_time.seconds = rng.choice([0, 946684800, 10**10, -62135596800,
                                              int(datetime.now(UTC).timestamp())])
        req.commit_time.nanos = rng.choice([0, 999_999_999, -1, 1_000_000_000])
    return req


def test_the_fast_path_accepts_exactly_what_the_checks_accept() -> None:
    rng = random.Random(15)
    accepted = 0
    for _ in range(5000):
        req = _random_request(rng)
        problems: v.Problems = []
        slow = commits._event(problems, "", req, "tp", REFUSED)
        fast = commits._fast_event(req, "tp", REFUSED)
        if problems:
            assert fast is None, (req, problems)
        else:
            assert fast == slow, req
            accepted += 1
    assert accepted > 100  # the generator reaches both sides


def test_the_batch_fast_path_accepts_what_the_single_fast_path_accepts() -> None:
    """A column at a time (one regex per column of a batch) is as strict as entry by entry."""
    rng = random.Random(16)
    usual = [_req(f"tables/t{i}", f"c-{i}", stats=tms_pb2.CommitStats(
        files_added=i, bytes_added=7, operation=("append", "")[i % 2])) for i in range(5)]
    taken = hostile_taken = 0
    for _ in range(3000):
        batch = [rng.choice(usual) for _ in range(rng.randint(1, 4))]
        hostile = rng.random() < 0.7
        if hostile:
            batch.insert(rng.randint(0, len(batch)), _random_request(rng))
        each = [commits._fast_event(r, "tp", REFUSED) for r in batch]
        fast = commits._fast_batch(batch, "tp", REFUSED)
        if fast is not None:
            assert None not in each and fast == each, batch
            assert all(type(e) is CommitEvent for e in fast)
            taken += 1
            hostile_taken += hostile
        elif None not in each:  # declined: only the shape (a commit time, no stats)
            assert any(r.HasField("commit_time") or not r.HasField("stats") for r in batch)
    assert taken > 100 and hostile_taken > 5  # the generator reaches both sides
    assert commits._fast_batch(usual, "tp", REFUSED) == [
        commits._fast_event(r, "tp", REFUSED) for r in usual]
    assert commits._fast_batch([], "tp", REFUSED) is None


def test_a_batch_with_one_bad_entry_names_every_bad_field() -> None:
    reqs = [_req(commit_id="ok"), _req(commit_id="bad\x00"), _req(table="tables/B"),
            _req(commit_id="x" * 10_000)]
    with pytest.raises(ApiError) as info:
        commits.events_of(reqs, "commits[{}].", "", REFUSED)
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    problems = dict(info.value.violations)
    assert set(problems) == {"commits[1].commit_id", "commits[2].table",
                             "commits[3].commit_id"}
    assert "NUL" in problems["commits[1].commit_id"]
    assert "at most 256 characters, got 10000" in problems["commits[3].commit_id"]


def test_valid_events_keep_every_field() -> None:
    ts = Timestamp()
    ts.FromDatetime(datetime.now(UTC) - timedelta(minutes=5))
    req = _req(commit_id="snap-1", commit_time=ts,
               stats=tms_pb2.CommitStats(files_added=3, bytes_added=99, operation="append"))
    (event,) = commits.events_of([req], "", "00-abc-def-01", REFUSED)
    assert event == CommitEvent("a_events", "snap-1", ts.ToDatetime(tzinfo=UTC), 3, 99,
                                "append", "00-abc-def-01", ("hudi", "iceberg"))
    (bare,) = commits.events_of([_req()], "", "", REFUSED)
    assert (bare.files_added, bare.bytes_added, bare.operation_type) == (None, None, "")


# --- attackers, through gRPC ------------------------------------------------------------------
def test_control_characters_and_huge_strings_are_refused(api: tuple[Any, IntakeStore]) -> None:
    channel, store = api
    stub = tms_pb2_grpc.TableManagementServiceStub(channel)
    for bad, field in ((_req(commit_id="c\x1b[2J"), "commit_id"),
                       (_req(commit_id="c" * 1_000_000), "commit_id"),
                       (_req(table="tables/a_events\n"), "table"),
                       (_req(stats=tms_pb2.CommitStats(operation="op\x00")), "stats.operation"),
                       (_req(stats=tms_pb2.CommitStats(files_added=-1)), "stats.files_added")):
        with pytest.raises(grpc.RpcError) as info:
            stub.NotifyCommit(bad, metadata=_creds(), timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
        assert field in _fields(info.value)
        with pytest.raises(grpc.RpcError) as info:
            stub.NotifyCommits(tms_pb2.NotifyCommitsRequest(commits=[_req(), bad]),
                               metadata=_creds(), timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
        assert f"commits[1].{field}" in _fields(info.value)
    assert store.calls == []  # nothing of a refused request reached the store


def test_undecodable_bytes_are_invalid_argument(api: tuple[Any, IntakeStore]) -> None:
    channel, store = api
    bad_utf8 = b"\x12\x02\xff\xfe"  # commit_id (field 2) holding invalid UTF-8
    for method, wrap in (("NotifyCommit", b""), ("NotifyCommits", b"\x0a\x04")):
        call = channel.unary_unary(f"/tms.v1.TableManagementService/{method}",
                                   request_serializer=lambda b: b,
                                   response_deserializer=lambda b: b)
        # then a truncated length-delimited field, and a length past the end
        for raw in (wrap + bad_utf8, b"\x0a\x05tab", b"\x0a\x80\x80\x80\x80\x10"):
            with pytest.raises(grpc.RpcError) as info:
                call(raw, metadata=_creds(), timeout=10)
            code = info.value.code()  # type: ignore[attr-defined]
            assert code == grpc.StatusCode.INVALID_ARGUMENT, (method, raw, code)
            assert "not a valid" in _fields(info.value)
    assert store.calls == []


def test_duplicate_commit_ids_in_one_batch(api: tuple[Any, IntakeStore]) -> None:
    channel, store = api
    stub = tms_pb2_grpc.TableManagementServiceStub(channel)
    reply = stub.NotifyCommits(tms_pb2.NotifyCommitsRequest(commits=[
        _req(commit_id="d"), _req(commit_id="d"), _req(table="tables/a_clicks", commit_id="d"),
        _req(table="tables/nope", commit_id="d")]), metadata=_creds(), timeout=10)
    assert [r.duplicate for r in reply.results[:3]] == [False, True, False]
    assert reply.results[3].error.code == grpc.StatusCode.NOT_FOUND.value[0]
    again = stub.NotifyCommit(_req(commit_id="d"), metadata=_creds(), timeout=10)
    assert again.duplicate


def test_another_tenants_table_is_refused(api: tuple[Any, IntakeStore]) -> None:
    channel, store = api
    stub = tms_pb2_grpc.TableManagementServiceStub(channel)
    with pytest.raises(grpc.RpcError) as info:
        stub.NotifyCommit(_req(table="tables/b_payroll"), metadata=_creds("tenant_a"), timeout=10)
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED  # type: ignore[attr-defined]
    reply = stub.NotifyCommits(tms_pb2.NotifyCommitsRequest(commits=[
        _req(commit_id="mine"), _req(table="tables/b_payroll", commit_id="theirs")]),
        metadata=_creds("tenant_a"), timeout=10)
    assert not reply.results[0].HasField("error")
    assert reply.results[1].error.code == grpc.StatusCode.PERMISSION_DENIED.value[0]
    written = [e.table_id for call in store.calls for e in call]
    assert "b_payroll" not in written and written == ["a_events"]


# --- the span of a request when no exporter is set ----------------------------------------------
def test_a_quiet_span_continues_the_callers_trace() -> None:
    caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    span = tracing.quiet_span(tracing.context_from(caller))
    ctx = span.get_span_context()
    assert format(ctx.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
    assert format(ctx.span_id, "016x") != "b7ad6b7169203331" and ctx.trace_flags.sampled
    assert not span.is_recording()
    unsampled = tracing.quiet_span(tracing.context_from(caller[:-2] + "00"))
    assert not unsampled.get_span_context().trace_flags.sampled  # the caller's choice holds
    fresh = [tracing.quiet_span(None).get_span_context() for _ in range(2)]
    assert all(c.is_valid and c.trace_flags.sampled for c in fresh)
    assert fresh[0].trace_id != fresh[1].trace_id
