"""Where the Hudi decisions meet the Hudi jobs: what a decision records is what its job reads,
a clean refused for want of the writers' retention names the catalog properties to set, the
executor's recheck does not turn a failed read into a skipped operation, and a run Hudi found
nothing to plan for is not queued again until the timeline moves.

Real fixture tables (tests/fixtures/hudi) with instant files added, the real plugin; the
catalog is a fake access (no database needed here)."""

from __future__ import annotations

import ast
import inspect
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.unit.fakes import make_access, make_op, make_table
from tests.unit.test_hudi_fixture_decisions import FIXTURES, unzip
from tests.unit.test_hudi_plans import clustering_plan_in
from tms.catalogs import CatalogAccess
from tms.domain import Decision, Operation, OperationState
from tms.formats.hudi import jobs as hudi_jobs
from tms.formats.hudi.plugin import HudiFormat
from tms.formats.hudi.policy import PARAMS
from tms.formats.hudi.slices import SlicesError

V6_LOGS = "quickstart_trips_table__mor__avro__v6_trips_8i1u.zip"  # 2 delta commits, 1 log file
V8 = "quickstart_trips_table__mor__avro__v8_trips_8i3u1d.zip"  # compaction, clustering, clean due
V9_COW = "sample_table__cow__v9_txns_simple_meta.zip"  # holds a real clustering plan
NOW = datetime(2026, 6, 1, tzinfo=UTC)
T = "20260601000000000"  # newer than every instant of the fixture
RETAIN = {"hudi.writer.hoodie.cleaner.commits.retained": "1"}
LOW = {"compaction.delta-commits": "1", "clustering.enabled": "true", "clustering.commits": "1",
       "clean.commits": "1"}


@pytest.fixture
def base(tmp_path: Path) -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(f"Hudi fixtures not found at {FIXTURES}")
    return unzip(V6_LOGS, tmp_path)


def access(base: Path, properties: dict[str, str] | None = None) -> CatalogAccess:
    return replace(make_access(str(base.parent)), catalog_id="lake",
                   properties=dict(properties or {}))


def decisions(base: Path, catalog: CatalogAccess, policy: dict[str, str] | None = None
              ) -> dict[str, Decision]:
    table = make_table(table_id="trips", format="hudi", table_name="trips",
                       base_path=str(base), policy=dict(policy or {}))
    plugin = HudiFormat(clock=lambda: NOW)
    return {d.action: d for d in plugin.evaluate(table, plugin.inspect(table, catalog), {}, NOW)}


# the clean's reason names what to set -----------------------------------------------------------
def test_no_writer_configuration_names_the_catalog_properties(base: Path) -> None:
    clean = decisions(base, access(base), LOW)["clean"]
    assert not clean.should_run and clean.reason.startswith("clean refused: ")
    for words in ("hudi.writer.hoodie.cleaner.commits.retained", "hudi.writer.properties-file",
                  "catalogs/lake", "hoodie.cleaner.policy"):
        assert words in clean.reason, clean.reason


def test_a_refused_writer_configuration_says_why(base: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMS_HUDI_WRITER_DIR", raising=False)
    clean = decisions(base, access(base, {"hudi.writer.properties-file": "lake/t.properties"}),
                      LOW)["clean"]
    assert not clean.should_run
    assert "the writer configuration is refused" in clean.reason
    assert "TMS_HUDI_WRITER_DIR is not set" in clean.reason


def test_a_missing_retention_names_its_catalog_property(base: Path) -> None:
    clean = decisions(base, access(base, {"hudi.writer.hoodie.cleaner.policy":
                                          "KEEP_LATEST_FILE_VERSIONS"}), LOW)["clean"]
    assert not clean.should_run
    assert "catalog property hudi.writer.hoodie.cleaner.fileversions.retained" in clean.reason


def test_a_pending_clean_without_retention_is_not_run_and_says_what_to_set(base: Path) -> None:
    (base / ".hoodie" / f"{T}.clean.requested").write_bytes(b"")
    clean = decisions(base, access(base), {"clean.enabled": "false"})["clean"]
    assert not clean.should_run and f"clean {T} is REQUESTED" in clean.reason
    assert "hudi.writer.hoodie.cleaner.commits.retained" in clean.reason


# what a decision records is what its job reads -------------------------------------------------
def _runs(tmp: Path) -> tuple[Path, list[Decision]]:
    """(the table, a decision to run of every kind): scheduled compaction, clustering and
    clean on the v8 fixture, and a pending plan of each action executed (the clustering plan
    a real one, from the v9 fixture)."""
    base = unzip(V8, tmp / "v8")
    timeline = base / ".hoodie" / "timeline"
    plan = clustering_plan_in(base)  # its files where this table is (else refused)
    found = [d for d in decisions(base, access(base, RETAIN), LOW).values() if d.should_run]
    for action, data in (("compaction", b""), ("clustering", plan), ("clean", b"")):
        requested = timeline / f"{T}.{action}.requested"
        requested.write_bytes(data)
        found.append(decisions(base, access(base, RETAIN), {})[action])
        requested.unlink()
    return base, found


def test_every_param_a_decision_records_is_declared_and_read(tmp_path: Path) -> None:
    _, runs = _runs(tmp_path)
    kinds = {(d.action, str(d.params.get("mode")), "instant" in d.params) for d in runs}
    assert kinds == {("compaction", "scheduleAndExecute", False), ("compaction", "execute", True),
                     ("clustering", "scheduleAndExecute", False),
                     ("clustering", "execute", True), ("clean", "None", False),
                     ("clean", "None", True)}, kinds
    for d in runs:
        assert set(d.params) <= set(PARAMS[d.action]), (d.action, d.params)
        assert set(d.params) <= set(hudi_jobs.READS[d.action]), (d.action, d.params)
    # and the job reads nothing the plugin does not declare
    for action, names in hudi_jobs.READS.items():
        assert set(names) == set(PARAMS[action]), action


def test_the_job_reads_only_the_params_it_names() -> None:
    """Every ``params.get("...")`` / ``_int_param(params, "...")`` in hudi_jobs names a param
    of READS (so a param written by a decision is never silently dropped by a typo)."""
    tree = ast.parse(inspect.getsource(hudi_jobs))
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            arg = node.args[-1] if isinstance(node.func, ast.Name) else node.args[0]
            owner = (node.func.value if isinstance(node.func, ast.Attribute) else None)
            by_get = (isinstance(owner, ast.Name) and owner.id == "params"
                      and getattr(node.func, "attr", "") == "get")
            by_helper = isinstance(node.func, ast.Name) and node.func.id == "_int_param"
            if (by_get or by_helper) and isinstance(arg, ast.Constant):
                read.add(str(arg.value))
    assert read and read <= {n for names in hudi_jobs.READS.values() for n in names}, read


def test_each_decision_builds_the_job_it_describes(tmp_path: Path) -> None:
    base, runs = _runs(tmp_path)
    plugin = HudiFormat(clock=lambda: NOW)
    table = make_table(table_id="trips", format="hudi", table_name="trips", base_path=str(base))
    for d in runs:
        params: dict[str, Any] = {k: str(v) for k, v in d.params.items()}
        assert plugin.check_params(d.action, params) == []
        job = plugin.build_job(table, access(base, RETAIN), make_op(action=d.action,
                                                                     params=params))
        args = list(job.args)
        if d.action == "clean":  # no instant flag: HoodieCleaner finishes pending cleans
            assert args == ["--target-base-path", str(base)]
            continue
        assert args[args.index("--mode") + 1] == params["mode"]
        if params["mode"] == "execute":
            assert args[args.index("--instant-time") + 1] == params["instant"]
            assert "hoodie.compact.inline.max.delta.commits=1" not in args
        elif d.action == "compaction":
            assert (f"hoodie.compact.inline.max.delta.commits={params['max_delta_commits']}"
                    in args)
            assert (f"hoodie.compact.inline.trigger.strategy={params['trigger_strategy']}"
                    in args)


def test_a_bad_pending_clean_instant_builds_no_job(base: Path) -> None:
    table = make_table(table_id="trips", format="hudi", table_name="trips", base_path=str(base))
    with pytest.raises(ValueError, match="instant"):
        HudiFormat().build_job(table, access(base, RETAIN), make_op(
            action="clean", params={"instant": "1;--props=/etc/x"}))


# the recheck and "no plan" ----------------------------------------------------------------------
def test_a_failed_read_at_recheck_runs_as_decided(base: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A compaction queued on a table whose file slices cannot be read a moment later is not
    ended SKIPPED as "no longer needed": the recheck cannot tell, so the job runs and Hudi's
    own planner decides (no plan ends SKIPPED there)."""
    table = make_table(table_id="trips", format="hudi", table_name="trips", base_path=str(base),
                       policy=LOW)
    plugin = HudiFormat(clock=lambda: NOW)
    queued = decisions(base, access(base, RETAIN), LOW)["compaction"]
    assert queued.should_run
    op = make_op(action="compaction", params={k: str(v) for k, v in queued.params.items()})
    assert plugin.recheck(table, access(base, RETAIN), op) is None

    def unreadable(*_: Any) -> Any:
        raise SlicesError("storage said no")

    monkeypatch.setattr("tms.formats.hudi.inspect.latest_slices", unreadable)
    assert plugin.recheck(table, access(base, RETAIN), op) is None
    monkeypatch.undo()
    # a real change still ends it: the log files compacted away (base files only now)
    for log in base.rglob(".*.log.*"):
        log.unlink()
    stale = plugin.recheck(table, access(base, RETAIN), op)
    assert stale is not None and "no file slice has log files" in stale


def test_a_pending_plan_gone_at_recheck_ends_skipped(base: Path) -> None:
    (base / ".hoodie" / f"{T}.compaction.requested").write_bytes(b"")
    table = make_table(table_id="trips", format="hudi", table_name="trips", base_path=str(base),
                       policy={"compaction.enabled": "false"})
    plugin = HudiFormat(clock=lambda: NOW)
    op = make_op(action="compaction", params={"mode": "execute", "instant": T})
    assert plugin.recheck(table, access(base, RETAIN), op) is None
    (base / ".hoodie" / f"{T}.compaction.requested").unlink()  # a writer's compactor ran it
    (base / ".hoodie" / f"{T}.commit").write_bytes(b"{}")
    stale = plugin.recheck(table, access(base, RETAIN), op)
    assert stale is not None and stale.startswith("no longer needed")


# no plan, then not again while the timeline stands still ---------------------------------------
def _skipped(params: dict[str, str], metrics: dict[str, Any],
             result: dict[str, Any] | None) -> Operation:
    op = make_op(7, action="compaction", state=OperationState.SKIPPED, params=params,
                 metrics=metrics)
    return replace(op, outcome=replace(op.outcome, result=result))


def test_no_plan_holds_the_same_work_until_the_timeline_moves(base: Path) -> None:
    table = make_table(table_id="trips", format="hudi", table_name="trips", base_path=str(base),
                       policy=LOW)
    plugin = HudiFormat(clock=lambda: NOW)
    metrics = plugin.inspect(table, access(base, RETAIN))
    (due,) = [d for d in plugin.evaluate(table, metrics, {}, NOW) if d.action == "compaction"]
    assert due.should_run
    params = {k: str(v) for k, v in due.params.items()}
    no_plan = {"exit_code": 255, "no_plan": "Couldn't do schedule"}
    held = plugin.unchanged_since(table, metrics, due, _skipped(params, metrics, no_plan))
    assert held is not None and "found nothing to plan" in held and "operation 7" in held
    for last in (None,  # never ran
                 _skipped(params, metrics, None),  # skipped by a recheck: nothing ran
                 _skipped({**params, "max_delta_commits": "2"}, metrics, no_plan),  # other work
                 replace(_skipped(params, metrics, no_plan), state=OperationState.SUCCEEDED)):
        assert plugin.unchanged_since(table, metrics, due, last) is None
    # a writer's new delta commit: Hudi may plan now, so the compaction is queued again
    (base / ".hoodie" / "20260101000000000.deltacommit").write_bytes(
        (base / ".hoodie" / "20250331030645735.deltacommit").read_bytes())
    moved = plugin.inspect(table, access(base, RETAIN))
    assert plugin.unchanged_since(table, moved, due, _skipped(params, metrics, no_plan)) is None
