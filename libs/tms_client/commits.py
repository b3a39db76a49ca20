"""A commit as the writer knows it, its wire form, and batching to the API's limit.

``check_commit`` repeats only the cheap, stable parts of the API's validation (table id shape,
commit id length and characters). The server stays the authority; the check exists so the
fire-and-forget notifier can drop one bad commit instead of having the API refuse a whole
batch of good ones because of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from tms.v1 import tms_pb2
from tms_client.errors import FieldViolation, TmsError, from_status

MAX_BATCH_COMMITS = 1000  # NotifyCommits takes 1..1000 commits per call
MAX_COMMIT_ID_CHARS = 256
MAX_OPERATION_CHARS = 64
TABLE_ID_RE = re.compile(r"[a-z][a-z0-9_.-]{0,62}")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_ENTRY_RE = re.compile(r"commits\[(\d+)\]")
TABLE_PREFIX = "tables/"


def table_name(table: str) -> str:
    """``tables/{id}`` for a table id; a name that already has the prefix is kept."""
    return table if table.startswith(TABLE_PREFIX) else f"{TABLE_PREFIX}{table}"


def table_id_of(name: str) -> str:
    return name[len(TABLE_PREFIX):] if name.startswith(TABLE_PREFIX) else name


@dataclass(frozen=True)
class Commit:
    """One commit of one table: an Iceberg snapshot id, a Hudi instant time, ...

    The API's CommitStats has no field presence: when any stat is given, the unknown ones
    are sent (and stored) as 0 / "".
    """

    table_id: str
    commit_id: str
    commit_time: datetime | None = None
    files_added: int | None = None
    bytes_added: int | None = None
    operation: str = ""

    def to_proto(self) -> tms_pb2.NotifyCommitRequest:
        req = tms_pb2.NotifyCommitRequest(table=table_name(self.table_id),
                                          commit_id=self.commit_id)
        if self.commit_time is not None:
            when = self.commit_time
            if when.tzinfo is None:  # naive times are taken as UTC, not as local time
                when = when.replace(tzinfo=UTC)
            ts = Timestamp()
            ts.FromDatetime(when)
            req.commit_time.CopyFrom(ts)
        if self.files_added is not None or self.bytes_added is not None or self.operation:
            req.stats.CopyFrom(tms_pb2.CommitStats(files_added=self.files_added or 0,
                                                   bytes_added=self.bytes_added or 0,
                                                   operation=self.operation))
        return req


@dataclass(frozen=True)
class CommitResult:
    """What the API said about one commit of a batch: stored, a replay, or refused."""

    commit: Commit
    duplicate: bool = False
    error: TmsError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def check_commit(commit: Commit) -> str | None:
    """A problem the API would refuse this commit for, in words, or None."""
    tid = table_id_of(commit.table_id)
    if not TABLE_ID_RE.fullmatch(tid):
        return f"table_id must match {TABLE_ID_RE.pattern}, got {tid[:80]!r}"
    if not 1 <= len(commit.commit_id) <= MAX_COMMIT_ID_CHARS:
        return f"commit_id must have 1 to {MAX_COMMIT_ID_CHARS} characters"
    if _CONTROL_RE.search(commit.commit_id):
        return "commit_id must not contain control characters"
    if (commit.files_added or 0) < 0 or (commit.bytes_added or 0) < 0:
        return "files_added and bytes_added must not be negative"
    if len(commit.operation) > MAX_OPERATION_CHARS or _CONTROL_RE.search(commit.operation):
        return f"operation must be at most {MAX_OPERATION_CHARS} printable characters"
    return None


def chunks(commits: Sequence[Commit], size: int = MAX_BATCH_COMMITS) -> Iterator[list[Commit]]:
    """The commits in order, in slices the API accepts in one NotifyCommits call."""
    if not 1 <= size <= MAX_BATCH_COMMITS:
        raise ValueError(f"batch size must be 1..{MAX_BATCH_COMMITS}")
    for start in range(0, len(commits), size):
        yield list(commits[start:start + size])


def batch_request(commits: Sequence[Commit]) -> tms_pb2.NotifyCommitsRequest:
    return tms_pb2.NotifyCommitsRequest(commits=[c.to_proto() for c in commits])


def batch_results(commits: Sequence[Commit],
                  response: tms_pb2.NotifyCommitsResponse) -> list[CommitResult]:
    """Pair each commit with its result (the API answers one per entry, in order)."""
    if len(response.results) != len(commits):
        raise ValueError(f"NotifyCommits answered {len(response.results)} results "
                         f"for {len(commits)} commits")
    return [CommitResult(c, r.duplicate, from_status(r.error) if r.HasField("error") else None)
            for c, r in zip(commits, response.results, strict=True)]


def split_refused(commits: Sequence[Commit], violations: Sequence[FieldViolation]
                  ) -> tuple[list[Commit], list[Commit]]:
    """(kept, refused): the entries of a refused batch its ``commits[i].`` violations name."""
    bad = {int(m.group(1)) for v in violations if (m := _ENTRY_RE.match(v.field))}
    return ([c for i, c in enumerate(commits) if i not in bad],
            [c for i, c in enumerate(commits) if i in bad])
