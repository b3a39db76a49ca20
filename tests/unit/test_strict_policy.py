"""The one strict parser, the policy schema built on it, and the Iceberg job's own typed
options (kept in step with the API's schema)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tms import strict
from tms.formats.hudi.plugin import HudiFormat
from tms.formats.iceberg.params import PARAMS
from tms.formats.iceberg.plugin import IcebergFormat
from tms.jobs import iceberg_maintenance as job
from tms.jobs import procedures
from tms.policy.common import (
    COMMON_KEYS,
    effective_policy,
    in_force,
    pull_interval_s,
    validate_policy,
)
from tms.policy.schema import Kind, PolicyKey, integer

MALFORMED_NUMBERS = [" 5", "5 ", "5\n", "\u0665", "+5", "1_0", "0x10", "1e3", "", "05", "5.0",
                     "99999999999999999999", "-0", "５", "5 5", "\u00b2"]


@pytest.mark.parametrize("raw", MALFORMED_NUMBERS)
def test_numbers_are_ascii_digits_only(raw: str) -> None:
    with pytest.raises(ValueError, match="integer from 1 to 100"):
        strict.parse_int(raw, 1, 100)


def test_numbers_within_range_and_sign_only_where_negative_allowed() -> None:
    assert strict.parse_int("0", 0, 5) == 0 and strict.parse_int("100", 1, 100) == 100
    for raw in ("0", "101", "-1"):
        with pytest.raises(ValueError):
            strict.parse_int(raw, 1, 100)
    assert strict.parse_int("-5", -10, 10) == -5
    with pytest.raises(ValueError):
        strict.parse_int("-11", -10, 10)


@pytest.mark.parametrize("raw", ["yes", "no", "1", "0", "on", "TRUE", "True", " true", "false "])
def test_booleans_are_exactly_true_or_false(raw: str) -> None:
    with pytest.raises(ValueError, match="true or false"):
        strict.parse_bool(raw)
    assert strict.parse_bool("true") is True and strict.parse_bool("false") is False


def test_choices_decimals_memory_and_times() -> None:
    with pytest.raises(ValueError):
        strict.parse_choice("num_commits", ("NUM_COMMITS",))
    assert strict.parse_decimal("0.6", 0.1, 0.9) == 0.6
    for raw in ("0.95", ".6", "0,6", " 0.6", "6e-1", "nan", "0.6\u0665"):
        with pytest.raises(ValueError):
            strict.parse_decimal(raw, 0.1, 0.9)
    assert strict.parse_memory("4g", 1, 1 << 40) == 4 << 30
    for raw in ("4", "4 g", "4gb", "-4g", "\u0664g", "0g"):
        with pytest.raises(ValueError):
            strict.parse_memory(raw, 1, 1 << 40)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    lo, hi = strict.time_window(now)
    assert strict.parse_timestamp("2025-05-01T00:00:00.123Z", lo, hi).year == 2025
    for raw in ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2025-05-01 00:00:00Z",
                "2025-05-01T00:00:00+02:00", "2025-13-01T00:00:00Z", " 2025-05-01T00:00:00Z"):
        with pytest.raises(ValueError):
            strict.parse_timestamp(raw, lo, hi)
    assert hi - now == timedelta(hours=1)


def test_schema_checks_itself() -> None:
    with pytest.raises(ValueError, match="minimum and a maximum"):
        PolicyKey("x", Kind.INT, 1, "doc")
    with pytest.raises(ValueError):
        integer("x", 500, 1, 100, "s", "default out of range")
    with pytest.raises(ValueError, match="doc"):
        integer("x", 5, 1, 100, "s", "")


def _all_keys() -> dict[str, PolicyKey]:
    return {**COMMON_KEYS, **IcebergFormat.policy_keys, **HudiFormat.policy_keys}


def test_every_number_has_bounds_and_every_key_a_doc() -> None:
    keys = [*_all_keys().values(), *(p for a in PARAMS.values() for p in a.values()),
            *(p for a in HudiFormat.action_params.values() for p in a.values())]
    for k in keys:
        assert k.doc, k.key
        if k.kind in (Kind.INT, Kind.DECIMAL, Kind.MEMORY):
            assert k.minimum is not None and k.maximum is not None, k.key


def test_pull_interval_at_most_thirty_days_and_clamped_when_stored() -> None:
    assert validate_policy({}, {"scheduler.pull-interval-s": str(30 * 86_400)}) == []
    problems = validate_policy({}, {"scheduler.pull-interval-s": str(30 * 86_400 + 1)})
    assert [f for f, _ in problems] == ["table.policy[scheduler.pull-interval-s]"]
    assert pull_interval_s({"scheduler.pull-interval-s": "99999999999999999999"}, 600) == 600
    assert pull_interval_s({}, 10**12) == 30 * 86_400


def test_effective_policy_names_the_source() -> None:
    keys = IcebergFormat.policy_keys
    got = {e.key: e for e in effective_policy(
        keys, {"compaction.min-small-files": "50", "scheduler.pull-interval-s": " 5"},
        {"compaction.min-small-files": "40", "compaction.quiet-s": "10"})}
    assert (got["compaction.min-small-files"].value, got["compaction.min-small-files"].source,
            got["compaction.min-small-files"].default) == ("50", "table", "12")
    assert (got["compaction.quiet-s"].value, got["compaction.quiet-s"].source) == ("10",
                                                                                  "catalog")
    assert got["manifests.enabled"].source == "default" and got["manifests.enabled"].value \
        == "true"
    assert "stored value refused" in got["scheduler.pull-interval-s"].doc
    assert "spark.conf.spark.sql.shuffle.partitions" not in got  # unset, no default


def test_policy_in_force_is_the_tables_over_its_catalogs_known_keys() -> None:
    catalog = {"compaction.min-small-files": "40", "compaction.quiet-s": "10",
               "compaction.delta-commits": "3", "execution.max-attempts": "5"}
    got = in_force(IcebergFormat.policy_keys, {"compaction.min-small-files": "50"}, catalog)
    assert got == {"compaction.min-small-files": "50", "compaction.quiet-s": "10",
                   "execution.max-attempts": "5"}  # another format's key stays out
    shown = {e.key: (e.value, e.source) for e in effective_policy(
        IcebergFormat.policy_keys, {"compaction.min-small-files": "50"}, catalog)}
    assert {k: shown[k] for k in got} == {"compaction.min-small-files": ("50", "table"),
                                         "compaction.quiet-s": ("10", "catalog"),
                                         "execution.max-attempts": ("5", "catalog")}


# the job's own option checks ------------------------------------------------------------------
def _job(action: str, options: dict[str, str]) -> job.MaintenanceRequest:
    return job.parse_spec({"catalog_name": "c", "catalog_properties": {}, "table": "ns.t",
                           "allowed_locations": ["/wh"],
                           "action": action, "options": options})


@pytest.mark.parametrize("action, options", [
    ("compaction", {"target-file-size-bytes": "-1"}),
    ("compaction", {"target-file-size-bytes": " 1024"}),
    ("compaction", {"min-input-files": "\u0662"}),
    ("compaction", {"rewrite-all": "yes"}),
    ("compaction", {"io-impl": "org.Evil"}),
    ("clustering", {"sort-order": "id", "max-file-group-size-bytes": "0"}),
    ("rewrite_position_deletes", {"partial-progress.max-commits": "99999999999999999999"}),
    ("rewrite_position_deletes", {"use-starting-sequence-number": "true"}),
    ("expire_snapshots", {"retain-last": "+3"}),
    ("compaction", {"compression-codec": "zstd'); DROP TABLE x"}),
    ("compaction", {"compression-codec": "ZSTD"}),
    ("clustering", {"sort-order": "id", "compression-level": "23"}),
    ("rewrite_position_deletes", {"compression-level": "-1"}),
    ("expire_snapshots", {"compression-codec": "zstd"}),
    ("compaction", {"manifests-first": "no"}),
    ("rewrite_manifests", {"manifests-first": "true"}),
])
def test_job_refuses_bad_options_before_spark(action: str, options: dict[str, str]) -> None:
    with pytest.raises(job.SpecError):
        _job(action, options)
    assert not job.is_retryable(job.SpecError("x"), "SpecError", "x")


def test_job_options_render_from_parsed_values() -> None:
    spec = _job("compaction", {"min-input-files": "2", "rewrite-all": "true"})
    assert "map('min-input-files', '2', 'rewrite-all', 'true')" in job.ACTIONS["compaction"](
        spec).sql("c")


@pytest.mark.parametrize("action, allowed", [
    ("compaction", procedures.DATA_REWRITE_OPTIONS),
    ("clustering", procedures.DATA_REWRITE_OPTIONS),
    ("rewrite_position_deletes", procedures.REWRITE_OPTIONS)])
def test_job_options_match_the_api_schema(action: str, allowed: dict) -> None:
    api = {k: v for k, v in PARAMS[action].items() if k not in ("sort-order", "zorder-columns",
                                                              "partitions", procedures.WRITE_CODEC,
                                                              procedures.WRITE_LEVEL,
                                                              procedures.MANIFESTS_FIRST)}
    assert set(api) == set(allowed)
    # the write options are the job's own (write_format), checked by it the same way
    assert PARAMS[action][procedures.WRITE_CODEC].choices == procedures.write_format.CODECS
    level = PARAMS[action][procedures.WRITE_LEVEL]
    assert (level.minimum, level.maximum) == (0, procedures.MAX_COMPRESSION_LEVEL)
    for key, spec in api.items():
        bounds = allowed[key]
        if spec.kind is Kind.BOOL:
            assert bounds is None, key
        else:
            assert bounds == (spec.minimum, spec.maximum), key


def test_job_accepts_what_the_api_accepts_at_the_edges() -> None:
    for action in ("compaction", "rewrite_position_deletes"):
        for key, spec in PARAMS[action].items():
            if spec.kind is Kind.INT:
                for edge in (spec.minimum, spec.maximum):
                    _job(action, {key: str(edge)})


def test_what_the_iceberg_policies_emit_is_within_the_schema() -> None:
    from tms.formats.iceberg.policy import RULES

    now = datetime(2026, 6, 1, tzinfo=UTC)
    times = [int((now - timedelta(days=d)).timestamp() * 1000) for d in (30, 20, 10, 0)]
    m = {"small_files": 50, "data_files": 60, "small_file_bytes": 1, "manifests": 500,
         "delete_files": 500, "snapshots": 40, "_snapshot_times_ms": times * 10}
    pol = {"clustering.enabled": "true", "clustering.sort-order": "id DESC NULLS LAST, kind",
           "orphan-files.enabled": "true"}
    plugin = IcebergFormat()
    ran = [d for d in (rule(pol, m, None, now) for rule in RULES.values()) if d.should_run]
    assert {d.action for d in ran} == set(RULES)
    for d in ran:
        assert plugin.check_params(d.action, d.params) == [], d.action
