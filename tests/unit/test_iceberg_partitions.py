"""Partition-aware planning of Iceberg compaction: per-partition statistics from manifests
(with the manifest cache), the plan and its rules, and the job's partition filter under attack.
Fakes stand in for pyiceberg's manifests; the real tables are in tests/integration."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from tms.formats import iceberg_stats
from tms.formats.iceberg_stats import Limits, ManifestCache, PartitionStats, table_partitions

MIB = 1 << 20
LIMITS = Limits(small_bytes=16 * MIB, rewrite_bytes=96 * MIB)


@dataclass
class FakeFile:
    partition: tuple[Any, ...]
    size: int
    content: int = 0
    records: int = 100
    spec_id: int | None = None

    @property
    def file_size_in_bytes(self) -> int:
        return self.size

    @property
    def record_count(self) -> int:
        return self.records


@dataclass
class FakeEntry:
    data_file: FakeFile
    sequence_number: int = 1


@dataclass
class FakeManifest:
    manifest_path: str
    files: list[FakeFile]
    partition_spec_id: int = 0
    sequence: int = 1
    fetched: list[str] = field(default_factory=list)

    def fetch_manifest_entry(self, io: Any, discard_deleted: bool = True) -> list[FakeEntry]:
        assert discard_deleted  # only live files count
        self.fetched.append(self.manifest_path)
        return [FakeEntry(f, self.sequence) for f in self.files]


# statistics ---------------------------------------------------------------------------------
def test_stats_per_partition_and_spec() -> None:
    m1 = FakeManifest("m1", [FakeFile((1,), MIB), FakeFile((1,), 2 * MIB),
                             FakeFile((2,), 100 * MIB), FakeFile((2,), 50 * MIB)])
    m2 = FakeManifest("m2", [FakeFile((1,), 10, content=1, records=30),
                             FakeFile((2,), 10, content=2)], sequence=2)
    m3 = FakeManifest("m3", [FakeFile(("a", 7), MIB)], partition_spec_id=1)
    parts = table_partitions([m1, m2, m3], None, LIMITS, ManifestCache())
    p1, p2, p3 = parts[(0, (1,))], parts[(0, (2,))], parts[(1, ("a", 7))]
    assert (p1.data_files, p1.small_files, p1.small_bytes, p1.bytes) == (2, 2, 3 * MIB, 3 * MIB)
    assert (p1.position_delete_files, p1.deleted_rows, p1.max_sequence) == (1, 30, 2)
    assert p1.delete_ratio == pytest.approx(0.15)
    assert (p2.small_files, p2.rewrite_files, p2.rewrite_bytes) == (0, 1, 50 * MIB)
    assert p2.equality_delete_files == 1 and p2.delete_files == 1
    assert p3.data_files == 1 and len(parts) == 3


def test_cache_reads_only_new_manifests() -> None:
    cache = ManifestCache()
    m1, m2 = FakeManifest("m1", [FakeFile((1,), MIB)]), FakeManifest("m2", [FakeFile((1,), MIB)])
    table_partitions([m1], None, LIMITS, cache)
    assert cache.reads == 1
    parts = table_partitions([m1, m2], None, LIMITS, cache)  # a new snapshot added m2
    assert cache.reads == 2 and m1.fetched == ["m1"] and m2.fetched == ["m2"]
    assert parts[(0, (1,))].small_files == 2
    table_partitions([m1, m2], None, Limits(MIB // 2, MIB), cache)  # other limits: read again
    assert cache.reads == 4


def test_cache_is_bounded_lru() -> None:
    cache = ManifestCache(entries=2)
    ms = [FakeManifest(f"m{i}", [FakeFile((i,), MIB)]) for i in range(3)]
    for m in ms:
        cache.get(m, None, LIMITS)
    assert len(cache) == 2
    cache.get(ms[2], None, LIMITS)
    assert cache.reads == 3  # m2 still cached
    cache.get(ms[0], None, LIMITS)
    assert cache.reads == 4  # m0 was evicted
    assert iceberg_stats.MANIFEST_CACHE_ENTRIES == 4096


def test_partition_values_become_json_scalars() -> None:
    when = datetime(2026, 1, 2, tzinfo=UTC)
    m = FakeManifest("m", [FakeFile((when.date(), when, b"\x01", None), MIB)])
    (key,) = table_partitions([m], None, LIMITS, ManifestCache())
    assert key == (0, (20455, 1767312000000000, "01", None))
    rows = iceberg_stats.encode({key: PartitionStats(data_files=1)})
    assert json.loads(json.dumps(rows)) == rows
    assert iceberg_stats.decode(rows) == {key: PartitionStats(data_files=1)}
