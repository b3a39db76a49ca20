"""The CloudEvents receiver in front of a real API: catalog events end up as exactly the commit
events direct NotifyCommits store; malformed input gets 400 naming the problem, never 500."""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Iterator

import pytest

from tests.client.events_support import commit_of, post, raw_request, snapshot, update_table
from tests.client.support import commit_rows, iceberg_table
from tests.integration.conftest import Api
from tms_client import CommitHook, RetryPolicy, TmsClient
from tms_client.receiver_server import MAX_BODY_BYTES, ReceiverServer

pytestmark = pytest.mark.integration

BATCH = "application/cloudevents-batch+json"
STRUCTURED = "application/cloudevents+json"
SHORT = RetryPolicy(max_attempts=3, initial_backoff_s=0.05, max_backoff_s=0.1,
                    total_timeout_s=1.0)
FUZZ_ROUNDS = 150


@pytest.fixture
def receiver(api: Api) -> Iterator[ReceiverServer]:
    client = TmsClient(api.address, retry=SHORT)
    server = ReceiverServer(("127.0.0.1", 0), CommitHook(client, raise_errors=True))
    server.start_background()
    yield server
    server.shutdown()
    server.server_close()
    client.close()


def register(api: Api, *table_ids: str) -> TmsClient:
    client = TmsClient(api.address)
    for tid in table_ids:
        namespace, name = tid.rsplit(".", 1)
        client.register_table(tid, iceberg_table(api, namespace, name))
    return client


def test_batch_matches_direct_notify(api: Api, db_dsn: str, receiver: ReceiverServer) -> None:
    client = register(api, "lake.orders", "lake.direct")
    snaps = [snapshot(101), snapshot(102, files=1, size=10, operation="overwrite"),
             snapshot(103), snapshot(104, files=0, size=0, operation="delete")]
    events = [update_table(["lake"], "Orders", snaps[:1], "e1"),
              update_table(["lake"], "orders", snaps[1:3], "e2"),  # one commit, two snapshots
              {**update_table(["lake"], "orders", [], "e3"), "type": "createTable"},
              update_table(["lake"], "orders", [], "e4"),  # a property change: no snapshot
              update_table(["lake"], "orders", snaps[3:], "e5")]
    status, body = post(receiver.port, events, BATCH)
    assert status == 202, body
    assert (body["accepted"], body["duplicates"], body["refused"]) == (4, 0, [])
    assert [i["event"] for i in body["ignored"]] == [2, 3]

    direct = client.notify_commits([commit_of("lake.direct", s) for s in snaps])
    assert all(r.ok for r in direct)
    via_hook, via_api = commit_rows(db_dsn, "lake.orders"), commit_rows(db_dsn, "lake.direct")
    assert via_hook == via_api and len(via_hook) == 4
    hooked, notified = client.get_table("lake.orders"), client.get_table("lake.direct")
    assert (hooked.commit_count, hooked.last_commit_id) == (notified.commit_count,
                                                             notified.last_commit_id)
    # The catalog delivering again (at least once) changes nothing.
    status, body = post(receiver.port, events, BATCH)
    assert (status, body["accepted"], body["duplicates"]) == (202, 0, 4)
    assert client.get_table("lake.orders").commit_count == 4


def test_structured_and_binary_modes(api: Api, receiver: ReceiverServer) -> None:
    client = register(api, "lake.raw.clicks")
    event = update_table(["lake", "raw"], "clicks", [snapshot(7)], "s1")
    assert post(receiver.port, event, STRUCTURED)[0] == 202
    encoded = {**update_table(["lake", "raw"], "clicks", [snapshot(8)], "s2")}
    encoded["data_base64"] = base64.b64encode(json.dumps(encoded.pop("data")).encode()).decode()
    assert post(receiver.port, encoded, STRUCTURED)[0] == 202
    # Binary mode: attributes in ce-* headers, Lakekeeper's namespace extension joined by the
    # unit separator (percent-encoded), the data is only the list of updates here.
    headers = {"ce-specversion": "1.0", "ce-id": "b1", "ce-source": "catalog",
               "ce-type": "updateTable", "ce-namespace": "lake%1Fraw", "ce-name": "clicks"}
    data = {"updates": [{"action": "add-snapshot", "snapshot": snapshot(9)}]}
    status, body = post(receiver.port, data, "application/json", headers)
    assert (status, body["accepted"]) == (202, 1)
    table = client.get_table("lake.raw.clicks")
    assert (table.commit_count, table.last_commit_id) == (3, "9")


def _good() -> dict:
    return update_table(["lake"], "orders", [snapshot(1)], "g")


def _without(d: dict, *path: str) -> dict:
    d = json.loads(json.dumps(d))
    target = d
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return d


MALFORMED = [
    ("not json", b"{nope", STRUCTURED, {}, "", "not valid JSON"),
    ("batch not a list", _good(), BATCH, {}, "", "JSON array"),
    ("batch member", [_good(), 3], BATCH, {}, "events[1]", "JSON object"),
    ("no type", [_good(), _without(_good(), "type")], BATCH, {}, "events[1].type", "required"),
    ("old spec", {**_good(), "specversion": "0.3"}, STRUCTURED, {}, "specversion", "'1.0'"),
    ("no table", _without(_without(_without(_good(), "data", "identifier"), "namespace"),
                          "name"), STRUCTURED, {}, "data.identifier", "no table"),
    ("no snapshot id", _without(_good(), "data", "updates", 0, "snapshot", "snapshot-id"),
     STRUCTURED, {}, "data.updates[0].snapshot.snapshot-id", "required"),
    ("bad count", json.loads(json.dumps(_good()).replace('"added-data-files": "2"',
                                                          '"added-data-files": "lots"')),
     STRUCTURED, {}, "data.updates[0].snapshot.summary.added-data-files", "integer"),
    ("bad table id", update_table(["lake"], "orders table!", [snapshot(1)], "x"), STRUCTURED,
     {}, "data", "table_id"),
    ("data not object", {**_good(), "data": "text"}, STRUCTURED, {}, "data", "JSON object"),
    ("bad base64", {**_without(_good(), "data"), "data_base64": "!!"}, STRUCTURED, {},
     "data_base64", "base64"),
    ("not a cloudevent", _good(), "text/plain", {}, "content-type", "not a CloudEvent"),
    ("binary non-json", b"hello", "text/plain",
     {"ce-specversion": "1.0", "ce-id": "1", "ce-source": "s", "ce-type": "updateTable"},
     "data", "must be JSON"),
]


@pytest.mark.parametrize("body,content_type,headers,field,words",
                         [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_events_get_400_naming_the_problem(
        api: Api, receiver: ReceiverServer, body: object, content_type: str,
        headers: dict[str, str], field: str, words: str) -> None:
    client = register(api, "lake.orders")
    status, answer = post(receiver.port, body, content_type, headers)
    assert status == 400, answer
    assert words in answer["error"]
    assert answer.get("field", "") == field
    assert client.get_table("lake.orders").commit_count == 0  # nothing of it forwarded


def test_limits_paths_and_outages(api: Api, receiver: ReceiverServer) -> None:
    register(api, "lake.orders")
    port = receiver.port
    too_big = f"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: {BATCH}\r\n" \
              f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n"
    assert raw_request(port, too_big) == 413
    assert raw_request(port, f"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: {BATCH}\r\n\r\n") \
        == 411
    assert post(port, [_good()] * 1001, BATCH)[0] == 413
    assert post(port, _good(), STRUCTURED, path="/elsewhere")[0] == 404
    assert raw_request(port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n") == 200
    status, body = post(port, update_table(["lake"], "unknown", [snapshot(5)], "u"),
                        STRUCTURED)
    assert status == 202 and body["refused"][0]["code"] == "NOT_FOUND"
    api.server.stop(0)
    status, body = post(port, _good(), STRUCTURED)
    assert status == 503 and "unavailable" in body["error"]


def test_mangled_input_never_gets_500(api: Api, receiver: ReceiverServer) -> None:
    register(api, "lake.orders")
    text = json.dumps([_good(), update_table(["lake"], "orders", [snapshot(2)], "h")])
    rng = random.Random(6)
    for _ in range(FUZZ_ROUNDS):
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            chars[rng.randrange(len(chars))] = rng.choice('{}[]":,0a\x1f\\ ')
        status, _answer = post(receiver.port, "".join(chars), BATCH)
        assert status in (202, 400), "".join(chars)
