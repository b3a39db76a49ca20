"""Per-partition statistics of an Iceberg table, read from its manifests with pyiceberg.

Table-wide counts cannot tell whether a compaction merges anything: twelve small files in
twelve partitions are twelve files no rewrite can merge. So inspection sums, per partition of
each partition spec, the live data files (all, small, and those below the rewrite size), their
bytes and records, and the position and equality delete files that apply to them; and, for
the files below the rewrite size, how many and how many bytes fall in each power-of-two size
class (``size_tiers``): size-tiered planning (``tiers``) merges the smaller classes
without rewriting the larger ones.

Manifests are immutable: the statistics of one manifest, keyed by its path (and the size
limits they were counted with), are cached, so inspecting a table again reads only the
manifests its new snapshots added. ``reads`` counts manifest reads, for tests and benches.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from tms.formats.iceberg import avro as iceberg_avro

MANIFEST_CACHE_ENTRIES = 4096
_EPOCH_DATE = date(1970, 1, 1)
DATA, POSITION_DELETES, EQUALITY_DELETES = 0, 1, 2
# A partition value as it travels in metrics and parameters: JSON scalars only.
Scalar = int | float | str | bool | None
PartitionKey = tuple[int, tuple[Scalar, ...]]  # (spec id, values in the spec's field order)


@dataclass
class PartitionStats:
    """What one partition (of one spec) holds. ``rewrite_*`` count data files below the
    rewrite size (``min-file-ratio`` x target): those a merge would rewrite; files at or above
    it are left alone unless deletes call for it."""

    data_files: int = 0
    small_files: int = 0
    small_bytes: int = 0
    rewrite_files: int = 0
    rewrite_bytes: int = 0
    rewrite_max_bytes: int = 0  # the largest of those: what a merge would rewrite again
    bytes: int = 0
    records: int = 0
    position_delete_files: int = 0
    position_delete_bytes: int = 0  # what a position-delete rewrite of the partition reads
    equality_delete_files: int = 0
    deleted_rows: int = 0  # rows named by position deletes (an upper bound: some may dangle)
    equality_deleted_rows: int = 0  # keys in equality deletes (an estimate: one row per key)
    max_sequence: int = 0  # of its live files: tells which partitions changed since a time
    # files below the rewrite size by size class: {size.bit_length(): [files, bytes]} (a class
    # holds sizes in [2^(c-1), 2^c)); empty when unknown (then one class: all of them)
    size_tiers: dict[int, list[int]] = field(default_factory=dict)

    def add(self, other: PartitionStats) -> None:
        for f in fields(self):
            if f.name == "size_tiers":
                for c, (n, b) in other.size_tiers.items():
                    mine = self.size_tiers.setdefault(c, [0, 0])
                    mine[0] += n
                    mine[1] += b
            elif f.name in _MAXIMA:
                setattr(self, f.name, max(getattr(self, f.name), getattr(other, f.name)))
            else:
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    @property
    def delete_files(self) -> int:
        return self.position_delete_files + self.equality_delete_files

    @property
    def delete_ratio(self) -> float:
        """Share of the partition's rows its deletes hide: the rows position deletes name, plus
        one row per equality-delete key (what an upsert stream writes; the true count is only
        known by reading the data)."""
        hidden = self.deleted_rows + self.equality_deleted_rows
        return min(1.0, hidden / self.records) if self.records else 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)
                               if f.name != "size_tiers"}
        if self.size_tiers:
            out["size_tiers"] = [[c, n, b] for c, (n, b) in sorted(self.size_tiers.items())]
        return out


_MAXIMA = ("max_sequence", "rewrite_max_bytes")


@dataclass(frozen=True)
class Limits:
    """The sizes files are classified by; part of the cache key."""

    small_bytes: int  # compaction.small-file-bytes
    rewrite_bytes: int  # min-file-ratio x target-file-size-bytes


def scalar(value: Any) -> Scalar:
    """A partition value as a JSON scalar: dates as days and timestamps as microseconds since
    the epoch (Iceberg's own representation), decimals, UUIDs and bytes as text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime):
        return int(value.timestamp() * 1_000_000)
    if isinstance(value, date):
        return (value - _EPOCH_DATE).days
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, Decimal | uuid.UUID):
        return str(value)
    return str(value)


def _key(spec_id: int, partition: Any) -> PartitionKey:
    values = tuple(scalar(partition[i]) for i in range(len(partition))) if partition else ()
    return (int(spec_id), values)


def manifest_stats(entries: Iterable[Any], spec_id: int, limits: Limits
                   ) -> dict[PartitionKey, PartitionStats]:
    """Per-partition statistics of one manifest's live entries."""
    out: dict[PartitionKey, PartitionStats] = {}
    for entry in entries:
        df = entry.data_file
        own = getattr(df, "spec_id", None)  # inherited from the manifest when absent
        key = _key(spec_id if own is None else int(own), df.partition)
        st = out.setdefault(key, PartitionStats())
        size, content = int(df.file_size_in_bytes), int(df.content)
        st.max_sequence = max(st.max_sequence, int(entry.sequence_number or 0))
        if content == DATA:
            st.data_files += 1
            st.bytes += size
            st.records += int(df.record_count)
            if size < limits.small_bytes:
                st.small_files += 1
                st.small_bytes += size
            if size < limits.rewrite_bytes:
                st.rewrite_files += 1
                st.rewrite_bytes += size
                st.rewrite_max_bytes = max(st.rewrite_max_bytes, size)
                tier = st.size_tiers.setdefault(size.bit_length(), [0, 0])
                tier[0] += 1
                tier[1] += size
        elif content == POSITION_DELETES:
            st.position_delete_files += 1
            st.position_delete_bytes += size
            st.deleted_rows += int(df.record_count)
        elif content == EQUALITY_DELETES:
            st.equality_delete_files += 1
            st.equality_deleted_rows += int(df.record_count)
    return out


class ManifestCache:
    """A thread-safe LRU of per-manifest statistics keyed by (manifest path, limits).
    ``read`` gives a manifest's live entries (``avro.live_entries``; fakes in tests)."""

    def __init__(self, entries: int = MANIFEST_CACHE_ENTRIES,
                 read: Callable[[Any, Any], Iterable[Any]] = iceberg_avro.live_entries) -> None:
        self._max = entries
        self._read = read
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[str, Limits], dict[PartitionKey, PartitionStats]] = \
            OrderedDict()
        self.reads = 0  # manifests read (cache misses)

    def get(self, manifest: Any, io: Any, limits: Limits
            ) -> dict[PartitionKey, PartitionStats]:
        key = (str(manifest.manifest_path), limits)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        # read outside the lock: two threads may read the same manifest once each
        stats = manifest_stats(self._read(manifest, io),
                               int(manifest.partition_spec_id), limits)
        with self._lock:
            self.reads += 1
            self._items[key] = stats
            self._items.move_to_end(key)
            while len(self._items) > self._max:
                self._items.popitem(last=False)
        return stats

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


CACHE = ManifestCache()


def table_partitions(manifests: Iterable[Any], io: Any, limits: Limits,
                     cache: ManifestCache = CACHE) -> dict[PartitionKey, PartitionStats]:
    """Per-partition statistics of a snapshot's manifests (summed over them)."""
    total: dict[PartitionKey, PartitionStats] = {}
    for manifest in manifests:
        for key, st in cache.get(manifest, io, limits).items():
            total.setdefault(key, PartitionStats()).add(st)
    return {k: v for k, v in total.items() if v.data_files or v.delete_files}


def spec_fields(metadata: Any) -> dict[int, list[list[str]]]:
    """``{spec id: [[source column, transform, source type], ...]}`` of every partition spec,
    so planning can name partitions and tell which ones a job can select with a filter."""
    schema = metadata.schema()
    out: dict[int, list[list[str]]] = {}
    for spec in metadata.partition_specs:
        rows = []
        for f in spec.fields:
            try:
                column = schema.find_column_name(f.source_id) or f"#{f.source_id}"
                kind = str(schema.find_type(f.source_id))
            except ValueError:  # the source column was dropped
                column, kind = f"#{f.source_id}", "unknown"
            rows.append([column, str(f.transform), kind])
        out[int(spec.spec_id)] = rows
    return out


def encode(parts: Mapping[PartitionKey, PartitionStats]) -> list[dict[str, Any]]:
    """The statistics as plain JSON-able rows (hidden metrics: planning reads them)."""
    return [{"spec": k[0], "values": list(k[1]), **v.to_json()} for k, v in parts.items()]


def decode(rows: Iterable[Mapping[str, Any]]) -> dict[PartitionKey, PartitionStats]:
    names = {f.name for f in fields(PartitionStats)} - {"size_tiers"}
    return {(int(r["spec"]), tuple(r["values"])):
            PartitionStats(**{k: int(v) for k, v in r.items() if k in names},
                           size_tiers={int(c): [int(n), int(b)]
                                       for c, n, b in r.get("size_tiers") or ()})
            for r in rows}
