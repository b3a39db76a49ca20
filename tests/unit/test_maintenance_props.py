"""The table properties Iceberg reads while a maintenance action runs, parsed strictly
(``tms.jobs.maintenance_props``): every key with what a hostile owner can put in it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tms import failures as errors
from tms.jobs import iceberg_maintenance, manifest_prep
from tms.jobs import maintenance_props as mkeys
from tms.jobs.maintenance_props import KEYS_BY_ACTION, PropertyRefused, check
from tms.jobs.table_props import JAVA_INT_MAX, JAVA_LONG_MAX
from tms.spark.job_package import job_zip

ALL_RULES = {key: rule for rules in KEYS_BY_ACTION.values() for key, rule in rules.items()}
INTEGERS = sorted(k for k, r in ALL_RULES.items() if r[0] == "integer")
BOOLEANS = sorted(k for k, r in ALL_RULES.items() if r[0] == "boolean")
ENUMS = sorted(k for k, r in ALL_RULES.items() if r[0] == "enum")
# Iceberg's defaults (TableProperties, 1.10): a table that spells them out must pass
ICEBERG_DEFAULTS = {
    "commit.retry.num-retries": "4", "commit.retry.min-wait-ms": "100",
    "commit.retry.max-wait-ms": "60000", "commit.retry.total-timeout-ms": "1800000",
    "commit.status-check.num-retries": "3", "commit.status-check.min-wait-ms": "1000",
    "commit.status-check.max-wait-ms": "60000",
    "commit.status-check.total-timeout-ms": "1800000",
    "commit.manifest.target-size-bytes": "8388608", "commit.manifest.min-count-to-merge": "100",
    "commit.manifest-merge.enabled": "true", "write.metadata.previous-versions-max": "100",
    "write.metadata.delete-after-commit.enabled": "false", "write.summary.partition-limit": "0",
    "write.metadata.compression-codec": "none", "gc.enabled": "true",
    "history.expire.max-snapshot-age-ms": "432000000",
    "history.expire.min-snapshots-to-keep": "1",
    "history.expire.max-ref-age-ms": str(JAVA_LONG_MAX),
    "read.split.target-size": "134217728", "read.split.metadata-target-size": "33554432",
    "read.split.planning-lookback": "10", "read.split.open-file-cost": "4194304",
    "read.parquet.vectorization.batch-size": "5000", "write.format.default": "parquet",
    "write.distribution-mode": "hash", "write.delete.granularity": "partition",
    "compatibility.snapshot-id-inheritance.enabled": "false", "read.data-planning-mode": "auto",
    "write.orc.stripe-size-bytes": "67108864", "write.orc.block-size-bytes": "268435456",
    "write.orc.vectorized.batch-size": "1024", "write.orc.compression-codec": "zlib",
    "write.orc.compression-strategy": "speed", "write.orc.bloom.filter.fpp": "0.05",
    "write.orc.bloom.filter.columns": "",
}
# what Java's parseInt / parseLong take, or what looks like a number, but is not ASCII digits
NOT_DIGITS = ["-1", "+5", "-0", " 5", "5 ", "\t5", "5\n", "", "05", "007", "１２", "٣", "²",
              "5_000", "1e6", "0x10", "1.0", "5k", "NaN", "9" * 400]
# Boolean.parseBoolean reads each of these as false, without a word
NOT_BOOLEANS = ["yes", "no", "1", "0", "on", "ture", "fals", " true", "true ", "", "t",
                "ｔｒｕｅ", "tru\u0435", "falſe", "true\x00", "TRUE;", "null"]


def test_iceberg_defaults_pass_for_every_action() -> None:
    for action, rules in KEYS_BY_ACTION.items():
        props = {k: v for k, v in ICEBERG_DEFAULTS.items() if k in rules}
        assert props and check(props, action).keys() == props.keys()


def test_every_key_has_a_rule_and_every_action_a_set() -> None:
    assert set(KEYS_BY_ACTION) == set(iceberg_maintenance.ACTIONS)
    assert set(ICEBERG_DEFAULTS) <= set(ALL_RULES)
    assert "gc.enabled" in KEYS_BY_ACTION["remove_orphan_files"]
    assert "commit.retry.num-retries" not in KEYS_BY_ACTION["remove_orphan_files"]  # no commit


def action_reading(key: str) -> str:
    return next(a for a, rules in KEYS_BY_ACTION.items() if key in rules)


@pytest.mark.parametrize("key", INTEGERS)
@pytest.mark.parametrize("raw", NOT_DIGITS)
def test_integers_are_ascii_digits_only(key: str, raw: str) -> None:
    with pytest.raises(PropertyRefused) as e:
        check({key: raw}, action_reading(key))
    low, high = ALL_RULES[key][1:3]
    assert key in str(e.value) and f"from {low} to {high}" in str(e.value)
    assert len(str(e.value)) < 300


@pytest.mark.parametrize("key", INTEGERS)
def test_integers_within_their_bounds(key: str) -> None:
    low, high = ALL_RULES[key][1:3]
    action = action_reading(key)
    # an Avro level is also held to its codec's range (below): the codec that takes them all
    codec = {"write.avro.compression-codec": "uncompressed"} if ".avro." in key else {}
    assert check({key: str(low), **codec}, action)[key] == low
    assert check({key: str(high), **codec}, action)[key] == high
    for raw in (str(high + 1), str(JAVA_LONG_MAX + 1), "99999999999"):
        if int(raw) > high:
            with pytest.raises(PropertyRefused, match=key):
                check({key: raw}, action)
    if low > 0:
        with pytest.raises(PropertyRefused, match=key):
            check({key: str(low - 1)}, action)


@pytest.mark.parametrize(("key", "raw"), [
    ("commit.retry.num-retries", "99999999999"),  # past Integer.MAX_VALUE: NFE at commit
    ("commit.retry.num-retries", "2147483647"),  # Java takes it: retries till the timeout
    ("commit.retry.min-wait-ms", "2147483647"),  # 24.8 days asleep between two attempts
    ("commit.retry.max-wait-ms", "86400000"),
    ("commit.retry.total-timeout-ms", "2147483647"),
    ("commit.status-check.total-timeout-ms", str(JAVA_LONG_MAX)),
    ("read.parquet.vectorization.batch-size", "2147483647"),  # an executor's heap
    ("commit.manifest.target-size-bytes", str(JAVA_LONG_MAX)),  # all merged in the driver
    ("write.metadata.previous-versions-max", "2147483647"),
    ("write.summary.partition-limit", "2147483647"),
    ("read.split.planning-lookback", "2147483647"),
    ("history.expire.min-snapshots-to-keep", "0"),  # Iceberg's own floor is 1
    ("history.expire.min-snapshots-to-keep", "-1"),
    ("history.expire.max-snapshot-age-ms", "-1"),  # a cutoff in the future
    ("history.expire.max-ref-age-ms", "0"),
])
def test_values_java_takes_but_that_hold_a_job_or_break_expiry_are_refused(key: str,
                                                                            raw: str) -> None:
    with pytest.raises(PropertyRefused, match=key):
        check({key: raw}, action_reading(key))


@pytest.mark.parametrize("key", BOOLEANS)
@pytest.mark.parametrize("raw", NOT_BOOLEANS)
def test_booleans_are_true_or_false_never_silently_false(key: str, raw: str) -> None:
    with pytest.raises(PropertyRefused) as e:
        check({key: raw}, action_reading(key))
    assert key in str(e.value) and "true, false" in str(e.value)


@pytest.mark.parametrize("key", BOOLEANS)
def test_booleans_in_any_ascii_case_as_iceberg_reads_them(key: str) -> None:
    action = action_reading(key)
    for raw, value in (("true", True), ("TRUE", True), ("True", True), ("false", False),
                       ("FALSE", False), ("fAlSe", False)):
        if key == mkeys.GC_KEY and not value:
            continue  # refused for the actions that read it: see below
        assert check({key: raw}, action) == {key: value}


@pytest.mark.parametrize("action", ["expire_snapshots", "remove_orphan_files"])
def test_gc_disabled_is_refused_where_iceberg_would_refuse_it_anyway(action: str) -> None:
    for raw in ("false", "FALSE", "False"):
        with pytest.raises(PropertyRefused, match="gc.enabled=false"):
            check({mkeys.GC_KEY: raw}, action)
    assert check({mkeys.GC_KEY: "false"}, "compaction") == {}  # a rewrite deletes nothing


@pytest.mark.parametrize("key", ENUMS)
def test_enums_are_icebergs_names_in_ascii_any_case(key: str) -> None:
    action = action_reading(key)
    for name in ALL_RULES[key][3]:
        for raw in (name, name.upper(), name.capitalize()):
            assert check({key: raw}, action) == {key: name}


@pytest.mark.parametrize(("key", "raw"), [
    ("write.metadata.compression-codec", "gzıp"),  # Java's toUpperCase makes it GZIP
    ("write.metadata.compression-codec", "zstd"), ("write.metadata.compression-codec", ""),
    ("write.format.default", "puffin"), ("write.format.default", "metadata"),  # not data
    ("write.format.default", " parquet"), ("write.format.default", "ｐａｒｑｕｅｔ"),
    ("write.distribution-mode", "haſh"),  # equalsIgnoreCase would take it
    ("write.distribution-mode", "hash\n"), ("read.data-planning-mode", "diſtributed"),
    ("write.delete.granularity", "row"), ("read.delete-planning-mode", "remote"),
    ("write.parquet.compression-codec", "zſtd"),  # upper-cases to ZSTD in Java
    ("write.parquet.compression-codec", "ＺＳＴＤ"), ("write.parquet.compression-codec", "lz4-raw"),
    ("write.delete.parquet.compression-codec", "zstd "), ("write.avro.compression-codec", "xz"),
])
def test_enum_spellings_outside_icebergs_set_are_refused(key: str, raw: str) -> None:
    with pytest.raises(PropertyRefused, match=key):
        check({key: raw}, action_reading(key))


def test_an_action_is_refused_only_for_what_it_reads() -> None:
    hostile = {"history.expire.min-snapshots-to-keep": "-1"}
    assert check(hostile, "compaction") == {}
    with pytest.raises(PropertyRefused):
        check(hostile, "expire_snapshots")
    merge = {"commit.manifest-merge.enabled": "yes"}
    assert check(merge, "expire_snapshots") == {}
    with pytest.raises(PropertyRefused):
        check(merge, "rewrite_position_deletes")
    assert check({"owner": "٣", "write.delete.mode": "nonsense"}, "compaction") == {}


def test_manifest_prep_reads_the_target_as_strictly() -> None:
    key = manifest_prep.TARGET_PROPERTY
    assert manifest_prep.target_bytes({}) == manifest_prep.TARGET_DEFAULT_BYTES
    assert manifest_prep.target_bytes({key: "4096"}) == 4096
    for raw in ("٣٠٠٠", "+4096", "0", "-1", "04096", "x", str(JAVA_INT_MAX)):
        with pytest.raises(PropertyRefused, match=key):  # once quietly the default
            manifest_prep.target_bytes({key: raw})


def test_the_job_reports_it_as_not_retryable_naming_the_property() -> None:
    with pytest.raises(PropertyRefused) as e:
        check({"commit.retry.num-retries": "99999999999"}, "rewrite_manifests")
    payload = iceberg_maintenance.failure_payload(e.value)
    assert payload["ok"] is False and payload["retryable"] is False
    assert payload["error_class"] == errors.INVALID_TABLE_PROPERTY
    assert "commit.retry.num-retries" in payload["error"]
    assert f"from 0 to {mkeys.MAX_COMMIT_RETRIES}" in payload["error"]


def test_a_location_provider_class_is_refused_for_every_action() -> None:
    key = "write.location-provider.impl"
    for action in KEYS_BY_ACTION:  # Iceberg instantiates the named class before checking it
        for raw in ("org.apache.iceberg.LocationProviders$DefaultLocationProvider", "", "x"):
            with pytest.raises(PropertyRefused, match=key):
                check({key: raw}, action)


@pytest.mark.parametrize("raw", ["none", "COUNTS", "Full", "truncate(16)", "TRUNCATE(1)",
                                 f"truncate({JAVA_INT_MAX})"])
def test_metrics_modes_as_iceberg_names_them(raw: str) -> None:
    key = "write.metadata.metrics.default"
    assert check({key: raw}, "compaction") == {key: raw.lower()}
    column = "write.metadata.metrics.column.id"
    assert check({column: raw}, "clustering") == {column: raw.lower()}


@pytest.mark.parametrize("raw", ["truncate(0)", "truncate(016)", "truncate(-1)",
                                 f"truncate({JAVA_INT_MAX + 1})", "truncate(١٦)", "truncate 16",
                                 "truncate(16) ", "fulI", "ful\u013e", "trunc(16)", "", "counts;"])
def test_metrics_modes_java_would_ignore_or_misread_are_refused(raw: str) -> None:
    for key in ("write.metadata.metrics.default", "write.metadata.metrics.column.data"):
        with pytest.raises(PropertyRefused, match="truncate\\(N\\)"):
            check({key: raw}, "rewrite_position_deletes")


@pytest.mark.parametrize(("raw", "ok"), [
    ("0.01", True), ("0.5", True), ("0.999999", True), ("0.000000000000000001", True),
    ("0", False), ("1", False), ("1.0", False), ("0.0", False), ("0.", False), (".01", False),
    ("1e-2", False), ("NaN", False), ("Infinity", False), ("0x1p-7", False), (" 0.01", False),
    ("0.01 ", False), ("-0.01", False), ("0.٠١", False), ("0.0000000000000000001", False)])
def test_bloom_filter_probabilities_strictly_between_0_and_1(raw: str, ok: bool) -> None:
    key = "write.parquet.bloom-filter-fpp.column.id"
    if ok:
        assert check({key: raw}, "compaction") == {key: float(raw)}
    else:
        with pytest.raises(PropertyRefused, match="above 0 and below 1"):
            check({key: raw}, "compaction")


def test_every_column_key_of_a_prefix_is_checked_only_by_rewrites() -> None:
    props = {"write.parquet.bloom-filter-enabled.column.id": "true",
             "write.parquet.stats-enabled.column.id": "FALSE",
             "write.parquet.bloom-filter-enabled.column.data": "yes"}
    with pytest.raises(PropertyRefused, match="column.data"):
        check(props, "compaction")
    assert check(props, "rewrite_manifests") == {}  # writes no data file
    del props["write.parquet.bloom-filter-enabled.column.data"]
    assert check(props, "clustering") == {"write.parquet.bloom-filter-enabled.column.id": True,
                                          "write.parquet.stats-enabled.column.id": False}


def test_the_threat_model_lists_every_property_checked() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    prefixes = {p for rules in mkeys.PREFIXES_BY_ACTION.values() for p in rules}
    for key in [*ALL_RULES, *(f"{p}*" for p in prefixes)]:
        assert f"`{key}`" in doc, key


def test_shipped_alone_a_refusal_is_still_the_jobs_not_retryable_class(tmp_path: Path) -> None:
    """From the job's zip alone (a cluster with no TMS installed, no site-packages) the
    refusal must still be the class the job classifies as an invalid property."""
    shipped = shutil.copy(job_zip(), tmp_path / "job.zip")
    code = ("import json\n"
            "from tms.jobs import iceberg_maintenance as job, maintenance_props as m\n"
            "try:\n    m.check({'gc.enabled': 'yes'}, 'expire_snapshots')\n"
            "except Exception as e:\n    print(json.dumps(job.failure_payload(e)))\n")
    proc = subprocess.run([sys.executable, "-S", "-s", "-c", code], cwd=tmp_path,
                          env={"PYTHONPATH": str(shipped)},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["retryable"] is False and payload["error_class"] == errors.INVALID_TABLE_PROPERTY
    assert "gc.enabled" in payload["error"]


@pytest.mark.parametrize(("raw", "ok"), [
    ("id", True), ("id,name", True), ("a.b, c_d", True), ("", True), ("x" * 128, True),
    ("id;drop", False), ("id,,name", False), ("a b", False), ("id,", False), (",id", False),
    ("\u0131d", False), ("id\nname", False), ("`id`", False), ("1id", False),
    ("x" * 129, False), (",".join(["c" * 100] * 41), False)])
def test_orc_bloom_filter_columns_are_column_names(raw: str, ok: bool) -> None:
    """ORC parses the list itself when the table writes ORC: names only, bounded."""
    key = "write.orc.bloom.filter.columns"
    if ok:
        assert check({key: raw}, "compaction") == {key: raw}
    else:
        with pytest.raises(PropertyRefused, match="column names"):
            check({key: raw}, "compaction")


def test_orc_writer_settings_of_deletes_too() -> None:
    """``write.delete.orc.*`` is what a position-delete rewrite's ORC writer reads."""
    assert check({"write.delete.orc.stripe-size-bytes": "8388608",
                  "write.delete.orc.compression-codec": "ZSTD"},
                 "rewrite_position_deletes") == {"write.delete.orc.stripe-size-bytes": 8388608,
                                                 "write.delete.orc.compression-codec": "zstd"}
    with pytest.raises(PropertyRefused, match="write.delete.orc.vectorized.batch-size"):
        check({"write.delete.orc.vectorized.batch-size": "99999999"}, "compaction")


@pytest.mark.parametrize(("props", "ok"), [
    ({"write.avro.compression-level": "9"}, True),  # Iceberg's default codec: gzip
    ({"write.avro.compression-level": "10"}, False),
    ({"write.avro.compression-level": "22", "write.avro.compression-codec": "ZSTD"}, True),
    ({"write.avro.compression-level": "0", "write.avro.compression-codec": "zstd"}, False),
    ({"write.avro.compression-level": "5", "write.avro.compression-codec": "snappy"}, True),
    ({"write.delete.avro.compression-level": "15", "write.avro.compression-codec": "zstd"},
     True),  # a delete writer's codec defaults to the data files'
    ({"write.delete.avro.compression-level": "15",
      "write.delete.avro.compression-codec": "gzip", "write.avro.compression-codec": "zstd"},
     False)])
def test_avro_levels_within_their_codecs_range(props: dict[str, str], ok: bool) -> None:
    if ok:
        assert check(props, "compaction")
    else:
        with pytest.raises(PropertyRefused, match="for the Avro codec"):
            check(props, "compaction")
