"""The rewrite's codec: Parquet footers read without a Parquet library, and the order in which
the policy, the table's properties and the data files decide (tms.jobs.write_format)."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tms.jobs import iceberg_maintenance as job
from tms.jobs import parquet_footer as pf
from tms.jobs import procedures
from tms.jobs import write_format as wf
from tms.jobs.table_props import PropertyRefused
from tms.local.iceberg_data import batch

ARROW = "parquet-cpp-arrow version 26.0.1"
JAVA = "parquet-mr version 1.13.1 (build x)"


def _file(compression: str, rows: int = 300, **kw: object) -> bytes:
    out = io.BytesIO()
    pq.write_table(batch(0, rows), out, compression=compression, **kw)  # type: ignore[arg-type]
    return out.getvalue()


def _footer(data: bytes) -> pf.Footer:
    n = pf.footer_length(data[-pf.TAIL_BYTES:])
    return pf.parse(data[-pf.TAIL_BYTES - n:-pf.TAIL_BYTES])


@pytest.mark.parametrize("compression, codec", [
    ("zstd", "zstd"), ("snappy", "snappy"), ("gzip", "gzip"), ("none", "uncompressed"),
    ("brotli", "brotli"), ("lz4", "lz4_raw")])
def test_footer_names_the_codec_and_the_writer(compression: str, codec: str) -> None:
    got = _footer(_file(compression, row_group_size=100))  # three row groups
    assert got.codec == codec
    assert got.created_by.startswith("parquet-cpp-arrow")


def test_footer_of_a_file_with_no_rows_has_no_codec() -> None:
    empty = io.BytesIO()
    pq.write_table(batch(0, 0), empty, compression="zstd")
    assert _footer(empty.getvalue()).codec in (None, "zstd")


@pytest.mark.parametrize("tail", [b"", b"1234PAR2", b"\xff\xff\xff\x7fPAR1"])
def test_footer_length_refuses_what_is_not_a_parquet_tail(tail: bytes) -> None:
    with pytest.raises(pf.FooterError):
        pf.footer_length(tail)


@pytest.mark.parametrize("garbage", [b"\x19", b"\x1c" * 100, b"\x0f\x0f", b"\x18\xff\xff\xff"])
def test_a_malformed_footer_is_an_error_not_a_crash(garbage: bytes) -> None:
    with pytest.raises(pf.FooterError):
        pf.parse(garbage)


def test_arrow_default_levels_are_pyarrows() -> None:
    for codec, level in wf.ARROW_DEFAULT_LEVELS.items():
        assert pa.Codec.default_compression_level(codec) == level


def _f(codec: str | None, by: str = ARROW) -> pf.Footer:
    return pf.Footer(codec, by)


def test_data_files_codec_is_kept_with_pyarrows_level() -> None:
    got = wf.choose({}, [_f("zstd"), _f("zstd")])
    assert (got.codec, got.level, got.source) == ("zstd", "1", "data files")
    assert got.session == {wf.SESSION_CODEC: "zstd", wf.SESSION_LEVEL: "1"}


def test_snappy_has_no_level_and_a_java_writer_keeps_its_own() -> None:
    assert wf.choose({}, [_f("snappy")]).session == {wf.SESSION_CODEC: "snappy",
                                                      wf.SESSION_LEVEL: None}
    got = wf.choose({}, [_f("zstd", JAVA)])
    assert (got.codec, got.level) == ("zstd", None)


def test_most_sampled_codec_wins_ties_to_the_newest() -> None:
    assert wf.choose({}, [_f("gzip"), _f("zstd"), _f("zstd")]).codec == "zstd"
    assert wf.choose({}, [_f("snappy"), _f("zstd")]).codec == "snappy"


def test_an_explicit_table_property_wins_and_the_session_is_cleared() -> None:
    props = {wf.DATA_CODEC: "SNAPPY", wf.DATA_LEVEL: "3"}
    got = wf.choose(props, [_f("zstd")])
    assert (got.codec, got.level, got.source) == ("snappy", "3", "table property")
    # a session value would beat the property in Iceberg's order: cleared for the call
    assert got.session == {wf.SESSION_CODEC: None, wf.SESSION_LEVEL: None}


def test_the_policy_wins_over_everything() -> None:
    got = wf.choose({wf.DATA_CODEC: "gzip"}, [_f("zstd")], codec="lz4", level=None)
    assert (got.codec, got.source) == ("lz4", "policy")
    assert got.session == {wf.SESSION_CODEC: "lz4", wf.SESSION_LEVEL: None}


def test_delete_files_read_their_own_property_first() -> None:
    props = {wf.DELETE_CODEC: "zstd", wf.DATA_CODEC: "gzip"}
    assert wf.choose(props, [], deletes=True).codec == "zstd"
    assert wf.choose(props, []).codec == "gzip"
    assert wf.choose({wf.DATA_CODEC: "gzip"}, [_f("zstd")], deletes=True).codec == "gzip"


def test_nothing_to_read_falls_back_to_icebergs_default() -> None:
    got = wf.choose({}, [])
    assert (got.codec, got.session[wf.SESSION_CODEC]) == ("gzip", None)
    assert "default" in got.source


def test_a_table_of_another_format_gets_no_parquet_codec() -> None:
    got = wf.choose({wf.FORMAT_PROPERTY: "ORC"}, [_f("zstd")])
    assert got.codec is None and got.session == {wf.SESSION_CODEC: None,
                                                  wf.SESSION_LEVEL: None}


class FakeConf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = dict(values)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


class FakeSpark:
    def __init__(self, values: dict[str, str]) -> None:
        self.conf = FakeConf(values)


def test_session_conf_is_restored_after_the_call_even_on_failure() -> None:
    spark = FakeSpark({wf.SESSION_CODEC: "snappy"})
    with pytest.raises(RuntimeError), wf.session_conf(
            spark, {wf.SESSION_CODEC: None, wf.SESSION_LEVEL: "1"}):
        assert spark.conf.values == {wf.SESSION_LEVEL: "1"}
        raise RuntimeError("the procedure failed")
    assert spark.conf.values == {wf.SESSION_CODEC: "snappy"}


def test_the_job_takes_the_write_options_out_of_the_procedures_map() -> None:
    spec = job.parse_spec({"catalog_name": "c", "table": "ns.t",
                           "allowed_locations": ["/wh"], "action": "compaction",
                           "options": {"compression-codec": "zstd", "compression-level": "3",
                                       "min-input-files": "2"}})
    call = job.ACTIONS["compaction"](spec)
    assert call.write == ("zstd", "3")
    assert "compression" not in call.sql("c")
    assert job.ACTIONS["rewrite_position_deletes"](job.parse_spec(
        {"catalog_name": "c", "table": "ns.t",
         "allowed_locations": ["/wh"], "action": "rewrite_position_deletes"})
    ).write == (None, None)
    assert job.ACTIONS["rewrite_manifests"](job.parse_spec(
        {"catalog_name": "c", "table": "ns.t",
         "allowed_locations": ["/wh"], "action": "rewrite_manifests"})).write is None


def test_a_policy_codec_reaches_every_rewrite_and_nothing_else() -> None:
    from datetime import UTC, datetime

    from tms.formats.iceberg.plugin import IcebergFormat
    from tms.formats.iceberg.policy import RULES, K

    now = datetime(2026, 6, 1, tzinfo=UTC)
    m = {"small_files": 50, "data_files": 60, "small_file_bytes": 1, "manifests": 500,
         "delete_files": 500, "snapshots": 40, "_snapshot_times_ms": [0] * 40}
    pol = {"clustering.enabled": "true", "clustering.sort-order": "id",
           "orphan-files.enabled": "true",
           "compaction.compression-codec": "snappy", "compaction.compression-level": "0"}
    plugin = IcebergFormat()
    for action, rule in RULES.items():
        d = rule(pol, m, None, now)
        assert d.should_run, action
        rewrite = action in ("compaction", "clustering", "rewrite_position_deletes")
        got = {k: d.params.get(k) for k in ("compression-codec", "compression-level")}
        assert got == ({"compression-codec": "snappy", "compression-level": "0"} if rewrite
                       else {"compression-codec": None, "compression-level": None}), action
        assert plugin.check_params(action, d.params) == [], action
    # not set: the job keeps the table's own codec
    assert "compression-codec" not in RULES["compaction"]({}, m, None, now).params
    with pytest.raises(ValueError, match="compaction.compression-codec"):
        K["compaction.compression-codec"].get({"compaction.compression-codec": "zstd,gzip"})


def test_outcome_names_the_rewrites_partitions_after_a_manifest_rewrite() -> None:
    from tms.jobs import outcome

    rewrite = {"added-data-files": "1", "deleted-data-files": "150",
               "changed-partition-count": "1"}
    manifests = {"manifests-created": "1", "manifests-replaced": "150",
                 "changed-partition-count": "0"}
    out = outcome.build("compaction", {"rewritten_data_files_count": 150}, "1", "3",
                        [rewrite, manifests])
    assert out["partitions_touched"] == 1 and out["snapshots_added"] == 2
    assert (out["data_files_removed"], out["data_files_added"]) == (150, 1)


class FakeManifest:
    def __init__(self, length: int) -> None:
        self._length = length

    def length(self) -> int:
        return self._length


class FakeSnapshot:
    def __init__(self, lengths: list[int]) -> None:
        self.lengths = lengths

    def allManifests(self, io: object) -> list[FakeManifest]:  # noqa: N802 (Java's name)
        return [FakeManifest(n) for n in self.lengths]


class FakeTable:
    def __init__(self, lengths: list[int] | None, props: dict[str, str]) -> None:
        self.snap = FakeSnapshot(lengths) if lengths is not None else None
        self.props = props

    def currentSnapshot(self) -> FakeSnapshot | None:  # noqa: N802
        return self.snap

    def properties(self) -> dict[str, str]:
        return self.props

    def io(self) -> None:
        return None


def test_only_many_small_manifests_are_merged_first() -> None:
    from tms.jobs import manifest_prep as mp

    small, big = 4096, 8 * 1024 * 1024
    assert mp.count(FakeTable(None, {})) == (0, 0)
    assert mp.count(FakeTable([small] * 20 + [big] * 5, {})) == (25, 20)
    # the table's own target size decides what is small
    assert mp.count(FakeTable([small] * 20, {mp.TARGET_PROPERTY: "8192"})) == (20, 0)
    # a target Iceberg's commit would refuse is refused here too, never quietly the default
    with pytest.raises(PropertyRefused, match=mp.TARGET_PROPERTY):
        mp.count(FakeTable([small] * 3, {mp.TARGET_PROPERTY: "bad"}))
    assert mp.needed(mp.MIN_SMALL_MANIFESTS) and not mp.needed(mp.MIN_SMALL_MANIFESTS - 1)


def test_manifests_first_is_on_unless_the_operation_turns_it_off() -> None:
    def call(options: dict[str, str]) -> procedures.ProcedureCall:
        return job.ACTIONS["clustering"](job.parse_spec(
            {"catalog_name": "c", "table": "ns.t",
             "allowed_locations": ["/wh"], "action": "clustering",
             "options": {"sort-order": "id", **options}}))

    assert call({}).manifests_first is True
    off = call({"manifests-first": "false"})
    assert off.manifests_first is False and "manifests-first" not in off.sql("c")


def test_the_decision_metrics_say_which_codec_a_rewrite_writes() -> None:
    from tms.formats.iceberg.policy import write_codec

    assert write_codec({}, {}).startswith("the data files' own")
    assert write_codec({}, {wf.DATA_CODEC: "SNAPPY"}).startswith("snappy (table property")
    assert write_codec({"compaction.compression-codec": "gzip"},
                       {wf.DATA_CODEC: "snappy"}).startswith("gzip (policy")
