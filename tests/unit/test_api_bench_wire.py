"""The API bench's batch requests, built as bytes, are the messages protobuf would build."""

from __future__ import annotations

from bench.api_bench import _RESULT_NEW, _commit, batch_wire
from tms.v1 import tms_pb2


def test_batch_wire_parses_as_the_protobuf_batch() -> None:
    tables = ["tables/bench_0001", "tables/b", "tables/bench_0001", "tables/" + "t" * 150]
    ids = ["run-0-0-1", "x" * 300, "\u00e9\U0001f600", ""]
    raw = batch_wire(tables, ids)
    expected = tms_pb2.NotifyCommitsRequest(
        commits=[_commit(t, c) for t, c in zip(tables, ids, strict=True)])
    assert tms_pb2.NotifyCommitsRequest.FromString(raw) == expected


def test_an_all_new_answer_is_recognised_from_its_bytes() -> None:
    answer = tms_pb2.NotifyCommitsResponse(
        results=[tms_pb2.NotifyCommitsResponse.Result() for _ in range(3)])
    assert answer.SerializeToString() == _RESULT_NEW * 3
    one_duplicate = tms_pb2.NotifyCommitsResponse(results=[
        tms_pb2.NotifyCommitsResponse.Result(), tms_pb2.NotifyCommitsResponse.Result(
            duplicate=True), tms_pb2.NotifyCommitsResponse.Result()])
    assert one_duplicate.SerializeToString() != _RESULT_NEW * 3
