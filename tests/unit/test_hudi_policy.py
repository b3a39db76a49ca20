"""The Hudi plugin's trigger policies, validation and job arguments, on fake metrics."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.unit.fakes import make_access, make_table
from tms.domain import Decision, Table, TableSpec
from tms.formats.base import TableFormatPlugin
from tms.formats.hudi.plugin import (
    DEFAULT_CLEAN_COMMITS,
    DEFAULT_CLUSTERING_COMMITS,
    DEFAULT_COMPACTION_DELTA_COMMITS,
    DEFAULT_COMPACTION_DELTA_SECONDS,
    HudiFormat,
)

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
BASE = "/lake/trips"
ACCESS = make_access("/lake")


def table(base_path: str = BASE, table_name: str = "", **policy: str) -> Table:
    return make_table(table_id="t", format="hudi", table_name=table_name, base_path=base_path,
                      policy=dict(policy))


def metrics(deltas: int = 0, age_s: float = 0.0, compacted: bool = True,
            table_type: str = "MERGE_ON_READ", pending_compactions: tuple[str, ...] = (),
            pending_clusterings: tuple[str, ...] = (), since_clustering: int = 0,
            since_clean: int = 0, logs: int = 1, clusterable: int = 1, cleanable: int = 1
            ) -> dict[str, Any]:
    """What HudiFormat.inspect returns, with only the numbers a test cares about set."""
    clock = (NOW - timedelta(seconds=age_s)).isoformat()
    pending = [{"instant": t, "action": a, "state": "REQUESTED", "heartbeat_s": None}
               for a, ts in (("compaction", pending_compactions),
                             ("clustering", pending_clusterings)) for t in ts]
    return {
        "table_name": "trips", "table_version": 8, "table_type": table_type,
        "timezone": "UTC", "completed_by_action": {},
        "delta_commits_since_compaction": deltas,
        "last_compaction_instant": "20260601100000000" if compacted else None,
        "last_compaction_time": clock,
        "pending_compactions": list(pending_compactions),
        "pending_clusterings": list(pending_clusterings),
        "last_clustering_instant": None, "commits_since_clustering": since_clustering,
        "last_clean_instant": "20260601090000000", "commits_since_clean": since_clean,
        "last_completed_instant": None, "last_completed_time": None,
        "hudi_last_compaction": "20260601100000000" if compacted else None,
        "hudi_delta_commits": deltas, "hudi_delta_commits_after_request": deltas,
        "hudi_compaction_clock": clock, "hudi_counting": "1.x",
        "writer_config_known": True, "heartbeat_expiry_s": 120.0, "pending": pending,
        "file_groups": 3, "slices_with_logs": logs, "small_file_limit_bytes": 314572800,
        "clusterable_file_groups": clusterable,
        "cleaner_policy": "KEEP_LATEST_COMMITS", "cleaner_retained": 10,
        "cleaner_retention_key": "hoodie.cleaner.commits.retained",
        "cleanable_files": cleanable, "cleanable_bytes": 100 * cleanable,
        "cleanable_file_groups": cleanable, "earliest_commit_to_retain": "20260601080000000",
    }


COUNTED = "; completed delta commits, as Hudi 1.x counts them; 1 file slices have log files"
RUN = {"mode": "scheduleAndExecute", "trigger_strategy": "NUM_COMMITS",
       "max_delta_commits": "5", "max_delta_seconds": "3600"}


def decide(m: dict[str, Any], **policy: str) -> dict[str, Decision]:
    return {d.action: d for d in HudiFormat().evaluate(table(**policy), m, {}, NOW)}


def compaction(m: dict[str, Any], **policy: str) -> Decision:
    return decide(m, **policy)["compaction"]


def strategy(name: str) -> dict[str, str]:
    return {"compaction.trigger-strategy": name}


def test_plugin_shape() -> None:
    plugin = HudiFormat()
    assert isinstance(plugin, TableFormatPlugin)
    assert (plugin.name, plugin.actions) == ("hudi", ("compaction", "clustering", "clean"))
    assert [d.action for d in plugin.evaluate(table(), metrics(), {}, NOW)] == list(
        plugin.actions)


def test_documented_defaults() -> None:
    assert (DEFAULT_COMPACTION_DELTA_COMMITS, DEFAULT_COMPACTION_DELTA_SECONDS) == (5, 3600)
    assert (DEFAULT_CLUSTERING_COMMITS, DEFAULT_CLEAN_COMMITS) == (4, 10)


# compaction: NUM_COMMITS (the default) --------------------------------------------------------
def test_num_commits_at_threshold_runs() -> None:
    d = compaction(metrics(deltas=5))
    assert d.should_run and d.params == RUN
    assert d.reason == ("5 delta commits since the last compaction (threshold 5, NUM_COMMITS)"
                        + COUNTED)


def test_num_commits_one_below_waits() -> None:
    d = compaction(metrics(deltas=4, age_s=10 * 86400))
    assert not d.should_run and d.params == {}
    assert d.reason == ("4 delta commits since the last compaction (threshold 5, NUM_COMMITS)"
                        + COUNTED)


def test_num_commits_override_and_never_compacted() -> None:
    d = compaction(metrics(deltas=2, compacted=False), **{"compaction.delta-commits": "2"})
    assert d.should_run and d.params == {**RUN, "max_delta_commits": "2"}
    assert d.reason == ("2 delta commits since the first delta commit (no compaction on the "
                        "active timeline) (threshold 2, NUM_COMMITS)" + COUNTED)


# compaction: TIME_ELAPSED ---------------------------------------------------------------------
def test_time_elapsed_exactly_at_threshold_runs() -> None:
    d = compaction(metrics(deltas=1, age_s=3600), **strategy("TIME_ELAPSED"))
    assert d.should_run
    assert d.reason == ("1 delta commits; 3600 s since the last compaction "
                        "(threshold 3600 s, TIME_ELAPSED)" + COUNTED)
    assert d.params == {**RUN, "trigger_strategy": "TIME_ELAPSED"}


def test_time_elapsed_just_under_waits() -> None:
    d = compaction(metrics(deltas=50, age_s=3599.999), **strategy("TIME_ELAPSED"))
    assert not d.should_run and d.reason == ("50 delta commits; 3599 s since the last compaction "
                                             "(threshold 3600 s, TIME_ELAPSED)" + COUNTED)


def test_time_elapsed_override() -> None:
    pol = {**strategy("TIME_ELAPSED"), "compaction.delta-seconds": "60"}
    assert compaction(metrics(deltas=1, age_s=61), **pol).should_run
    assert not compaction(metrics(deltas=1, age_s=59), **pol).should_run


# compaction: NUM_AND_TIME / NUM_OR_TIME ----------------------------------------------------------
@pytest.mark.parametrize("deltas,age_s,run", [
    (5, 3600, True), (5, 3599.5, False), (4, 3600, False), (4, 3599.5, False)])
def test_num_and_time(deltas: int, age_s: float, run: bool) -> None:
    d = compaction(metrics(deltas=deltas, age_s=age_s), **strategy("NUM_AND_TIME"))
    assert d.should_run is run
    assert d.reason.startswith(f"{deltas} delta commits (threshold 5) and ")
    assert d.reason.endswith("(threshold 3600 s) since the last compaction, NUM_AND_TIME"
                             + COUNTED)


@pytest.mark.parametrize("deltas,age_s,run", [
    (5, 0, True), (4, 3600, True), (4, 3599.5, False), (1, 3599.5, False)])
def test_num_or_time(deltas: int, age_s: float, run: bool) -> None:
    d = compaction(metrics(deltas=deltas, age_s=age_s), **strategy("NUM_OR_TIME"))
    assert d.should_run is run and d.reason.endswith(", NUM_OR_TIME" + COUNTED)


def test_reason_names_the_elapsed_seconds() -> None:
    d = compaction(metrics(deltas=4, age_s=7200), **strategy("NUM_OR_TIME"))
    assert d.reason == ("4 delta commits (threshold 5) and 7200 s (threshold 3600 s) since the "
                        "last compaction, NUM_OR_TIME" + COUNTED)


# compaction: other rules ------------------------------------------------------------------------
def test_nothing_to_compact_whatever_the_time() -> None:
    d = compaction(metrics(deltas=9, age_s=10 * 86400, logs=0), **strategy("TIME_ELAPSED"))
    assert not d.should_run and d.params == {}
    assert d.reason == ("no file slice has log files (3 file groups, base files only): a "
                        "compaction plan would be empty")


def test_num_commits_after_last_request_counts_from_the_request() -> None:
    m = {**metrics(deltas=7), "hudi_delta_commits_after_request": 2}
    pol = {**strategy("NUM_COMMITS_AFTER_LAST_REQUEST"), "compaction.delta-commits": "3"}
    d = compaction(m, **pol)
    assert not d.should_run and d.reason == (
        "2 delta commits since the last compaction request (threshold 3, "
        "NUM_COMMITS_AFTER_LAST_REQUEST); delta commits of every state, as Hudi 1.x counts "
        "them; 1 file slices have log files")
    d = compaction({**m, "hudi_delta_commits_after_request": 3}, **pol)
    assert d.should_run and d.params == {**RUN, "trigger_strategy":
                                         "NUM_COMMITS_AFTER_LAST_REQUEST",
                                         "max_delta_commits": "3"}


def test_future_clock_hints_at_time_zone() -> None:
    d = compaction(metrics(deltas=9, age_s=-6 * 3600), **strategy("NUM_AND_TIME"))
    assert not d.should_run and "check the policy's timeline.timezone" in d.reason


def test_copy_on_write_never_compacts() -> None:
    d = compaction(metrics(deltas=99, table_type="COPY_ON_WRITE"))
    assert not d.should_run
    assert d.reason == ("compaction applies to MERGE_ON_READ tables only; this table is "
                        "COPY_ON_WRITE")


def test_compaction_disabled() -> None:
    d = compaction(metrics(deltas=99), **{"compaction.enabled": "false"})
    assert not d.should_run and "compaction.enabled=false" in d.reason


def test_requested_compaction_runs_even_when_disabled() -> None:
    d = compaction(metrics(deltas=99, pending_compactions=("20260601110000000",)),
                   **{"compaction.enabled": "false"})
    assert d.should_run and d.params == {"mode": "execute", "instant": "20260601110000000"}
    assert "although compaction.enabled=false" in d.reason


def test_pending_compaction_executes_the_oldest() -> None:
    d = compaction(metrics(deltas=0, pending_compactions=("20260601110000000",
                                                          "20260601113000000")))
    assert d.should_run
    assert d.params == {"mode": "execute", "instant": "20260601110000000"}
    assert d.reason == ("compaction plan 20260601110000000 is REQUESTED (2 pending); executing "
                        "it before scheduling a new one")


# clustering ---------------------------------------------------------------------------------------
def test_clustering_disabled_by_default() -> None:
    d = decide(metrics(since_clustering=100))["clustering"]
    assert not d.should_run
    assert d.reason == "clustering is disabled by policy (clustering.enabled=false)"


@pytest.mark.parametrize("commits,run", [(4, True), (3, False)])
def test_clustering_threshold(commits: int, run: bool) -> None:
    d = decide(metrics(since_clustering=commits), **{"clustering.enabled": "true"})["clustering"]
    assert d.should_run is run
    assert d.reason.startswith(f"{commits} commits with no clustering on the active timeline "
                               "(threshold 4)")
    assert d.params == ({"mode": "scheduleAndExecute"} if run else {})


def test_pending_clustering_executes_the_oldest() -> None:
    d = decide(metrics(pending_clusterings=("20260601110000000",)),
               **{"clustering.enabled": "true"})["clustering"]
    assert d.should_run and d.params == {"mode": "execute", "instant": "20260601110000000"}


def test_clustering_threshold_override() -> None:
    pol = {"clustering.enabled": "true", "clustering.commits": "1"}
    assert decide(metrics(since_clustering=1), **pol)["clustering"].should_run


# clean --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("commits,run", [(10, True), (9, False), (0, False)])
def test_clean_threshold(commits: int, run: bool) -> None:
    d = decide(metrics(since_clean=commits))["clean"]
    assert d.should_run is run
    assert d.reason.startswith(f"{commits} commits since the last clean (threshold 10)")


def test_clean_override_and_disabled() -> None:
    assert decide(metrics(since_clean=1), **{"clean.commits": "1"})["clean"].should_run
    d = decide(metrics(since_clean=50), **{"clean.enabled": "false"})["clean"]
    assert not d.should_run and d.reason == "clean is disabled by policy (clean.enabled=false)"


def test_metrics_are_kept_with_every_decision() -> None:
    m = metrics(deltas=3)
    assert all(d.metrics == m for d in decide(m).values())


# validation ---------------------------------------------------------------------------------------
SPEC = TableSpec(table_id="t", format="hudi", base_path="/lake/trips", table_name="trips")


@pytest.mark.parametrize("change,field,words", [
    ({"base_path": ""}, "table.base_path", "required for hudi"),
    ({"base_path": "lake/trips"}, "table.base_path", "absolute"),
    ({"base_path": "file://otherhost/trips"}, "table.base_path", "on this machine"),
    ({"base_path": "ftp://host/trips"}, "table.base_path", "unsupported location scheme"),
    ({"base_path": "s3a://user:pw@bucket/trips"}, "table.base_path", "credentials"),
    ({"table_name": "-x"}, "table.table_name", "letters"),
    ({"policy": {"compaction.delta-commit": "5"}}, "table.policy[compaction.delta-commit]",
     "unknown policy key; did you mean compaction.delta-commits or compaction.delta-seconds?; "
     "known: clean.commits, "),
    ({"policy": {"compaction.delta-commits": " 5"}}, "table.policy[compaction.delta-commits]",
     "ASCII digits only"),
    ({"policy": {"compaction.delta-commits": "0"}}, "table.policy[compaction.delta-commits]",
     "integer from 1 to"),
    ({"policy": {"compaction.delta-seconds": "soon"}}, "table.policy[compaction.delta-seconds]",
     "integer"),
    ({"policy": {"compaction.trigger-strategy": "NUM"}},
     "table.policy[compaction.trigger-strategy]",
     "one of NUM_COMMITS, NUM_COMMITS_AFTER_LAST_REQUEST, TIME_ELAPSED, NUM_AND_TIME, "
     "NUM_OR_TIME"),
    ({"policy": {"clustering.enabled": "maybe"}}, "table.policy[clustering.enabled]",
     "true or false"),
    ({"policy": {"clustering.enabled": "yes"}}, "table.policy[clustering.enabled]",
     "true or false"),
    ({"policy": {"clean.commits": "-1"}}, "table.policy[clean.commits]", "integer from 1 to"),
    ({"policy": {"timeline.timezone": "Mars/Olympus"}}, "table.policy[timeline.timezone]",
     "IANA time zone"),
])
def test_validate(change: dict, field: str, words: str) -> None:
    spec = replace(SPEC, **change)
    problems = dict(HudiFormat().validate(spec) + HudiFormat().check_policy(spec.policy))
    assert field in problems and words in problems[field]


def test_validate_accepts_good_specs() -> None:
    policy = {"compaction.trigger-strategy": "NUM_OR_TIME", "compaction.delta-commits": "3",
              "compaction.delta-seconds": "600", "clustering.enabled": "true",
              "clustering.commits": "8", "clean.enabled": "false", "clean.commits": "20",
              "timeline.timezone": "Asia/Shanghai", "scheduler.pull-interval-s": "60"}
    plugin = HudiFormat()
    assert plugin.validate(replace(SPEC, policy=policy)) == []
    assert plugin.check_policy(policy) == []
    assert plugin.check_policy({"compaction.trigger-strategy": "num_or_time"})  # exact only
    assert plugin.validate(replace(SPEC, base_path="file:///lake/trips", table_name="")) == []
    assert plugin.validate(replace(SPEC, base_path="s3a://bucket/lake/trips")) == []
