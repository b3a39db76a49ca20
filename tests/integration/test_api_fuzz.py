"""Fuzzing the gRPC API: thousands of generated requests against a real in-process server.

Every RPC of TableManagementService gets random mixes of valid-looking and hostile input
(resource names, oversized strings and maps, extreme ints, unknown enum numbers, out-of-range
timestamps, malformed page tokens and field masks, odd batch sizes, malformed bearer tokens)
plus raw byte payloads that bypass the client-side serializer. The server must answer every
one with a deliberate status: no INTERNAL and no UNKNOWN (an exception escaping a handler),
and it must still be healthy and working afterwards.

Reproducible: each request is generated from its own ``random.Random(f"{seed}:{index}")``, so
the seed (printed, overridable with ``TMS_FUZZ_SEED``) and the index reported with a failure
rebuild that request exactly; the server state it met depends on what ran concurrently.
``TMS_FUZZ_REQUESTS`` changes the request count (default 10,000).
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import string
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import field_mask_pb2, text_format, timestamp_pb2
from google.protobuf.message import DecodeError, Message
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.helpers import SqlCatalog, sql_catalog, wait_for
from tms.api import pagination
from tms.api.auth import Authenticator
from tms.api.server import ApiServer
from tms.formats.iceberg.plugin import IcebergFormat
from tms.formats.registry import load_formats
from tms.local.ports import free_port
from tms.policy.common import SPARK_CONF_PREFIX
from tms.policy.common import schema as policy_schema
from tms.storage.postgres import PostgresStore
from tms.v1 import tms_pb2, tms_pb2_grpc

pytestmark = pytest.mark.integration

REQUESTS = int(os.environ.get("TMS_FUZZ_REQUESTS", "10000"))
THREADS = 8
CALL_TIMEOUT_S = 10.0
SLOW_S = 2.0  # calls slower than this are listed in the output
RAW_SHARE = 0.08  # share of requests sent as raw bytes, past the client-side serializer
SERVICE = tms_pb2.DESCRIPTOR.services_by_name["TableManagementService"]
METHODS = tuple(m.name for m in SERVICE.methods)
BAD_CODES = (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
TS_MIN, TS_MAX = -62135596800, 253402300799  # 0001-01-01 .. 9999-12-31T23:59:59 UTC

TOKENS = {
    "admin": "fuzz-admin-token-0123456789",
    "writer": "fuzz-writer-token-fz-only",
    "writer_all": "fuzz-writer-token-everything",
    "reader": "fuzz-reader-token",
    "owner_admin": "fuzz-admin-token-team-a-only",
    "mixed": "fuzz-reader-writer-fz1-and-team-b",
}
AUTH_CONFIG: dict[str, Any] = {"tokens": [
    {"name": "admin", "token": TOKENS["admin"], "roles": ["admin"]},
    {"name": "w", "token": TOKENS["writer"], "roles": ["writer"], "tables": ["fz*"]},
    {"name": "wa", "token": TOKENS["writer_all"], "roles": ["writer"]},
    {"name": "r", "token": TOKENS["reader"], "roles": ["reader"]},
    {"name": "oa", "token": TOKENS["owner_admin"], "roles": ["admin"], "owners": ["team-a"]},
    {"name": "m", "token": TOKENS["mixed"], "roles": ["reader", "writer"],
     "tables": ["fz1", "fz.*"], "owners": ["team-b"]},
]}

# (table_id, owner, paused) registered before fuzzing, so requests can reach deep code paths
SEED_TABLES = (("fz0", "team-a", False), ("fz1", "team-b", False), ("fz2", "", False),
               ("fz.x", "team-a", False), ("fz3", "team-b", True), ("ot1", "team-a", False),
               ("ot2", "", False))

ODD_PIECES = (
    "é", "e\u0301", "\u0301", "\u202e", "\u200f", "\u200b", "\ufeff", "\U0001f600",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\u05d0\u05d1", "\u0627\u0644", "\uffff",
    "\U0010ffff", "\u0130", "\u212a", "ß", "\ufb00", "\u00b2", "\u0661", "\uff11", "\u2167",
    "\x00", "\x01", "\x1b", "\x1f", "\x7f", "\x85", "\u2028", "\n", "\r", "\t", " ", "/", "\\",
    "..", "../", "%00", "%2e%2e", "'", '"', ";", "--", "%s", "%(x)s", "{}", "*", "?", "[", "]",
    "-", ".", "_", "tables/", "/operations/", "=", "&", "<", ">",
)
BOUNDARY_LENGTHS = (31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1023,
                    1024, 1025, 4095, 4096, 4097, 8192, 65536, 100_000)
SPECIAL_TABLE_IDS = (
    "-", "fz0\n", "fz0\r\n", "fz0 ", " fz0", "FZ0", "0fz", "fz/0", "fz0/operations/1", "fz\x00",
    "fz\u0130", "fz\u212a", "fz0\u200b", "\u0130", "a" * 63, "a" * 64, "a", "fz..", "fz-",
    "fz_", "fz.", "f" + "z" * 62, "..", "%66z0", "fz*", "fz?", "fz[0]",
)
SPECIAL_TABLE_NAMES = (
    "", "tables", "tables/", "tables/-", "tables//", "tables/fz0/", "/tables/fz0", "TABLES/fz0",
    "tables/../fz0", "tables/fz0/..", "tables/fz0\n", "tables/fz0\x00", " tables/fz0",
    "tables/fz0 ", "tables/\u0130", "tables/fz0/operations/1", "tables/*", "tables/fz%30",
    "tables/fz0\u202e", "tables/\U0001f600", "tables/" + "a" * 100_000, "tables/-/",
)
SPECIAL_OP_IDS = (
    "0", "1", "-1", "+1", "0x10", "1e3", "1_0", " 1", "1 ", "1\n", "", "abc", "9" * 18,
    "9" * 19, "1" + "0" * 17, "0" * 18, "0" * 40, "\u00b2", "\u00b9\u00b2", "\u0661\u0662",
    "\uff11\uff12", "\u2167", "\u0967", "\U0001d7d9", "\u2460", "1\u0301", "NaN", "-",
)
# every key the typed schema knows for an Iceberg table, and Spark conf keys allowed or not
KNOWN_POLICY_KEYS = (*sorted(k for k in policy_schema(IcebergFormat.policy_keys)
                             if not k.startswith(SPARK_CONF_PREFIX)),
                     f"{SPARK_CONF_PREFIX}spark.sql.shuffle.partitions",
                     f"{SPARK_CONF_PREFIX}spark.executor.extraJavaOptions")
POLICY_VALUES = ("true", "false", "yes", "0", "1", "2", "12", "-1", "lots", "", " 5 ", "1_000",
                 "\u0661\u0662", "\uff11\uff12", "\u00b2", "9" * 4000, "9" * 4096, "1e9",
                 "0x10", "NaN", "TRUE", "\u0130", "2\x00", "4g", "0.5", "UTC", "id",
                 "-Dx=1", "99999999999999999999", "2024-05-01T00:00:00Z")
MASK_PATHS = ("owner", "queue", "priority", "policy", "catalog_properties", "name", "format",
              "state", "table.owner", "", "owner.x", "*", "policy.compaction.enabled",
              "catalog_properties.uri", "OWNER", "owner ", "update_mask", "catalog",
              "location", "base_path")
VALID_MASK_PATHS = MASK_PATHS[:4]


@dataclass
class World:
    """What exists on the server when fuzzing starts; generators aim at it."""

    tables: list[str]
    operations: list[str]


@dataclass
class Case:
    index: int
    method: str
    call: Callable[[], object]
    describe: Callable[[], str]
    undecodable: bool = False  # raw bytes the request type itself cannot parse


@dataclass
class Outcome:
    index: int
    method: str
    code: grpc.StatusCode
    details: str
    request: str = ""
    undecodable: bool = False
    elapsed_s: float = 0.0


@dataclass
class Tally:
    codes: Counter[str] = field(default_factory=Counter)
    by_method: Counter[tuple[str, str]] = field(default_factory=Counter)
    failures: list[Outcome] = field(default_factory=list)
    undecodable_codes: Counter[str] = field(default_factory=Counter)
    slow: list[Outcome] = field(default_factory=list)
    samples: dict[str, str] = field(default_factory=dict)  # code -> one "method: details"
    trailers_too_big: int = 0


def describe_message(msg: Message, limit: int = 600) -> str:
    size = msg.ByteSize()
    text = text_format.MessageToString(msg, as_one_line=True)
    if len(text) > limit:
        text = text[:limit] + f"... [{len(text)} chars]"
    return f"{type(msg).__name__}({size} bytes) {{{text}}}"


class Gen:
    """Hostile and valid-looking values, all acceptable to the protobuf runtime."""

    def __init__(self, rng: random.Random, world: World) -> None:
        self.rng = rng
        self.world = world
        # how hostile this request is: the chance that each field gets a bad value, so many
        # requests are valid but for one field and reach the code behind validation
        self.p_bad = float(rng.choice((0.05, 0.15, 0.35, 0.7, 1.0)))

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def bad(self) -> bool:
        return self.chance(self.p_bad)

    def pick(self, items: Sequence[Any]) -> Any:
        return items[self.rng.randrange(len(items))]

    # scalars --------------------------------------------------------------------------------
    def integer(self, lo: int, hi: int, typical: Sequence[int] = (),
                valid: Sequence[int] = ()) -> int:
        if valid and not self.bad():
            return int(self.pick(valid))
        r = self.rng.random()
        if r < 0.3 and typical:
            return int(self.pick(typical))
        if r < 0.6:
            edges = [lo, lo + 1, hi - 1, hi, -1, 0, 1, 2**31 - 1, -(2**31), 2**32, 10**12]
            return int(self.pick([e for e in edges if lo <= e <= hi]))
        if r < 0.8:
            return self.rng.randint(max(lo, -1000), min(hi, 1000))
        return self.rng.randint(lo, hi)

    def int32(self, typical: Sequence[int] = (), valid: Sequence[int] = ()) -> int:
        return self.integer(*INT32, typical, valid)

    def int64(self, typical: Sequence[int] = (), valid: Sequence[int] = ()) -> int:
        return self.integer(*INT64, typical, valid)

    def word(self, alphabet: str = string.ascii_lowercase + string.digits,
             lo: int = 1, hi: int = 20) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(self.rng.randint(lo, hi)))

    def text(self, typical: Sequence[str] = (), long: bool = True,
             valid: Sequence[str] = ()) -> str:
        if valid and not self.bad():
            return str(self.pick(valid))
        r = self.rng.random()
        if r < 0.1:
            return ""
        if r < 0.3 and typical:
            return str(self.pick(typical))
        if r < 0.45:
            return self.word()
        if r < 0.65:
            return "".join(self.pick(ODD_PIECES) if self.chance(0.5) else self.word(hi=4)
                           for _ in range(self.rng.randint(1, 12)))
        if r < 0.75:
            return self.pick([str(self.rng.randint(*INT64)), "-1", "0", "9" * 30, "1e9", "NaN",
                              "true", "null", "{}", "[]", "None"])
        if r < 0.85:
            base = str(self.pick(typical)) if typical else self.word()
            return base + self.pick(["\n", "\r\n", "\x00", " ", "\t", "\u200b", "\u0301",
                                     "/..", "\U0001f600"])
        if long:
            n = int(self.pick(BOUNDARY_LENGTHS))
            fill = self.pick(["a", "é", "\U0001f600", "/", "9", "\u0301", "ab"])
            return (fill * n)[:n]
        return self.word(hi=60)

    def short_text(self, typical: Sequence[str] = (), valid: Sequence[str] = ()) -> str:
        return self.text(typical, long=False, valid=valid)

    # resource names -------------------------------------------------------------------------
    def valid_table_id(self) -> str:
        if self.chance(0.7):
            return str(self.pick(self.world.tables))
        return "fz" + self.word(string.ascii_lowercase + string.digits + "_.-", 1, 8)

    def table_id(self) -> str:
        if not self.bad():
            return self.valid_table_id()
        r = self.rng.random()
        if r < 0.45:
            return str(self.pick(self.world.tables))
        if r < 0.65:
            return "fz" + self.word(string.ascii_lowercase + string.digits + "_.-", 1, 8)
        if r < 0.75:
            first = self.rng.choice(string.ascii_lowercase)
            return first + self.word(string.ascii_lowercase + string.digits + "_.-", 0, 62)
        if r < 0.9:
            return str(self.pick(SPECIAL_TABLE_IDS))
        return self.short_text()

    def table_name(self) -> str:
        if not self.bad():
            return f"tables/{self.valid_table_id()}"
        r = self.rng.random()
        if r < 0.75:
            return f"tables/{self.table_id()}"
        if r < 0.9:
            return str(self.pick(SPECIAL_TABLE_NAMES))
        return self.text(("tables/fz0",))

    def op_name(self) -> str:
        if not self.bad():
            if self.chance(0.6) and self.world.operations:
                return str(self.pick(self.world.operations))
            return f"tables/{self.valid_table_id()}/operations/{self.rng.randint(1, 60)}"
        r = self.rng.random()
        if r < 0.35 and self.world.operations:
            return str(self.pick(self.world.operations))
        if r < 0.85:
            op = (str(self.rng.randint(1, 50)) if self.chance(0.4)
                  else str(self.pick(SPECIAL_OP_IDS)) if self.chance(0.6)
                  else str(self.rng.randint(0, 10**19)))
            return f"tables/{self.table_id()}/operations/{op}"
        return self.table_name() if self.chance(0.5) else self.text()

    def parent(self) -> str:
        return "tables/-" if self.chance(0.3) else self.table_name()

    # structured values ----------------------------------------------------------------------
    def timestamp(self) -> timestamp_pb2.Timestamp:
        if not self.bad():
            now = int(time.time())
            return timestamp_pb2.Timestamp(seconds=self.rng.randint(now - 86400 * 3650, now),
                                           nanos=self.rng.randint(0, 999_999_999))
        seconds = int(self.pick([
            -(10**12), 10**13, TS_MIN, TS_MIN - 1, TS_MAX, TS_MAX + 1, 0, -1,
            int(time.time()), int(time.time()) + 86400 * 365 * 100, INT64[0], INT64[1],
            self.rng.randint(TS_MIN, TS_MAX), self.rng.randint(*INT64)]))
        nanos = int(self.pick([0, 0, 0, -1, 999_999_999, 1_000_000_000, INT32[0], INT32[1],
                               self.rng.randint(0, 999_999_999), self.rng.randint(*INT32)]))
        return timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)

    def enum(self, values: Sequence[int]) -> int:
        if not self.bad() or self.chance(0.4):
            return int(self.pick(values))
        return int(self.pick([-1, len(values), 6, 42, 99, INT32[0], INT32[1],
                              self.rng.randint(*INT32)]))

    def string_map(self, valid: dict[str, str], keys: Sequence[str] = (),
                   values: Sequence[str] = ()) -> dict[str, str]:
        if not self.bad():
            return dict(valid)
        r = self.rng.random()
        if r < 0.15:
            return {}
        if r < 0.45:
            return dict(valid)
        out = dict(valid) if self.chance(0.5) else {}
        if r < 0.6:  # huge: hundreds of entries
            for i in range(self.rng.randint(60, 600)):
                out[f"k{i}"] = self.word(hi=8)
            return out
        for _ in range(self.rng.randint(1, 6)):
            key = (str(self.pick(keys)) if keys and self.chance(0.5)
                   else self.pick(["", "\x00", "k" * 129, "k" * 128]) if self.chance(0.2)
                   else self.short_text())
            out[key] = (str(self.pick(values)) if values and self.chance(0.5)
                        else self.text())
        return out

    def policy(self) -> dict[str, str]:
        valid = {"compaction.min-small-files": "50"} if self.chance(0.5) else {}
        return self.string_map(valid, KNOWN_POLICY_KEYS + ("no.such.key",), POLICY_VALUES)

    def field_mask(self) -> field_mask_pb2.FieldMask:
        if not self.bad():
            return field_mask_pb2.FieldMask(paths=self.rng.sample(
                VALID_MASK_PATHS, self.rng.randint(1, len(VALID_MASK_PATHS))))
        r = self.rng.random()
        if r < 0.1:
            return field_mask_pb2.FieldMask()
        if r < 0.2:
            return field_mask_pb2.FieldMask(paths=[self.short_text() for _ in range(300)])
        n = self.rng.randint(1, 5)
        return field_mask_pb2.FieldMask(paths=[
            self.pick(MASK_PATHS) if self.chance(0.8) else self.short_text() for _ in range(n)])

    def table(self) -> tms_pb2.Table:
        """A valid iceberg table with a few fields replaced by hostile values."""
        t = tms_pb2.Table(format="iceberg", catalog="cat", namespace="ns",
                          table_name=self.pick(["events", "fz0", "fz1", "absent"]),
                          owner=self.pick(["", "team-a", "team-b"]))
        mutations: dict[str, Callable[[], object]] = {
            "name": lambda: setattr(t, "name", self.table_name()),
            "format": lambda: setattr(t, "format", self.short_text(("iceberg", "hudi", "delta"))),
            "catalog": lambda: setattr(t, "catalog", self.text(("cat", "_c", "9c", "nope",
                                                                "Cat", "cat\n"))),
            "namespace": lambda: setattr(t, "namespace", self.text(("a.b", "a..b", ".a"))),
            "table_name": lambda: setattr(t, "table_name", self.text(("events",))),
            "base_path": lambda: setattr(t, "base_path", self.text(
                ("s3://b/t", "s3://b/../etc", "/a/..\\b", "%2e%2e/x"))),
            "owner": lambda: setattr(t, "owner", self.text(("team-a", "team-b"))),
            "queue": lambda: setattr(t, "queue", self.short_text(("default", "q1", "Q!"))),
            "priority": lambda: setattr(t, "priority", self.int32((-1000, 1000, 1001, -1001))),
            "policy": lambda: (t.policy.clear(), t.policy.update(self.policy())),
            "state": lambda: setattr(t, "state", self.enum((0, 1, 2))),
            "last_commit_id": lambda: setattr(t, "last_commit_id", self.text()),
            "commit_count": lambda: setattr(t, "commit_count", self.int64()),
            "create_time": lambda: t.create_time.CopyFrom(self.timestamp()),
        }
        if self.chance(0.5):  # other valid values, for updates that succeed
            t.queue = self.pick(["", "default", "q1", "q-2"])
            t.priority = self.rng.randint(-1000, 1000)
            t.policy["compaction.min-small-files"] = str(self.rng.randint(2, 100))
        n = self.rng.randint(1, 4) if self.bad() else 0
        for key in self.rng.sample(sorted(mutations), n):
            mutations[key]()
        return t

    def request_id(self) -> str:
        if not self.bad():  # none, or one of a small pool: replays and reuse
            return "" if self.chance(0.5) else f"rid-{self.rng.randint(0, 5)}"
        return self.text((self.word(hi=128), "r" * 129, "r" * 128))

    def page_token(self, query: dict[str, Any], key_type: type) -> str:
        if not self.bad():
            if self.chance(0.5):
                return ""
            return pagination.encode(query, self.rng.randint(1, 100) if key_type is int
                                     else self.valid_table_id())
        r = self.rng.random()
        if r < 0.3:
            return ""
        if r < 0.45:
            return "".join(self.rng.choice(string.ascii_letters + string.digits + "-_=+/%")
                           for _ in range(self.rng.randint(1, 600)))
        if r < 0.6:
            raw = self.pick([b"", b"\xff\xfe", b"[" * 300 + b"]" * 300, b"null", b"1",
                             b'"x"', b'{"v": 1}', b'{"v": true, "q": 1, "k": 1}',
                             bytes(self.rng.randrange(256) for _ in range(40))])
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if r < 0.7:
            doc = {"v": self.pick([1, 2, True, None, "1", 1.0]),
                   "q": self.pick(["", "0" * 16, self.word()]),
                   "k": self.pick([0, -1, "", "fz0", None, [], {}, 1.5])}
            return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode()
        # a well-formed token of exactly this query, carrying a hostile key
        key: Any
        if key_type is int and self.chance(0.7):
            key = self.pick([0, -1, 1, INT64[0], INT64[1], INT64[1] + 1, 2**64, -(10**30),
                             10**40, self.rng.randint(*INT64)])
        else:
            key = self.pick(["", "fz0", "fz0\x00", "\x00", "\ud800", "\U0001f600", "z" * 400,
                             "\u0130", "'; --", "\\", "fz0\n", 5, True])
        return pagination.encode(query, key)


# request builders, one per RPC ------------------------------------------------------------------
def gen_register(g: Gen) -> Message:
    req = tms_pb2.RegisterTableRequest(table_id=g.table_id(), request_id=g.request_id())
    if g.chance(0.95):
        req.table.CopyFrom(g.table())
    return req


def gen_get_table(g: Gen) -> Message:
    return tms_pb2.GetTableRequest(name=g.table_name())


def list_tables_query(req: tms_pb2.ListTablesRequest) -> dict[str, Any]:
    return {"m": "tables", "format": req.format, "state": req.state, "owner": req.owner,
            "queue": req.queue}


def gen_list_tables(g: Gen) -> Message:
    req = tms_pb2.ListTablesRequest(
        page_size=g.int32((0, 1, 2, 50, 999, 1000, 1001), valid=(0, 1, 2, 3, 50, 1000, 5000)),
        format=g.short_text(("iceberg", "hudi"), valid=("iceberg", "hudi"))
        if g.chance(0.4) else "",
        state=g.enum((0, 1, 2)) if g.chance(0.5) else 0,
        owner=g.text(("team-a", "team-b"), valid=("team-a", "team-b", "")) if g.chance(0.4)
        else "",
        queue=g.short_text(("default",), valid=("default", "q1")) if g.chance(0.3) else "")
    req.page_token = g.page_token(list_tables_query(req), str)
    return req


def gen_update(g: Gen) -> Message:
    req = tms_pb2.UpdateTableRequest()
    if g.chance(0.97):
        t = g.table()
        t.name = g.table_name()
        req.table.CopyFrom(t)
    if g.chance(0.95):
        req.update_mask.CopyFrom(g.field_mask())
    return req


def gen_deregister(g: Gen) -> Message:
    # mostly tables that do not exist, so the seeded ones survive most of the run
    name = g.table_name() if g.chance(0.3) else f"tables/fzd{g.word(hi=6)}"
    return tms_pb2.DeregisterTableRequest(name=name, force=g.chance(0.5))


def gen_pause(g: Gen) -> Message:
    return tms_pb2.PauseTableRequest(name=g.table_name())


def gen_resume(g: Gen) -> Message:
    return tms_pb2.ResumeTableRequest(name=g.table_name())


def gen_commit(g: Gen, bulky: bool = True) -> tms_pb2.NotifyCommitRequest:
    text = g.text if bulky else g.short_text
    table = g.table_name()
    if not bulky and len(table) > 200:  # a big batch should stay under the 4 MB message cap
        table = "tables/fz0"
    commit_id = str(g.rng.randint(0, 10**6)) if g.chance(0.5) else g.word(hi=12)
    req = tms_pb2.NotifyCommitRequest(
        table=table,
        commit_id=text((g.word(), str(g.rng.randint(0, 10**18)), "c" * 256, "c" * 257),
                       valid=(commit_id,)))
    if g.chance(0.5):
        req.commit_time.CopyFrom(g.timestamp())
    if g.chance(0.6):
        req.stats.CopyFrom(tms_pb2.CommitStats(
            files_added=g.int64((0, 1, 10), valid=(0, 1, 7, 10**6)),
            bytes_added=g.int64((0, 1024, 10**15), valid=(0, 1024, 10**12, INT64[1])),
            operation=g.short_text(("append", "overwrite", "delete", "x" * 65),
                                   valid=("append", "overwrite", "delete", ""))))
    return req


def gen_notify(g: Gen) -> Message:
    return gen_commit(g)


def gen_notify_batch(g: Gen) -> Message:
    n = int(g.pick([0, 1, 1, 2, 3, 10, 50, 999, 1000, 1001, g.rng.randint(1, 100)]))
    bulky = n <= 10
    hostility = g.p_bad
    if g.chance(0.5):  # a valid batch but for at most one entry
        g.p_bad = 0.0
    commits = [gen_commit(g, bulky) for _ in range(n)]
    if n and g.p_bad == 0.0:
        g.p_bad = hostility
        commits[g.rng.randrange(n)] = gen_commit(g, bulky)
    return tms_pb2.NotifyCommitsRequest(commits=commits)


def gen_get_op(g: Gen) -> Message:
    return tms_pb2.GetOperationRequest(name=g.op_name())


def list_ops_query(req: tms_pb2.ListOperationsRequest) -> dict[str, Any]:
    def when(ts: timestamp_pb2.Timestamp, present: bool) -> str:
        if not present:
            return str(None)
        try:
            return str(ts.ToDatetime(tzinfo=UTC))
        except (ValueError, OverflowError, OSError):
            return str(None)

    return {"m": "ops", "parent": req.parent, "state": req.state, "action": req.action,
            "after": when(req.created_after, req.HasField("created_after")),
            "before": when(req.created_before, req.HasField("created_before"))}


def gen_list_ops(g: Gen) -> Message:
    req = tms_pb2.ListOperationsRequest(
        parent=g.parent(), page_size=g.int32((0, 1, 2, 50, 1000, 1001), valid=(0, 1, 2, 50)),
        state=g.enum((0, 1, 2, 3, 4, 5)) if g.chance(0.5) else 0,
        action=g.short_text(("compaction", "compaction\n", "x" * 33), valid=("compaction",))
        if g.chance(0.4) else "")
    if g.chance(0.3):
        req.created_after.CopyFrom(g.timestamp())
    if g.chance(0.3):
        req.created_before.CopyFrom(g.timestamp())
    req.page_token = g.page_token(list_ops_query(req), int)
    return req


def gen_cancel(g: Gen) -> Message:
    return tms_pb2.CancelOperationRequest(name=g.op_name())


def gen_retry(g: Gen) -> Message:
    return tms_pb2.RetryOperationRequest(name=g.op_name())


def gen_trigger(g: Gen) -> Message:
    return tms_pb2.TriggerOperationRequest(
        parent=g.table_name(),
        action=g.short_text(("compaction", "expire", "compaction\n", "Compaction"),
                            valid=("compaction",)),
        params=g.string_map({"spark.executor.memory": "1g"} if g.chance(0.5) else {}),
        reason=g.text(("nightly",), valid=("nightly", "")),
        request_id=g.request_id())


def gen_report(g: Gen) -> Message:
    """A job's result report: no bearer token counts, only the attempt's (never known here),
    so every case must end PERMISSION_DENIED, NOT_FOUND, FAILED_PRECONDITION or
    INVALID_ARGUMENT."""
    body = g.text(('{"ok": true, "result": {}}', '{"ok": false, "error": "x"}', "[]",
                   '{"ok": NaN}'), valid=('{"ok": true, "result": {"n": 1}}',))
    return tms_pb2.ReportJobResultRequest(
        operation=g.op_name(), attempt=g.integer(-5, 2**31 - 1, (0, 1, 2), valid=(1, 2)),
        token=g.short_text(("x" * 43, "tok en", ""), valid=("A" * 43,)), result_json=body)


def gen_explain(g: Gen) -> Message:
    return tms_pb2.ExplainTableRequest(name=g.table_name())


def gen_list_queues(g: Gen) -> Message:
    return tms_pb2.ListQueuesRequest()


def gen_table_history(g: Gen) -> Message:
    req = tms_pb2.GetTableHistoryRequest(name=g.table_name())
    if g.chance(0.5):
        req.start_time.CopyFrom(g.timestamp())
    if g.chance(0.5):
        req.end_time.CopyFrom(g.timestamp())
    return req


def gen_fleet_status(g: Gen) -> Message:
    return tms_pb2.GetFleetStatusRequest()


def gen_summarize(g: Gen) -> Message:
    return tms_pb2.SummarizeOperationsRequest(
        parent=g.pick(["", "tables/-", g.table_name()]),
        days=g.int32((0, 1, 7, 90, 91, -1), valid=(1, 7, 90)))


def gen_list_held(g: Gen) -> Message:
    return tms_pb2.ListHeldActionsRequest(
        parent=g.pick(["tables/-", g.table_name(), ""]),
        action=g.short_text(("compaction", "Compaction", "x" * 100), valid=("compaction", "")),
        page_size=g.int32((0, 1, 1000, -1), valid=(0, 10)),
        page_token=g.short_text(("junk", "", "=" * 10), valid=("",)))


def gen_update_queue(g: Gen) -> Message:
    name = g.short_text(("queues/batch", "queues/default", "batch", "queues/", "queues/Bad",
                         "queues/a/b", "queues/" + "q" * 70), valid=("queues/batch",))
    if g.chance(0.3):
        return tms_pb2.UpdateQueueRequest(name=name)
    return tms_pb2.UpdateQueueRequest(
        name=name, max_running=int(g.pick([0, 1, 5, -1, 10_001, 2**31 - 1, -(2**31)])))


# catalogs -----------------------------------------------------------------------------------
CATALOG_NAMES = ("catalogs/fzc", "catalogs/", "catalogs", "catalogs/Bad", "catalogs/a-b",
                 "catalogs/a/b", "catalogs/fzc\n", "catalogs/" + "c" * 70, "tables/fz0",
                 "catalogs/\u0130", "catalogs/fzc/", "catalogs/-", "catalogs/fz%63")
CATALOG_MASK_PATHS = ("properties", "secrets", "storage_options", "allowed_locations",
                      "allowed_owners", "allowed_tokens", "discovery", "default_policy", "type",
                      "name", "table_count", "discovery.enabled", "", "*", "properties.uri")
LOCATIONS = ("s3://lake/wh", "s3://lake/../x", "s3://lake/%252e%252e/x", "file://localhost/x",
             "file://evil/x", "/abs", "rel", "s3://u:p@lake/x", "http://x/y", "")
SECRET_VALUES = ("env:TMS_SECRET_FZ", "env:PATH", "file:fz", "file:../x", "file:/etc/shadow",
                 "hunter2", "env:TMS_SECRET_", "file:a/b", "env:TMS_SECRET_DIR")


def gen_catalog_name(g: Gen) -> str:
    return g.short_text(CATALOG_NAMES,
                        valid=("catalogs/fzc", f"catalogs/fzc{g.rng.randint(0, 5)}"))


def gen_strings(g: Gen, valid: Sequence[str], typical: Sequence[str]) -> list[str]:
    if not g.bad():
        return list(valid)
    n = int(g.pick([0, 1, 2, 5, 65, 300]))
    return [g.text(typical) for _ in range(n)]


def gen_catalog(g: Gen) -> tms_pb2.Catalog:
    """A valid sql catalog with a few fields replaced by hostile values."""
    c = tms_pb2.Catalog(type="sql", properties={"uri": "postgresql+psycopg://tms@db/lake"},
                        secrets={"jdbc.password": "env:TMS_SECRET_FZ"},
                        allowed_locations=["s3://lake/wh"])
    d = c.discovery
    mutations: dict[str, Callable[[], object]] = {
        "type": lambda: setattr(c, "type", g.short_text(("sql", "rest", "hadoop", "SQL", "x"))),
        "properties": lambda: (c.properties.clear(), c.properties.update(g.string_map(
            {"uri": "postgresql+psycopg://tms@db/lake"},
            ("uri", "warehouse", "type", "password", "jdbc.user"),
            ("postgresql://u:p@h/d", "s3://lake/../x", "jdbc:postgresql://h/d", "x?pwd=1")))),
        "secrets": lambda: (c.secrets.clear(), c.secrets.update(g.string_map(
            {"jdbc.password": "env:TMS_SECRET_FZ"}, ("jdbc.password", "uri", "type"),
            SECRET_VALUES))),
        "storage_options": lambda: c.storage_options.update(g.string_map(
            {"s3.region": "eu"}, ("fs.x", "s3.secret-access-key", "spark.x", "hadoop.x"))),
        "allowed_locations": lambda: (c.ClearField("allowed_locations"),
                                      c.allowed_locations.extend(gen_strings(
                                          g, ("s3://lake/wh",), LOCATIONS))),
        "allowed_owners": lambda: c.allowed_owners.extend(gen_strings(g, ("team-a",), ())),
        "allowed_tokens": lambda: c.allowed_tokens.extend(gen_strings(g, ("ops",), ())),
        "include": lambda: d.include.extend(gen_strings(g, ("a.*",), ("[", "a b", "*"))),
        "exclude": lambda: d.exclude.extend(gen_strings(g, ("tmp.*",), ("]", "../x"))),
        "discovery": lambda: (setattr(d, "enabled", g.chance(0.5)),
                              setattr(d, "queue", g.short_text(("default", "Q!")))),
        "discovery_owner": lambda: setattr(d, "owner", g.text(("team-a",))),
        "priority": lambda: setattr(d, "priority", g.int32((-1000, 1000, 1001))),
        "interval_s": lambda: setattr(d, "interval_s", g.int32((0, 9, 10, 86400, 86401))),
        "last_run_time": lambda: d.last_run_time.CopyFrom(g.timestamp()),
        "default_policy": lambda: (c.default_policy.clear(),
                                   c.default_policy.update(g.policy())),
        "create_time": lambda: c.create_time.CopyFrom(g.timestamp()),
        "table_count": lambda: setattr(c, "table_count", g.int64()),
    }
    n = g.rng.randint(1, 4) if g.bad() else 0
    for key in g.rng.sample(sorted(mutations), n):
        mutations[key]()
    return c


def gen_create_catalog(g: Gen) -> Message:
    req = tms_pb2.CreateCatalogRequest(catalog_id=g.short_text(
        ("fzc", "Bad", "a-b", "a" * 64, "1a", "fzc\n"), valid=(f"fzc{g.rng.randint(0, 9)}",)))
    if g.chance(0.95):
        req.catalog.CopyFrom(gen_catalog(g))
    return req


def gen_get_catalog(g: Gen) -> Message:
    return tms_pb2.GetCatalogRequest(name=gen_catalog_name(g))


def gen_list_catalogs(g: Gen) -> Message:
    return tms_pb2.ListCatalogsRequest(page_size=g.int32((0, 1, 2, 1000, 1001, -1)),
                                       page_token=g.page_token({"m": "catalogs"}, str))


def gen_update_catalog(g: Gen) -> Message:
    c = gen_catalog(g)
    c.name = gen_catalog_name(g)
    paths = (g.rng.sample(CATALOG_MASK_PATHS[:8], g.rng.randint(1, 8)) if not g.bad()
             else [g.pick(CATALOG_MASK_PATHS) for _ in range(g.rng.randint(0, 4))])
    return tms_pb2.UpdateCatalogRequest(catalog=c,
                                        update_mask=field_mask_pb2.FieldMask(paths=paths))


def gen_delete_catalog(g: Gen) -> Message:
    return tms_pb2.DeleteCatalogRequest(name=gen_catalog_name(g))


GENERATORS: dict[str, Callable[[Gen], Message]] = {
    "RegisterTable": gen_register, "GetTable": gen_get_table, "ListTables": gen_list_tables,
    "UpdateTable": gen_update, "DeregisterTable": gen_deregister, "PauseTable": gen_pause,
    "ResumeTable": gen_resume, "NotifyCommit": gen_notify, "NotifyCommits": gen_notify_batch,
    "GetOperation": gen_get_op, "ListOperations": gen_list_ops, "CancelOperation": gen_cancel,
    "RetryOperation": gen_retry, "TriggerOperation": gen_trigger, "ExplainTable": gen_explain,
    "ListQueues": gen_list_queues, "UpdateQueue": gen_update_queue,
    "CreateCatalog": gen_create_catalog, "GetCatalog": gen_get_catalog,
    "ListCatalogs": gen_list_catalogs, "UpdateCatalog": gen_update_catalog,
    "DeleteCatalog": gen_delete_catalog, "ReportJobResult": gen_report,
    "GetTableHistory": gen_table_history, "GetFleetStatus": gen_fleet_status,
    "SummarizeOperations": gen_summarize, "ListHeldActions": gen_list_held,
}
WEIGHTS = {"DeregisterTable": 0.3, "PauseTable": 0.5, "ResumeTable": 0.5, "NotifyCommits": 0.7,
           "DeleteCatalog": 0.3}


# metadata -------------------------------------------------------------------------------------
def bearer(token: str) -> list[tuple[str, str | bytes]]:
    return [("authorization", f"Bearer {token}")]


def gen_metadata(g: Gen) -> list[tuple[str, str | bytes]] | None:
    r = g.rng.random()
    if r < 0.55:
        return bearer(TOKENS["admin"])
    if r < 0.75:
        return bearer(TOKENS[g.pick(sorted(TOKENS))])
    garbage = "".join(g.rng.choice(string.ascii_letters + string.digits + string.punctuation)
                      for _ in range(int(g.pick([1, 10, 100, 4090, 4097, 6000]))))
    admin = TOKENS["admin"]
    return g.pick([
        None, [], [("x-other", "1")], [("authorization", "")], [("authorization", "Bearer")],
        [("authorization", "Bearer ")], [("authorization", "bearer")],
        [("authorization", "Basic dXNlcjpwYXNz")], [("authorization", "Basic x")],
        [("authorization", garbage)], [("authorization", f"Bearer {garbage}")],
        [("authorization", f"Bearer  {admin}  ")], [("authorization", f"BEARER {admin}")],
        [("authorization", f"bearer {admin}")], [("authorization", f"Bearer {admin}x")],
        [("authorization", f"Bearer {admin[:-1]}")], [("authorization", f"Token {admin}")],
        [("authorization", admin)], [("authorization", f"Bearer{admin}")],
        [("authorization", f"Bearer {TOKENS['reader']}"), ("authorization", f"Bearer {admin}")],
        [("authorization-bin", b"\xff\x00Bearer"), ("authorization-bin", admin.encode())],
        [("authorization", f"Bearer {admin} {admin}")],
    ])


# raw-bytes requests -------------------------------------------------------------------------
def request_class(method: str) -> type[Message]:
    cls: type[Message] = getattr(tms_pb2, SERVICE.methods_by_name[method].input_type.name)
    return cls


def varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def length_delimited(number: int, payload: bytes) -> bytes:
    return tag(number, 2) + varint(len(payload)) + payload


def gen_raw_payload(g: Gen, method: str) -> bytes:
    valid = GENERATORS[method](g).SerializeToString()
    bad_utf8 = g.pick([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"ok\xfe", b"\x80"])
    kind = g.rng.randrange(12)
    if kind == 0:
        return bytes(g.rng.randrange(256) for _ in range(g.rng.randint(1, 300)))
    if kind == 1:
        return valid[:g.rng.randrange(len(valid))] if valid else b"\x0a"
    if kind == 2:  # invalid UTF-8 in a top-level string field (field 1 of most requests)
        return valid + length_delimited(1, bad_utf8)
    if kind == 3:  # invalid UTF-8 nested: NotifyCommit(s).stats.operation / commits[].table
        if method == "NotifyCommits":
            return length_delimited(1, length_delimited(1, b"tables/fz0" + bad_utf8))
        return length_delimited(4, length_delimited(3, bad_utf8)) + length_delimited(2, b"c1")
    if kind == 4:  # unknown fields appended: must parse
        return valid + tag(99, 0) + varint(5) + length_delimited(1000, b"\x00" * 10)
    if kind == 5:  # length prefix far past the end
        return tag(1, 2) + varint(2**31) + b"abc"
    if kind == 6:
        return b""
    if kind == 7:  # wrong wire type for a known field
        return valid + tag(1, 0) + varint(1) + tag(2, 5) + b"\x00\x00\x00\x00"
    if kind == 8:  # deeply nested groups in an unknown field
        depth = int(g.pick([10, 99, 101, 1000]))
        return tag(1000, 3) * depth + tag(1000, 4) * depth
    if kind == 9:  # an 11-byte varint
        return tag(2, 0) + b"\xff" * 10 + b"\x01"
    if kind == 10:  # a huge enum number / int on every varint field number
        return b"".join(tag(n, 0) + varint(g.pick([2**40, 2**64 - 1, 2**31, 99]))
                        for n in range(1, 8))
    return valid + bytes(g.rng.randrange(256) for _ in range(g.rng.randint(1, 20)))


def decodes(method: str, payload: bytes) -> bool:
    try:
        request_class(method).FromString(payload)
    except DecodeError:
        return False
    return True


# the cases ------------------------------------------------------------------------------------
def build_case(seed: int, index: int, world: World, channel: grpc.Channel,
               stub: tms_pb2_grpc.TableManagementServiceStub) -> Case:
    g = Gen(random.Random(f"{seed}:{index}"), world)
    names = sorted(GENERATORS)
    method = g.rng.choices(names, [WEIGHTS.get(n, 1.0) for n in names])[0]
    metadata = gen_metadata(g)
    if g.chance(RAW_SHARE):
        payload = gen_raw_payload(g, method)
        raw = channel.unary_unary(f"/{SERVICE.full_name}/{method}",
                                  request_serializer=None, response_deserializer=None)
        return Case(index, method,
                    lambda: raw(payload, timeout=CALL_TIMEOUT_S, metadata=metadata),
                    lambda: f"raw {len(payload)} bytes {payload[:200]!r} "
                            f"metadata={metadata!r:.200}",
                    undecodable=not decodes(method, payload))
    request = GENERATORS[method](g)
    fn = getattr(stub, method)
    return Case(index, method,
                lambda: fn(request, timeout=CALL_TIMEOUT_S, metadata=metadata),
                lambda: f"{describe_message(request)} metadata={metadata!r:.200}")


def run_case(case: Case) -> Outcome:
    start = time.monotonic()
    try:
        case.call()
        code, details = grpc.StatusCode.OK, ""
    except grpc.RpcError as e:
        code, details = e.code(), e.details() or ""  # type: ignore[attr-defined]
    elapsed = time.monotonic() - start
    out = Outcome(case.index, case.method, code, details, undecodable=case.undecodable,
                  elapsed_s=elapsed)
    if code in BAD_CODES or elapsed > SLOW_S:
        out.request = case.describe()[:800]
    return out


@dataclass
class Target:
    server: ApiServer
    channel: grpc.Channel
    stub: tms_pb2_grpc.TableManagementServiceStub
    catalog: SqlCatalog


@pytest.fixture
def target(db_dsn: str, tmp_path: Path) -> Iterator[Target]:
    store = PostgresStore(db_dsn)
    catalog = sql_catalog(store, db_dsn, tmp_path / "warehouse")
    server = ApiServer(store, load_formats(), f"127.0.0.1:{free_port()}",
                       auth=Authenticator.from_config(AUTH_CONFIG))
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield Target(server, channel, tms_pb2_grpc.TableManagementServiceStub(channel),
                     catalog)
    finally:
        channel.close()
        server.stop(0)
        store.close()


def seed_world(stub: tms_pb2_grpc.TableManagementServiceStub, catalog: SqlCatalog) -> World:
    admin = bearer(TOKENS["admin"])
    ops: list[str] = []
    stub.CreateCatalog(tms_pb2.CreateCatalogRequest(catalog_id="fzc", catalog=tms_pb2.Catalog(
        type="hadoop", allowed_locations=["s3://lake/wh"])), metadata=admin)
    for table_id, owner, paused in SEED_TABLES:
        stub.RegisterTable(tms_pb2.RegisterTableRequest(
            table_id=table_id, table=catalog.pb("ns", table_id.replace(".", "_"), owner=owner)),
            metadata=admin)
        stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table=f"tables/{table_id}",
                                                      commit_id="1"), metadata=admin)
        op = stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
            parent=f"tables/{table_id}", action="compaction"), metadata=admin)
        ops.append(op.name)
        if table_id in ("fz1", "ot2"):  # a CANCELLED one, so RetryOperation can succeed
            stub.CancelOperation(tms_pb2.CancelOperationRequest(name=op.name), metadata=admin)
        if paused:
            stub.PauseTable(tms_pb2.PauseTableRequest(name=f"tables/{table_id}"),
                            metadata=admin)
    return World([t for t, _, _ in SEED_TABLES], ops)


def tally(outcomes: Sequence[Outcome]) -> Tally:
    t = Tally()
    for o in outcomes:
        t.codes[o.code.name] += 1
        t.by_method[(o.method, o.code.name)] += 1
        t.samples.setdefault(o.code.name, f"{o.method}: {o.details[:200]}")
        if o.code is grpc.StatusCode.RESOURCE_EXHAUSTED and "metadata size" in o.details:
            t.trailers_too_big += 1
        if o.elapsed_s > SLOW_S:
            t.slow.append(o)
        if o.undecodable:
            # grpc alone would answer INTERNAL here; the server's guarded handlers (add_guarded)
            # must turn every such request into INVALID_ARGUMENT
            t.undecodable_codes[o.code.name] += 1
        if o.code in BAD_CODES:
            t.failures.append(o)
    return t


def report(seed: int, elapsed: float, t: Tally) -> str:
    lines = [f"fuzz seed={seed} requests={sum(t.codes.values())} in {elapsed:.1f} s",
             "status codes: " + ", ".join(f"{k}={v}" for k, v in t.codes.most_common()),
             f"undecodable raw requests answered: {dict(t.undecodable_codes)}",
             f"error responses the client could not receive (trailers over its metadata "
             f"limit): {t.trailers_too_big}"]
    for code, sample in sorted(t.samples.items()):
        lines.append(f"  e.g. {code}: {sample}")
    for method in METHODS:
        row = {c: n for (m, c), n in t.by_method.items() if m == method}
        lines.append(f"  {method}: " + ", ".join(f"{c}={n}" for c, n in sorted(row.items())))
    return "\n".join(lines)


def describe_failures(seed: int, failures: Sequence[Outcome], limit: int = 8) -> str:
    distinct: dict[tuple[str, str, str], list[Outcome]] = {}
    for o in failures:
        first_line = o.details.splitlines()[0] if o.details else ""
        shape = re.sub(r"'[^']*'|\d+", "_", first_line)[:160]  # one group per kind of error
        distinct.setdefault((o.method, o.code.name, shape), []).append(o)
    parts = [f"{len(failures)} INTERNAL/UNKNOWN responses ({len(distinct)} distinct) "
             f"with TMS_FUZZ_SEED={seed}:"]
    for (method, code, _), group in list(distinct.items())[:limit]:
        o = group[0]
        parts.append(f"- {method} -> {code} x{len(group)} (first: case {o.index})\n"
                     f"  details: {o.details[:400]}\n  request: {o.request}")
    return "\n".join(parts)


def test_api_survives_fuzzing(target: Target) -> None:
    seed = int(os.environ.get("TMS_FUZZ_SEED", str(random.SystemRandom().randrange(2**32))))
    print(f"TMS_FUZZ_SEED={seed}")
    health = health_pb2_grpc.HealthStub(target.channel)

    def serving() -> bool:
        reply = health.Check(health_pb2.HealthCheckRequest(service=SERVICE.full_name),
                             timeout=CALL_TIMEOUT_S)
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    wait_for(serving, "the API to report SERVING", timeout_s=30)
    world = seed_world(target.stub, target.catalog)
    assert set(GENERATORS) == set(METHODS), "every RPC of the service must be fuzzed"

    start = time.monotonic()
    with ThreadPoolExecutor(THREADS) as pool:
        outcomes = list(pool.map(
            lambda i: run_case(build_case(seed, i, world, target.channel, target.stub)),
            range(REQUESTS)))
    elapsed = time.monotonic() - start
    result = tally(outcomes)
    summary = report(seed, elapsed, result)
    print(summary)
    for o in result.slow:
        print(f"slow: {o.elapsed_s:.1f} s, {o.method} -> {o.code.name}, case {o.index}: "
              f"{o.request}")

    # the server is still alive and still works
    assert serving(), "health check is not SERVING after fuzzing"
    admin = bearer(TOKENS["admin"])
    table_id = f"final.check-{seed}"
    got = target.stub.RegisterTable(tms_pb2.RegisterTableRequest(
        table_id=table_id, table=target.catalog.pb("ns", f"final_{seed}")), metadata=admin,
        timeout=CALL_TIMEOUT_S)
    assert got.name == f"tables/{table_id}"
    ack = target.stub.NotifyCommit(tms_pb2.NotifyCommitRequest(
        table=got.name, commit_id="2"), metadata=admin, timeout=CALL_TIMEOUT_S)
    assert not ack.duplicate
    again = target.stub.GetTable(tms_pb2.GetTableRequest(name=got.name), metadata=admin,
                                 timeout=CALL_TIMEOUT_S)
    assert again.commit_count == 1 and again.last_commit_id == "2"

    assert len(outcomes) == REQUESTS
    assert result.trailers_too_big == 0, "an error too large for the client to receive"
    assert result.undecodable_codes, "no undecodable requests were sent: the generator broke"
    assert set(result.undecodable_codes) == {"INVALID_ARGUMENT"}, result.undecodable_codes
    if result.failures:
        pytest.fail(describe_failures(seed, result.failures) + "\n" + summary, pytrace=False)
