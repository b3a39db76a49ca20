"""Metrics of Iceberg tables not changed since their last inspection, reused.

An Iceberg table's state is its current metadata file: a metadata file is never rewritten, so
a table whose catalog still names the file last inspected has the same snapshots, manifests
and location. Its metrics are reused when the policy in force is also the same (thresholds
such as ``compaction.small-file-bytes`` shape the metrics), and no metadata file is read.

Metrics that depend on the clock carry ``_valid_until_s`` (epoch seconds, a hidden metric):
a table still quiet for less than ``compaction.quiet-s`` counts its small files only once it
has been quiet that long, so its entry expires then and the quiet rule still fires.

Bounded (least recently used out first) and thread-safe: the scheduler's decision threads
share one.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tms.formats.iceberg.policy import Measured

MAX_UNCHANGED_ENTRIES = 100_000
VALID_UNTIL = "_valid_until_s"

Key = tuple[str, tuple[str, ...]]  # (catalog fingerprint, table identifier)


def policy_digest(policy: Mapping[str, str]) -> str:
    return json.dumps(sorted(policy.items()), separators=(",", ":"))


@dataclass(frozen=True)
class Seen:
    metadata_location: str
    table_location: str
    policy: str  # policy_digest of the policy in force then
    metrics: dict[str, Any]
    valid_until_s: float | None
    public: Mapping[str, Any]  # the metrics without their "_" keys, worked out once


class UnchangedTables:
    def __init__(self, max_entries: int = MAX_UNCHANGED_ENTRIES,
                 clock: Callable[[], float] = time.time) -> None:
        self.max_entries = max_entries
        self._clock = clock
        self._seen: OrderedDict[Key, Seen] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0  # metrics reused (for tests and the bench)

    def __len__(self) -> int:
        return len(self._seen)

    def knows(self, key: Key) -> bool:
        """Whether the table was inspected before (whatever its metadata file then)."""
        return key in self._seen

    def _get(self, key: Key, metadata_location: str) -> Seen | None:
        with self._lock:
            seen = self._seen.get(key)
            if seen is None or seen.metadata_location != metadata_location:
                return None
            self._seen.move_to_end(key)
            return seen

    def table_location(self, key: Key, metadata_location: str) -> str | None:
        """The table's location if ``metadata_location`` is the file last inspected."""
        seen = self._get(key, metadata_location)
        return None if seen is None else seen.table_location

    def metrics(self, key: Key, metadata_location: str, policy: Mapping[str, str]
                ) -> dict[str, Any] | None:
        """The last metrics (a copy, with their public part as the rules see it) if the
        table and its policy are unchanged and they have not expired; else None."""
        seen = self._get(key, metadata_location)
        if seen is None or seen.policy != policy_digest(policy):
            return None
        if seen.valid_until_s is not None and self._clock() >= seen.valid_until_s:
            return None
        with self._lock:
            self.hits += 1
        return Measured(seen.metrics, seen.public)

    def remember(self, key: Key, metadata_location: str, table_location: str,
                 policy: Mapping[str, str], metrics: Mapping[str, Any]) -> None:
        if self.max_entries <= 0:
            return
        until = metrics.get(VALID_UNTIL)
        seen = Seen(metadata_location, table_location, policy_digest(policy), dict(metrics),
                    float(until) if until is not None else None,
                    {k: v for k, v in metrics.items() if not k.startswith("_")})
        with self._lock:
            self._seen[key] = seen
            self._seen.move_to_end(key)
            while len(self._seen) > self.max_entries:
                self._seen.popitem(last=False)

    def forget(self, key: Key) -> None:
        with self._lock:
            self._seen.pop(key, None)


def valid_until_s(metrics: Mapping[str, Any], quiet_s: int, now_s: float) -> float | None:
    """When metrics measured at ``now_s`` stop holding: the moment the table has been quiet
    for ``quiet_s`` (its small files then count), if that is still ahead; the earlier of that
    and any ``_valid_until_s`` the measurement set itself. None: valid until it changes."""
    own = metrics.get(VALID_UNTIL)
    candidates = [float(own)] if own is not None else []
    last_ms = metrics.get("last_commit_ms")
    if quiet_s and last_ms is not None:
        quiet_at = float(last_ms) / 1000 + quiet_s
        if quiet_at > now_s:
            candidates.append(quiet_at)
    return min(candidates, default=None)
