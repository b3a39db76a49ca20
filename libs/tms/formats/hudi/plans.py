"""The pending plans on a Hudi timeline, decoded: what Hudi's utilities will execute first.

Every Hudi write client finishes the plans it finds pending before (or instead of) its own:
HoodieCleaner runs pending cleans and rolls back failed writes, HoodieCompactor and
HoodieClusteringJob run pending compactions and clusterings, and all of them execute pending
rollbacks. A plan is written by the table's writers, who are not trusted, so TMS reads each
one before it starts a utility (:mod:`tms.formats.hudi.plan_guard` checks what they name).

A plan is the ``.requested`` (and for some releases also the ``.inflight``) file of a pending
instant: an Avro object container file (``Obj\\x01``, the writer's schema in its header) holding
one record, or an empty file where the action has no plan. Decoding is generic (fastavro, the
file's own schema), so every Hudi release's plan reads the same way. Hostile input is bounded:
a file above ``MAX_PLAN_BYTES`` is refused from its listed size and never read whole; only the
``null`` codec Hudi writes is accepted (no decompression bombs); a schema whose arrays could
hold zero-byte items (a count of 2^62 costing no input) is refused; only the first record is
read (Hudi reads no other). Anything else that fails to decode is a refusal, not a crash.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any

from tms.formats.storage import StorageError, Store

MAX_PLAN_BYTES = 16 << 20  # a plan larger than this is refused, not read
AVRO_MAGIC = b"Obj\x01"
ACCEPTED_CODECS = frozenset({"null"})  # what Hudi's TimelineMetadataUtils writes
# pending actions whose files are plans some utility executes, and the actions a completed
# instant of each is named by (a compaction completes as a commit, a clustering as a
# replacecommit, a log compaction as a deltacommit)
PLAN_ACTIONS: dict[str, frozenset[str]] = {
    "clean": frozenset({"clean"}),
    "rollback": frozenset({"rollback"}),
    "restore": frozenset({"restore"}),
    "compaction": frozenset({"commit", "compaction"}),
    "logcompaction": frozenset({"deltacommit", "logcompaction"}),
    "clustering": frozenset({"replacecommit", "clustering"}),
    "replacecommit": frozenset({"replacecommit"}),
    "indexing": frozenset({"indexing"}),
}
# an inflight file that holds commit metadata as JSON (table version 6), not a plan
JSON_INFLIGHT_ACTIONS = frozenset({"replacecommit"})
_PENDING_RE = re.compile(r"(\d{14,})\.([a-z]+)\.(requested|inflight)")
_COMPLETED_RE = re.compile(r"(\d{14,})(?:_\d{14,})?\.([a-z]+)")


class PlanRefused(ValueError):
    """A pending plan cannot be read or names what it must not: no Hudi utility may run."""


@dataclass(frozen=True)
class PendingPlan:
    """One decoded plan file of a pending instant."""

    instant: str
    action: str
    state: str  # "requested" or "inflight"
    name: str  # the file's name in the timeline directory
    schema_name: str
    record: Any  # the first record, as fastavro decodes it (dicts, lists, str, bytes ...)

    @property
    def label(self) -> str:
        return f"{self.instant} {self.action} ({self.name})"


def read_pending(store: Store, timeline_dir: str, max_bytes: int = MAX_PLAN_BYTES
                 ) -> list[PendingPlan]:
    """The decoded plans of every pending instant of the actions in PLAN_ACTIONS, oldest
    first; empty plan files are skipped. PlanRefused names the first file that cannot be
    used; StorageError when the directory or a file cannot be read (may pass)."""
    entries = store.list_dir(timeline_dir)
    completed: set[tuple[str, str]] = set()
    for e in entries:
        if m := _COMPLETED_RE.fullmatch(e.name):
            completed.add((m[1], m[2]))
    out = []
    for e in sorted(entries, key=lambda e: e.name):
        m = _PENDING_RE.fullmatch(e.name)
        if m is None or m[2] not in PLAN_ACTIONS:
            continue
        instant, action, state = m[1], m[2], m[3]
        if any((instant, done) in completed for done in PLAN_ACTIONS[action]):
            continue  # executed already: nothing runs it again
        where = f"pending {action} {instant} ({e.name})"
        if not e.is_file:
            raise PlanRefused(f"{where} is not a regular file (a symlink or a directory)")
        if e.size > max_bytes:
            raise PlanRefused(f"{where} is {e.size} bytes, above the {max_bytes} a plan may "
                              "have")
        data = store.read(store.join(timeline_dir, e.name), max_bytes)
        if not data:
            continue
        if not data.startswith(AVRO_MAGIC):
            if state == "inflight" and action in JSON_INFLIGHT_ACTIONS and data[:1] == b"{":
                continue  # the commit metadata of an insert_overwrite (version 6), no plan
            raise PlanRefused(f"{where} is not an Avro container file "
                              f"(starts with {data[:8]!r})")
        schema_name, record = decode(data, where)
        out.append(PendingPlan(instant, action, state, e.name, schema_name, record))
    return out


def decode(data: bytes, where: str) -> tuple[str, Any]:
    """(the writer schema's name, the first record) of one Avro container file, bounded as
    the module doc says; PlanRefused names ``where`` and what is wrong."""
    from fastavro import reader

    try:
        rd = reader(io.BytesIO(data))
        codec = rd.metadata.get("avro.codec", "null") or "null"
        if codec not in ACCEPTED_CODECS:
            raise PlanRefused(f"{where}: Avro codec {codec[:20]!r} is not accepted (Hudi "
                              "writes plans uncompressed)")
        schema = rd.writer_schema
        if not _bounded(schema, {}):
            raise PlanRefused(f"{where}: its schema has an array of items that take no bytes "
                              "(a count that costs no input)")
        record = next(iter(rd), None)
    except PlanRefused:
        raise
    except Exception as e:  # fastavro raises many kinds on garbage (RecursionError too)
        raise PlanRefused(f"{where} cannot be decoded as Avro: {type(e).__name__}: "
                          f"{str(e)[:200]}") from None
    if record is None:
        raise PlanRefused(f"{where} holds no record")
    name = schema.get("name", "") if isinstance(schema, dict) else str(schema)
    return str(name), record


def _bounded(schema: Any, named: dict[str, int]) -> bool:
    """Whether every array in ``schema`` has items of at least one byte each."""
    ok = True

    def size(s: Any, depth: int = 0) -> int:
        nonlocal ok
        if depth > 64:
            raise RecursionError("schema nested deeper than 64")
        if isinstance(s, str):
            return named.get(s, 1) if s != "null" else 0
        if isinstance(s, list):  # a union: its branch index is at least one byte
            for branch in s:
                size(branch, depth + 1)
            return 1
        if not isinstance(s, dict):
            return 1
        kind = s.get("type")
        if isinstance(kind, (dict, list)):
            return size(kind, depth + 1)
        n = 1
        if kind == "null":
            n = 0
        elif kind == "fixed":
            n = int(s.get("size", 0))
        elif kind == "record" or kind == "error":
            named[str(s.get("name", ""))] = 1  # a recursive reference: assume non-empty
            n = sum(size(f.get("type"), depth + 1) for f in s.get("fields", []))
        elif kind == "array":
            if size(s.get("items"), depth + 1) == 0:
                ok = False
        elif kind == "map":
            size(s.get("values"), depth + 1)
        if kind in ("record", "error", "fixed", "enum") and s.get("name"):
            named[str(s["name"])] = n
        return n

    size(schema)
    return ok


__all__ = ["MAX_PLAN_BYTES", "PLAN_ACTIONS", "PendingPlan", "PlanRefused", "StorageError",
           "decode", "read_pending"]
