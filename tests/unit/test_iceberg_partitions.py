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


# the partitions parameter and the job's filter -------------------------------------------------
from tms.formats.iceberg import IcebergFormat  # noqa: E402
from tms.jobs import JOB_SUPPORT_FILES  # noqa: E402
from tms.jobs import iceberg_maintenance as job  # noqa: E402
from tms.jobs.partition_filter import (  # noqa: E402
    FieldInfo,
    PartitionFilterError,
    PartitionRef,
    build_where,
    encode_partitions,
    parse_partitions,
)

DAY = [FieldInfo("ts", "day", "timestamptz")]
SPECS = {0: DAY, 1: [FieldInfo("kind", "identity", "string"), FieldInfo("n", "identity", "long")],
         2: [FieldInfo("id", "bucket[16]", "long")], 3: [FieldInfo("d", "month", "date")],
         4: [FieldInfo("t", "hour", "timestamp")], 5: []}


def test_where_for_day_partitions_is_a_typed_range() -> None:
    refs = parse_partitions("[[0,[20455]],[0,[null]]]")
    assert build_where(refs, SPECS) == (
        "((`ts` >= TIMESTAMP '2026-01-02 00:00:00+00:00' AND "
        "`ts` < TIMESTAMP '2026-01-03 00:00:00+00:00')) OR (`ts` IS NULL)")


def test_where_for_identity_month_and_hour() -> None:
    assert build_where(parse_partitions('[[1,["a",7]]]'), SPECS) == "(`kind` = 'a' AND `n` = 7)"
    assert build_where(parse_partitions("[[3,[673]]]"), SPECS) == (
        "((`d` >= DATE '2026-02-01' AND `d` < DATE '2026-03-01'))")
    assert build_where(parse_partitions("[[4,[0]]]"), SPECS) == (
        "((`t` >= TIMESTAMP_NTZ '1970-01-01 00:00:00' AND "
        "`t` < TIMESTAMP_NTZ '1970-01-01 01:00:00'))")


def test_other_transforms_and_unpartitioned_mean_the_whole_table() -> None:
    assert build_where(parse_partitions("[[2,[3]]]"), SPECS) is None
    assert build_where(parse_partitions("[[0,[1]],[2,[3]]]"), SPECS) is None
    assert build_where(parse_partitions("[[5,[]]]"), SPECS) is None


@pytest.mark.parametrize("value", [
    "x' OR 1=1 --", "a\\' OR 1=1", "') OR ('1'='1", "`; DROP TABLE t; --", "ünïcødé ✓ 日本",
    "\\", "'", "a\\\\'b"])
def test_hostile_strings_stay_inside_one_literal(value: str) -> None:
    raw = encode_partitions([PartitionRef(1, (value, 1))])
    where = build_where(parse_partitions(raw), SPECS)
    assert where is not None
    # the literal, unescaped the way Spark reads it, is exactly the value
    literal = where[len("(`kind` = "):-len(" AND `n` = 1)")]
    assert literal[0] == literal[-1] == "'"
    body, out, i = literal[1:-1], [], 0
    while i < len(body):
        if body[i] == "\\":
            out.append(body[i + 1])
            i += 2
        else:
            assert body[i] != "'"  # no unescaped quote ends the literal early
            out.append(body[i])
            i += 1
    assert "".join(out) == value
    # and the whole filter survives as one string argument of the procedure
    arg = job.sql_string(where)
    assert arg.count("'") - arg.count("\\'") == 2


@pytest.mark.parametrize("raw, message", [
    ("", "not JSON"), ("1=1", "not JSON"), ("[]", "1 to 100"), ("{}", "1 to 100"),
    ('[[0,["a"]]] OR 1=1', "not JSON"), ("[[0,[1.5]]]", "decimal"), ("[[0,[NaN]]]", "NaN"),
    ("[[0,[Infinity]]]", "Infinity"), ('[["0",[1]]]', "[spec id"), ("[[true,[1]]]", "[spec id"),
    ("[[-1,[1]]]", "out of range"), ("[[0,[99999999999999999999]]]", "out of range"),
    ('[[0,["a\\u0000b"]]]', "control"), ('[[0,["a\\nb"]]]', "control"),
    ('[[0,["\\ud800"]]]', "unicode"), ('[[0,[{"a":1}]]]', "string, integer"),
    ('[[0,[[1]]]]', "string, integer"), ("[[0,[1]],[0,[1]]]", "twice"),
    ('[[0,["' + "x" * 201 + '"]]]', "longer"), ("[" * 5000, "at most"),
    ("[" + ",".join("[0,[1]]" for _ in range(200)) + "]", "at most"),
    ("[" + ",".join(f"[0,[{i}]]" for i in range(101)) + "]", "1 to 100"),
    ("[[0,[1,2,3]]]", None), ("[[9,[1]]]", None), ('[[0,["x"]]]', None),
])
def test_hostile_partitions_are_refused(raw: str, message: str | None) -> None:
    with pytest.raises(PartitionFilterError) as e:
        build_where(parse_partitions(raw), SPECS)  # None: refused against the table's specs
    if message:
        assert message in str(e.value)


def test_the_api_refuses_what_the_job_would() -> None:
    plugin = IcebergFormat()
    assert plugin.check_params("compaction", {"partitions": "[[0,[20455]]]"}) == []
    bad = plugin.check_params("compaction", {"partitions": "[[0,[1.5]]]"})
    assert bad and bad[0][0] == "params[partitions]" and "decimal" in bad[0][1]
    bad = plugin.check_params("compaction", {"partitions": '[[0,["日本"]]]'})  # raw non-ASCII
    assert bad and bad[0][0] == "params[partitions]"
    bad = plugin.check_params("clustering", {"partitions": "[[0,[1]]] OR 1=1"})
    assert bad and bad[0][0] == "params[partitions]"
    assert plugin.check_params("expire_snapshots", {"partitions": "[[0,[1]]]"})  # not its param


def _compaction(options: dict[str, str]) -> job.ProcedureCall:
    return job.ACTIONS["compaction"](job.parse_spec({
        "catalog_name": "c", "catalog_properties": {}, "table": "ns.t", "action": "compaction",
        "options": options}))


def test_job_restricts_the_rewrite_and_reports_it() -> None:
    call = _compaction({"partitions": "[[0,[20455]]]", "min-input-files": "2"})
    out = job.restrict(call, SPECS)
    sql = out.sql("c")
    assert "where => '((`ts` >= TIMESTAMP \\'2026-01-02 00:00:00+00:00\\'" in sql
    assert sql.endswith("options => map('min-input-files', '2'))")
    assert out.info["partitions"] == [[0, [20455]]]
    assert out.info["partition_filter"].startswith("((`ts` >=")


def test_job_falls_back_to_the_whole_table_with_two_input_files() -> None:
    out = job.restrict(_compaction({"partitions": "[[2,[3]]]", "min-input-files": "1"}), SPECS)
    assert "where" not in out.sql("c") and out.options["min-input-files"] == "2"
    assert out.info["partition_filter"].startswith("whole table")


def test_job_refuses_bad_partitions_before_spark() -> None:
    with pytest.raises(job.SpecError, match="decimal"):
        _compaction({"partitions": "[[0,[1.5]]]"})
    with pytest.raises(job.SpecError, match="no partition spec 7"):
        job.restrict(_compaction({"partitions": "[[7,[1]]]"}), SPECS)
    assert any(f.name == "partition_filter.py" for f in JOB_SUPPORT_FILES)
