"""Partition-aware planning of Iceberg compaction: per-partition statistics from manifests
(with the manifest cache), the plan and its rules, and the job's partition filter under attack.
Fakes stand in for pyiceberg's manifests; the real tables are in tests/integration."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.unit.fakes import make_op
from tms.domain import Decision, OperationState
from tms.formats.iceberg import plan as iceberg_plan
from tms.formats.iceberg import stats as iceberg_stats
from tms.formats.iceberg.plugin import IcebergFormat
from tms.formats.iceberg.policy import RULES
from tms.formats.iceberg.stats import (
    Limits,
    PartitionKey,
    PartitionStats,
    table_partitions,
)
from tms.jobs import iceberg_maintenance as job
from tms.jobs import job_spec, procedures
from tms.jobs.partition_filter import (
    FieldInfo,
    PartitionFilterError,
    PartitionRef,
    build_where,
    encode_partitions,
    parse_partitions,
)
from tms.spark.job_package import sources

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


def _fetch(manifest: FakeManifest, io: Any) -> list[FakeEntry]:
    return manifest.fetch_manifest_entry(io)


def ManifestCache(entries: int = iceberg_stats.MANIFEST_CACHE_ENTRIES  # noqa: N802
                  ) -> iceberg_stats.ManifestCache:
    """The real cache, reading the fakes' entries."""
    return iceberg_stats.ManifestCache(entries, read=_fetch)


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
    assert p1.delete_ratio == pytest.approx(0.15) and p1.rewrite_max_bytes == 2 * MIB
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
    arg = job_spec.sql_string(where)
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


def _compaction(options: dict[str, str]) -> procedures.ProcedureCall:
    return job.ACTIONS["compaction"](job.parse_spec({
        "catalog_name": "c", "catalog_properties": {}, "table": "ns.t",
        "allowed_locations": ["/wh"], "action": "compaction",
        "options": options}))


def test_job_restricts_the_rewrite_and_reports_it() -> None:
    call = _compaction({"partitions": "[[0,[20455]]]", "min-input-files": "2"})
    out = procedures.restrict(call, SPECS)
    sql = out.sql("c")
    assert "where => '((`ts` >= TIMESTAMP \\'2026-01-02 00:00:00+00:00\\'" in sql
    assert sql.endswith("options => map('min-input-files', '2'))")
    assert out.info["partitions"] == [[0, [20455]]]
    assert out.info["partition_filter"].startswith("((`ts` >=")


def test_job_falls_back_to_the_whole_table_with_two_input_files() -> None:
    out = procedures.restrict(
        _compaction({"partitions": "[[2,[3]]]", "min-input-files": "1"}), SPECS)
    assert "where" not in out.sql("c") and out.options["min-input-files"] == "2"
    assert out.info["partition_filter"].startswith("whole table")


def test_job_refuses_bad_partitions_before_spark() -> None:
    with pytest.raises(job.SpecError, match="decimal"):
        _compaction({"partitions": "[[0,[1.5]]]"})
    with pytest.raises(job.SpecError, match="no partition spec 7"):
        procedures.restrict(_compaction({"partitions": "[[7,[1]]]"}), SPECS)
    assert "tms/jobs/partition_filter.py" in dict(sources())


# planning and the rules ------------------------------------------------------------------------

NOW = datetime(2026, 6, 1, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)
DAY0 = 20454  # 2026-01-01
DAY_SPECS = {0: [["ts", "day", "timestamptz"]]}


def part(day: int, small: int = 0, big: int = 0, near: int = 0, pos: int = 0,
         deleted_rows: int = 0, eq: int = 0, seq: int = 1, eq_rows: int = 0
         ) -> tuple[PartitionKey, PartitionStats]:
    """A day partition: ``small`` 1 MiB files, ``near`` 110 MiB files (near the 128 MiB
    target), ``big`` 130 MiB files; 1000 rows per file."""
    files = small + big + near
    return (0, (day,)), PartitionStats(
        data_files=files, small_files=small, small_bytes=small * MIB,
        rewrite_files=small, rewrite_bytes=small * MIB, rewrite_max_bytes=MIB if small else 0,
        bytes=small * MIB + near * 110 * MIB + big * 130 * MIB, records=1000 * files,
        position_delete_files=pos, equality_delete_files=eq, deleted_rows=deleted_rows,
        equality_deleted_rows=eq_rows, max_sequence=seq)



def table(*parts: tuple[PartitionKey, PartitionStats], idle_s: int = 0) -> dict[str, Any]:
    stats = dict(parts)
    small = sum(p.small_files for p in stats.values())
    return {"small_files": small, "data_files": sum(p.data_files for p in stats.values()),
            "small_file_bytes": 16 * MIB, "manifests": 1, "delete_files": 0, "snapshots": 3,
            "partitions": len(stats), "_snapshot_times_ms": [NOW_MS - 3000, NOW_MS - 2000,
                                                             NOW_MS - 1000],
            "_snapshot_seqs": [[NOW_MS - 3000, 1], [NOW_MS - 2000, 2], [NOW_MS - 1000, 3]],
            "mergeable_small_files": sum(p.small_files for p in stats.values()
                                         if p.small_files >= 2),
            "last_commit_ms": NOW_MS - idle_s * 1000,
            "_partitions": iceberg_stats.encode(stats), "_specs": DAY_SPECS}


def compact(m: dict[str, Any], **policy: str) -> Decision:
    return RULES["compaction"]({"compaction.min-small-files": "2", **policy}, m, None, NOW)


def test_one_small_file_per_partition_is_never_compacted() -> None:
    m = table(*(part(DAY0 + i, small=1) for i in range(12)))
    d = RULES["compaction"]({}, m, None, NOW)
    assert not d.should_run
    assert "12 small data files spread over 12 partitions" in d.reason
    assert "cannot merge a partition's only small file" in d.reason
    assert not compact(m).should_run  # whatever the threshold
    assert not RULES["compaction"]({}, table(*(part(DAY0 + i, small=1) for i in range(12)),
                                             idle_s=7200), None, NOW).should_run  # quiet too


def test_second_small_file_compacts_that_partition_only() -> None:
    m = table(*(part(DAY0 + i, small=1) for i in range(11)), part(DAY0 + 11, small=2))
    d = compact(m)
    assert d.should_run
    assert d.params["partitions"] == f"[[0,[{DAY0 + 11}]]]"
    assert d.params["min-input-files"] == "2"
    assert "partial-progress.enabled" not in d.params  # one file group: nothing to commit early
    assert "delete-file-threshold" not in d.params
    assert "compaction of 1 of 12 partitions, ts_day=2026-01-12 (2 small files)" in d.reason
    assert d.benefit is not None and d.benefit > 0
    assert d.metrics["plan"][0]["partition"] == "ts_day=2026-01-12"
    assert IcebergFormat().check_params("compaction", d.params) == []  # the scheduler's check
    # below the table's threshold it waits, and says so
    w = RULES["compaction"]({}, m, None, NOW)
    assert not w.should_run and "2 small data files in partitions holding two or more" in w.reason


def test_files_near_the_target_are_not_rewritten() -> None:
    m = table(part(DAY0, small=2, near=5, big=3))
    d = compact(m)
    assert d.should_run and d.params["min-file-size-bytes"] == str(96 * MIB)
    assert d.metrics["plan"][0]["rewrite_bytes"] == 2 * MIB  # not the 910 MiB near target
    assert "2097152 bytes to rewrite" in d.reason
    d = compact(m, **{"compaction.min-file-ratio": "0.5"})
    assert d.params["min-file-size-bytes"] == str(64 * MIB)


@pytest.mark.parametrize("pos, rows, eq, eq_rows, runs", [
    (1, 1000, 0, 0, True),  # 1000 of 2000 rows deleted
    (1, 100, 0, 0, False),  # 5 %: below the 10 % default
    (0, 0, 1, 100, False),  # one upsert batch's equality deletes: 100 keys of 2000 rows, 5 %
    (0, 0, 2, 300, True),  # 15 % of the rows
    (1, 100, 1, 100, True),  # 5 % + 5 %: position and equality deletes together
    (30, 30, 0, 0, False),  # few rows in 30 delete files: the position-delete rewrite's work
    (0, 0, 30, 30, True),  # readers open 30 equality delete files (min-small-files)
])
def test_deletes_call_for_a_rewrite_by_ratio(pos: int, rows: int, eq: int, eq_rows: int,
                                             runs: bool) -> None:
    m = table(part(DAY0, near=2, pos=pos, deleted_rows=rows, eq=eq, eq_rows=eq_rows),
              part(DAY0 + 1, near=2))
    d = RULES["compaction"]({}, m, None, NOW)
    assert d.should_run is runs, d.reason
    if runs:
        assert d.params["partitions"] == f"[[0,[{DAY0}]]]"
        assert d.params["delete-file-threshold"] == "1"
        assert d.params["remove-dangling-deletes"] == "true"
        assert d.params["use-starting-sequence-number"] == "false"
        assert f"{pos + eq} delete files to apply" in d.reason


def test_position_delete_files_count_when_their_rewrite_is_off() -> None:
    m = table(part(DAY0, near=2, pos=30, deleted_rows=30), part(DAY0 + 1, near=2))
    assert not RULES["compaction"]({}, m, None, NOW).should_run
    d = RULES["compaction"]({"position-deletes.enabled": "false"}, m, None, NOW)
    assert d.should_run and "30 delete files to apply" in d.reason


def test_delete_ratio_is_a_policy_key() -> None:
    m = table(part(DAY0, near=2, pos=1, deleted_rows=100))
    assert RULES["compaction"]({"compaction.delete-ratio": "0.05"}, m, None, NOW).should_run


def test_cap_takes_largest_benefit_first_and_names_three() -> None:
    # partitions with more small files (same size each) remove more files per byte
    parts = [part(DAY0 + i, small=2 + i) for i in range(8)]
    cap = str((9 + 8 + 7 + 6) * MIB)  # the four best
    d = compact(table(*parts), **{"compaction.max-bytes-per-run": cap})
    assert d.should_run
    chosen = json.loads(d.params["partitions"])
    assert [p[1][0] for p in chosen] == [DAY0 + 7, DAY0 + 6, DAY0 + 5, DAY0 + 4]
    assert "compaction of 4 of 8 partitions" in d.reason and "and 1 more" in d.reason
    assert d.reason.count("small files)") == 3
    assert "4 more wait for the next run" in d.reason
    assert len(d.metrics["plan"]) == 4
    assert d.params["partial-progress.enabled"] == "true"  # four groups commit as they finish
    d = compact(table(*parts))
    assert len(d.metrics["plan"]) == 5 and "and 5 more" in d.reason


def test_first_partition_is_taken_even_beyond_the_cap() -> None:
    d = compact(table(part(DAY0, small=30)), **{"compaction.max-bytes-per-run": str(MIB)})
    assert d.should_run and d.params["max-file-group-size-bytes"] == str(MIB)
    # one partition split into groups of at most 1 MiB: several groups, partial progress
    assert d.params["partial-progress.enabled"] == "true"


def test_unpartitioned_table_has_no_partitions_param() -> None:
    st = PartitionStats(data_files=3, small_files=3, small_bytes=3 * MIB, rewrite_files=3,
                        rewrite_bytes=3 * MIB, bytes=3 * MIB, records=3)
    m = {**table(), "small_files": 3, "mergeable_small_files": 3, "data_files": 3,
         "partitions": 1, "_partitions": iceberg_stats.encode({(0, ()): st}), "_specs": {0: []}}
    d = compact(m)
    assert d.should_run and "partitions" not in d.params
    assert d.reason.startswith("3 of 3 data files are smaller than 16777216 bytes")
    assert "3145728 bytes to rewrite" in d.reason


def test_bucket_partitions_fall_back_to_the_whole_table() -> None:
    m = table(part(3, small=2))
    m["_specs"] = {0: [["id", "bucket[16]", "long"]]}
    d = compact(m)
    assert d.should_run and d.params["partitions"] == "[[0,[3]]]"
    assert "whole table (a partition transform no filter can select)" in d.reason


def test_partitions_param_stays_within_what_the_api_accepts() -> None:
    m = table(*(part(DAY0 + i, small=2) for i in range(300)))
    d = compact(m)
    assert len(d.params["partitions"]) <= 1000
    assert IcebergFormat().check_params("compaction", d.params) == []
    assert "wait for the next run" in d.reason


def test_clustering_only_partitions_changed_since_the_last() -> None:
    pol = {"clustering.enabled": "true", "clustering.sort-order": "id",
           "clustering.min-new-snapshots": "1", "clustering.min-interval-s": "0"}
    m = table(part(DAY0, near=2, seq=1), part(DAY0 + 1, near=2, seq=3))
    first = RULES["clustering"](pol, m, None, NOW)
    assert first.should_run
    assert sorted(json.loads(first.params["partitions"])) == [[0, [DAY0]], [0, [DAY0 + 1]]]
    assert first.params["rewrite-all"] == "true"
    last = make_op(9, action="clustering", state=OperationState.SUCCEEDED,
                   finished_at=datetime.fromtimestamp((NOW_MS - 1500) / 1000, UTC))
    d = RULES["clustering"](pol, m, last, NOW)  # only seq 3 is newer than that run
    assert d.should_run and d.params["partitions"] == f"[[0,[{DAY0 + 1}]]]"
    assert "1 changed partitions (ts_day=2026-01-02" in d.reason
    assert IcebergFormat().check_params("clustering", d.params) == []
    m = table(part(DAY0, near=2, seq=1))
    m["_snapshot_times_ms"] = [NOW_MS - 1000]
    none = RULES["clustering"](pol, m, last, NOW)
    assert not none.should_run and "no partition has new data files" in none.reason


def test_plan_candidate_benefit_counts_files_removed_and_deletes() -> None:
    lim = iceberg_plan.Limits(128 * MIB, 0.75, 0.1, 10 << 30, min_small_files=4)
    _, st = part(DAY0, small=4)
    c = iceberg_plan.candidate((0, (DAY0,)), st, lim, True)
    assert c is not None and c.files_removed == 3 and c.cost_bytes == 4 * MIB
    assert c.benefit == pytest.approx(3 * 1024 / 4)
    assert iceberg_plan.candidate((0, (DAY0,)), st, lim, False) is None


def sized(day: int, *sizes_mib: float) -> tuple[PartitionKey, PartitionStats]:
    """A partition of data files of these sizes, its statistics as inspection counts them
    (``manifest_stats``: size classes included)."""
    files = [FakeFile((day,), int(s * MIB)) for s in sizes_mib]
    stats = iceberg_stats.manifest_stats([FakeEntry(f) for f in files], 0, LIMITS)
    return (0, (day,)), stats[(0, (day,))]


def test_stats_count_size_classes_below_the_rewrite_size() -> None:
    _, st = sized(DAY0, 1, 1, 1.5, 3, 100)
    # 1 MiB and 1.5 MiB are in [1, 2) MiB (class 21), 3 MiB in [2, 4) MiB; 100 MiB is above
    assert st.size_tiers == {21: [3, int(3.5 * MIB)], 22: [1, 3 * MIB]}
    # they travel through the stored metrics and add up over manifests
    back = iceberg_stats.decode(iceberg_stats.encode({(0, (DAY0,)): st}))[(0, (DAY0,))]
    assert back == st
    back.add(st)
    assert back.size_tiers == {21: [6, 7 * MIB], 22: [2, 6 * MIB]}
    assert st.size_tiers == {21: [3, int(3.5 * MIB)], 22: [1, 3 * MIB]}  # not shared
    # rows stored before size classes existed decode without them
    old = {k: v for k, v in iceberg_stats.encode({(0, (DAY0,)): st})[0].items()
           if k != "size_tiers"}
    assert iceberg_stats.decode([old])[(0, (DAY0,))].size_tiers == {}


POL4 = {"compaction.min-small-files": "4"}  # a tier fills at 4 files; readers' bound 8


def test_a_merge_waits_until_new_files_are_worth_rewriting_the_last_output() -> None:
    # an earlier merge left 10 MiB; one new 1 MiB file would rewrite 11 MiB to remove 1 file
    stale = table(sized(DAY0, 10, 1), sized(DAY0 + 1, 10, 1))
    d = compact(stale, **POL4)
    assert not d.should_run
    assert "mostly rewrite files merged before" in d.reason
    assert "add up to 4 times the largest of them (compaction.tier-fanout)" in d.reason
    assert "none holds 8 small files" in d.reason
    # statistics without size classes (stored before them): the same rule over all files
    d = compact(table(merged_output(DAY0, 10, 1), merged_output(DAY0 + 1, 10, 1)), **POL4)
    assert not d.should_run
    # and a quiet table is tidied up whatever a merge rewrites again
    quiet = table(sized(DAY0, 10, 1), sized(DAY0 + 1, 10, 1), idle_s=7200)
    d = RULES["compaction"](POL4, quiet, None, NOW)
    assert d.should_run and len(json.loads(d.params["partitions"])) == 2
    assert d.params["min-file-size-bytes"] == str(16 * MIB)  # every file: all below 16 MiB


def test_a_filled_tier_merges_without_rewriting_larger_files() -> None:
    # four 1 MiB files fill their tier: merged alone, the 10 MiB output of an earlier merge
    # is not rewritten (the job selects below 2 MiB)
    d = compact(table(sized(DAY0, 10, 1), sized(DAY0 + 1, 10, 1, 1, 1, 1)), **POL4)
    assert d.should_run and d.params["partitions"] == f"[[0,[{DAY0 + 1}]]]"
    assert d.params["min-file-size-bytes"] == str(2 * MIB)
    assert d.metrics["plan"][0]["rewrite_bytes"] == 4 * MIB
    assert "4194304 bytes to rewrite" in d.reason
    assert "files below 2097152 bytes (a size tier: larger files wait)" in d.reason
    # three are not a filled tier
    assert not compact(table(sized(DAY0, 10, 1, 1, 1)), **POL4).should_run
    # a larger file joins once the smaller ones add up to the fanout x its size
    d = compact(table(sized(DAY0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1)), **POL4)  # 12 >= 4 x 3
    assert d.should_run and d.params["min-file-size-bytes"] == str(4 * MIB)
    d = compact(table(sized(DAY0, 3.5, 1, 1, 1, 1, 1, 1, 1, 1)), **POL4)  # 11.5 < 4 x 3.5
    assert d.should_run and d.params["min-file-size-bytes"] == str(2 * MIB)
    # the fanout is a policy key, bounded by min-small-files (a tier fills by then)
    four = table(sized(DAY0, 10, 1, 1, 1, 1))
    assert not compact(four, **{"compaction.min-small-files": "5"}).should_run  # fanout 5
    assert compact(four, **{"compaction.min-small-files": "5",
                            "compaction.tier-fanout": "4"}).should_run
    # files of one size class count as of its mean size: two files a byte apart merge (an
    # odd total must not leave the mean above what the files add up to)
    d = compact(table(sized(DAY0, 1, 1 + 1 / MIB)))
    assert d.should_run and d.params["min-file-size-bytes"] == str(2 * MIB)
    # the default fanout, 8, with the default min-small-files (12, counted table-wide)
    pol12 = {"compaction.min-small-files": "12"}
    d = compact(table(sized(DAY0, *[1] * 8), sized(DAY0 + 1, *[1] * 4)), **pol12)
    assert d.should_run and d.params["partitions"] == f"[[0,[{DAY0}]]]"
    assert not compact(table(sized(DAY0, *[1] * 7), sized(DAY0 + 1, *[1] * 5)),
                       **pol12).should_run


def test_readers_bound_merges_the_smallest_files_when_no_tier_fills() -> None:
    # sizes doubling: no set of smaller files ever adds up to 4 x the largest of them
    sizes = (0.125, 0.25, 0.5, 1, 2, 4, 8)
    assert not compact(table(sized(DAY0, *sizes)), **POL4).should_run  # 7 small files
    d = compact(table(sized(DAY0, *sizes, 15)), **POL4)  # 8: readers' bound
    assert d.should_run
    # the four smallest (0.125-1 MiB: below 2 MiB), not the larger ones
    assert d.params["min-file-size-bytes"] == str(2 * MIB)
    assert d.metrics["plan"][0]["rewrite_bytes"] == int(1.875 * MIB)


def test_partitions_of_other_size_tiers_wait_for_the_next_run() -> None:
    # one threshold per job: a partition whose tier it would cut through waits
    a = sized(DAY0, 2.5, 1, 1, 1, 1, 1)  # 1 MiB files merge below 2 MiB; 2.5 MiB stays
    b = sized(DAY0 + 1, 3, 3, 3, 3)  # 3 MiB files merge: below 4 MiB, the 2.5 MiB would go too
    d = compact(table(a, b), **POL4)
    assert d.should_run and len(json.loads(d.params["partitions"])) == 1
    assert "1 more wait for the next run" in d.reason and "size tier of their own" in d.reason
    # a partition that one threshold serves joins: tiny files only, below 2 MiB as well
    c = sized(DAY0 + 2, 1, 1, 1, 1)
    d = compact(table(a, c), **POL4)
    assert d.should_run and len(json.loads(d.params["partitions"])) == 2
    assert d.params["min-file-size-bytes"] == str(2 * MIB)


def merged_output(day: int, output_mib: int, new_small: int) -> tuple[PartitionKey,
                                                                          PartitionStats]:
    """A partition holding an earlier merge's output and ``new_small`` 1 MiB files, its
    statistics without size classes."""
    files, size = 1 + new_small, (output_mib + new_small) * MIB
    return (0, (day,)), PartitionStats(
        data_files=files, small_files=files, small_bytes=size, rewrite_files=files,
        rewrite_bytes=size, rewrite_max_bytes=output_mib * MIB, bytes=size, records=files)


def _trickle(files_in: int, tiered: bool) -> tuple[float, int, int]:
    """1 MiB files into one partition, the rule asked after each and the job's selection
    (``min-file-size-bytes``) applied: (bytes rewritten / bytes written, most files the
    partition ever held, most times one written byte was rewritten)."""
    lim = iceberg_plan.Limits(128 * MIB, 0.75, 0.1, 10 << 30, min_small_files=12)
    files: list[tuple[int, int]] = []  # (size, times its bytes were rewritten)
    rewritten, most, deepest = 0, 0, 0
    for _ in range(files_in):
        files.append((MIB, 0))
        entries = [FakeEntry(FakeFile((1,), size)) for size, _ in files]
        st = iceberg_stats.manifest_stats(entries, 0, LIMITS)[(0, (1,))]
        c = iceberg_plan.candidate((0, (1,)), st, lim, True, tiered)
        if c is not None:
            assert c.selection is not None
            params = iceberg_plan.rewrite_params(
                iceberg_plan.select([c], {}, False, lim.max_bytes, 1), lim)
            below = int(params["min-file-size-bytes"])
            chosen = [f for f in files if f[0] < below]
            rewritten += sum(size for size, _ in chosen)
            depth = max(times for _, times in chosen) + 1
            deepest = max(deepest, depth)
            files = [f for f in files if f[0] >= below] + [(sum(s for s, _ in chosen), depth)]
        most = max(most, len(files))
    return rewritten / (files_in * MIB), most, deepest


def test_tiered_merges_bound_write_amplification() -> None:
    # 500 files into one partition: without tiers each merge rewrites everything again
    amplification, most, deepest = _trickle(500, tiered=True)
    untiered, _, _ = _trickle(500, tiered=False)
    assert amplification < 2.5 < 10 < untiered, (amplification, untiered)
    # a byte is rewritten about log_8(500) times at most; readers see few files
    assert deepest <= 3
    assert most <= 24


def test_clustering_of_an_unpartitioned_table_is_not_restricted() -> None:
    pol = {"clustering.enabled": "true", "clustering.zorder-columns": "id,amount",
           "clustering.min-new-snapshots": "1"}
    st = PartitionStats(data_files=4, bytes=4 * MIB, records=4, max_sequence=3)
    m = {**table(), "_partitions": iceberg_stats.encode({(0, ()): st}), "_specs": {0: []}}
    d = RULES["clustering"](pol, m, None, NOW)
    assert d.should_run and "partitions" not in d.params and "rewrite-all" not in d.params
    assert "changed partitions" not in d.reason
    assert IcebergFormat().check_params("clustering", d.params) == []


def test_small_files_the_job_would_keep_are_not_a_merge() -> None:
    """A small-file threshold above the rewrite size (min-file-ratio x target): files between
    the two count as small but the job (min-file-size-bytes) leaves them alone, so the
    compaction would rewrite nothing."""
    key, st = part(DAY0, near=2)
    st = replace(st, small_files=2, small_bytes=st.bytes)  # 110 MiB files counted as small
    m = table((key, st))
    d = compact(m, **{"compaction.small-file-bytes": str(200 * MIB)})
    assert not d.should_run, d.reason
