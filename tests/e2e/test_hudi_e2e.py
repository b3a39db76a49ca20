"""The Hudi path end to end: real tms-api, tms-scheduler and tms-executor processes, PostgreSQL
and ZooKeeper, the real spark-submit, real Hudi tables (copies of a merge-on-read fixture with
log files), and a compiled stand-in for Hudi's ``HoodieCompactor`` (tests/hudi_stand_in.py: no
Hudi jar can be obtained here; it checks the flags, reads ``--props``, records both, and acts on
the timeline as the compactor would).

- A catalog whose properties carry the writers' configuration (``hudi.writer.*``) and the Hudi
  jars: the scheduler decides a compaction with its reason and the trigger it evaluated; the
  executor runs it through spark-submit with exactly that trigger and the writers' settings in
  the properties file; the compactor schedules with it (Hudi's default of 5 would not) and the
  operation SUCCEEDS. Run again by hand with no new delta commit, Hudi finds no plan: SKIPPED
  with the reason, never FAILED, never retried.
- The writers' compaction strategy (log files of at least 1 MiB) leaves Hudi nothing to plan
  where TMS decided a compaction: SKIPPED with the reason, and not queued again while the
  timeline stands still (ExplainTable says why).
- A REQUESTED compaction plan on the timeline while ``compaction.enabled=false``: queued with
  mode execute and the plan's instant, executed with ``--instant-time``.
- A catalog without the writers' retention: no clean is queued, and ExplainTable's reason
  names the catalog properties to set.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import stub_for, wait_for
from tests.hudi_stand_in import compile_stand_in, received
from tests.unit.test_hudi_fixture_decisions import FIXTURES, unzip
from tms.formats.hudi.writer_keys import LOCK_PROVIDER_ZOOKEEPER
from tms.spark.settings import DEFAULT_EXECUTOR_MEMORY
from tms.v1 import tms_pb2

pytestmark = pytest.mark.e2e

OP = tms_pb2.Operation
FIXTURE = "quickstart_trips_table__mor__avro__v6_trips_8i1u.zip"  # 2 delta commits, 1 log file
PLAN = "20250331030700000"  # a compaction plan after the fixture's delta commits
SIZE_STRATEGY = "org.apache.hudi.table.action.compact.strategy.LogFileSizeBasedCompactionStrategy"
RETENTION = {"hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
             "hoodie.cleaner.commits.retained": "1",
             "hoodie.keep.min.commits": "20", "hoodie.keep.max.commits": "30"}


def _writer(zk_hosts: str) -> dict[str, str]:
    """The writers' configuration: their retention and the ZooKeeper lock they share."""
    return {**RETENTION,
            "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
            "hoodie.cleaner.policy.failed.writes": "LAZY",
            "hoodie.write.lock.provider": LOCK_PROVIDER_ZOOKEEPER,
            "hoodie.write.lock.zookeeper.url": zk_hosts.split(":")[0],
            "hoodie.write.lock.zookeeper.port": zk_hosts.split(":")[1],
            "hoodie.write.lock.zookeeper.base_path": "/hudi/locks",
            "hoodie.write.lock.zookeeper.lock_key": "trips"}


def _catalog(stub, catalog_id: str, root: Path, properties: dict[str, str]) -> None:
    stub.CreateCatalog(tms_pb2.CreateCatalogRequest(catalog_id=catalog_id, catalog=(
        tms_pb2.Catalog(type="hadoop", properties=properties,
                        allowed_locations=[str(root)]))), timeout=10)


def _register(stub, table_id: str, catalog: str, base: Path, policy: dict[str, str]) -> None:
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=tms_pb2.Table(
        format="hudi", catalog=catalog, table_name="trips", base_path=str(base),
        policy=policy)), timeout=10)


def _ops(stub, table_id: str) -> list[tms_pb2.Operation]:
    """The table's operations, oldest first."""
    return list(reversed(stub.ListOperations(tms_pb2.ListOperationsRequest(
        parent=f"tables/{table_id}"), timeout=10).operations))


def _only(stub, table_id: str, state: int) -> tms_pb2.Operation | None:
    ops = _ops(stub, table_id)
    assert len(ops) <= 1, [(o.name, o.action, o.reason) for o in ops]
    return ops[0] if ops and ops[0].state == state else None


def _explained(stub, table_id: str) -> dict[str, tms_pb2.ActionExplanation] | None:
    """ExplainTable's actions once every one of them is decided."""
    found = stub.ExplainTable(tms_pb2.ExplainTableRequest(name=f"tables/{table_id}"),
                              timeout=10).actions
    return {a.action: a for a in found} if found and all(a.decided for a in found) else None


def _conf(argv: list[str]) -> dict[str, str]:
    pairs = [argv[i + 1] for i, a in enumerate(argv) if a == "--hoodie-conf"]
    return dict(p.split("=", 1) for p in pairs)


def test_hudi_compaction_and_clean_decisions_end_to_end(make_stack, tmp_path: Path) -> None:
    if not FIXTURES.is_dir():
        pytest.fail(f"Hudi fixtures not found at {FIXTURES}")
    utilities, bundle = compile_stand_in(tmp_path / "stand-in")
    jars = {"hudi.utilities-jar": utilities, "hudi.spark-bundle": bundle}
    lake, bare = tmp_path.resolve() / "lake", tmp_path.resolve() / "bare"
    trips = unzip(FIXTURE, lake / "trips")
    planned = unzip(FIXTURE, lake / "planned")
    (planned / ".hoodie" / f"{PLAN}.compaction.requested").write_bytes(b"")
    unmanaged = unzip(FIXTURE, bare / "trips")
    sized_root = tmp_path.resolve() / "sized"
    sized = unzip(FIXTURE, sized_root / "trips")  # its one log file is 1148 bytes

    stack = make_stack()
    stack.start_api()
    stub = stub_for(stack)
    assert stack.zookeeper is not None
    writer = _writer(stack.zookeeper.hosts)
    _catalog(stub, "lake", lake, {**{f"hudi.writer.{k}": v for k, v in writer.items()}, **jars})
    _catalog(stub, "bare", bare, jars)  # no writer configuration: retention unknown
    _catalog(stub, "sized", sized_root, {
        **{f"hudi.writer.{k}": v for k, v in RETENTION.items()},
        "hudi.writer.hoodie.compaction.strategy": SIZE_STRATEGY,
        "hudi.writer.hoodie.compaction.logfile.size.threshold": "1048576", **jars})
    _register(stub, "lake.trips", "lake", trips, {"compaction.delta-commits": "1"})
    _register(stub, "lake.planned", "lake", planned, {"compaction.enabled": "false"})
    _register(stub, "bare.trips", "bare", unmanaged, {"compaction.enabled": "false",
                                                     "clean.commits": "1"})
    _register(stub, "sized.trips", "sized", sized, {"compaction.delta-commits": "1"})
    stack.start_scheduler()

    # the scheduler's decisions, with their reasons --------------------------------------------
    queued = wait_for(lambda: _only(stub, "lake.trips", OP.QUEUED),
                      "the scheduler to queue a compaction of lake.trips")
    assert queued.action == "compaction" and queued.trigger == "policy"
    assert queued.reason.startswith("2 delta commits since the first delta commit (no "
                                    "compaction on the active timeline) (threshold 1, "
                                    "NUM_COMMITS)"), queued.reason
    assert "1 file slices have log files" in queued.reason
    assert dict(queued.params) == {"mode": "scheduleAndExecute", "trigger_strategy": "NUM_COMMITS",
                                   "max_delta_commits": "1", "max_delta_seconds": "3600"}
    pending = wait_for(lambda: _only(stub, "lake.planned", OP.QUEUED),
                       "the scheduler to queue the pending compaction plan of lake.planned")
    assert dict(pending.params) == {"mode": "execute", "instant": PLAN}
    assert f"compaction plan {PLAN} is REQUESTED" in pending.reason
    assert "although compaction.enabled=false" in pending.reason
    wait_for(lambda: _only(stub, "sized.trips", OP.QUEUED),
             "the scheduler to queue a compaction of sized.trips")

    explained = wait_for(lambda: _explained(stub, "lake.trips"), "decisions on lake.trips")
    assert explained["compaction"].should_run
    assert explained["compaction"].operation == queued.name
    assert not explained["clean"].should_run  # the retention is known; the count is not met
    assert explained["clean"].reason.startswith(
        "2 commits with no clean on the active timeline (threshold 10)")
    assert explained["clustering"].reason.startswith(
        "clustering is disabled by policy (clustering.enabled=false)")
    # the catalog's writer configuration locks under 'trips', the table is named otherwise:
    # every decision says so (issue 31's lock_key leftover)
    assert "hoodie.write.lock.zookeeper.lock_key is 'trips'" in explained["clustering"].reason
    unknown = wait_for(lambda: _explained(stub, "bare.trips"), "decisions on bare.trips")
    clean = unknown["clean"]
    assert not clean.should_run and not clean.operation
    assert clean.reason.startswith("clean refused: the writers' cleaner retention is unknown: "
                                   "no writer configuration for this table"), clean.reason
    for words in ("hudi.writer.hoodie.cleaner.commits.retained", "hudi.writer.properties-file",
                  "catalogs/bare"):
        assert words in clean.reason, clean.reason
    assert _ops(stub, "bare.trips") == []  # nothing queued: no compaction, no clean

    # the executor runs both through spark-submit and the stand-in ------------------------------
    stack.start_executor()
    done = wait_for(lambda: _only(stub, "lake.trips", OP.SUCCEEDED),
                    "the compaction of lake.trips to succeed")
    assert done.attempt == 1 and done.exit_code == 0, done.error
    executed = wait_for(lambda: _only(stub, "lake.planned", OP.SUCCEEDED),
                        "the pending plan of lake.planned to be executed")
    assert executed.attempt == 1, executed.error

    ((argv, props),) = received(trips)
    assert argv[:6] == ["--base-path", str(trips), "--table-name", "trips",
                        "--mode", "scheduleAndExecute"]
    assert _conf(argv) == {"hoodie.compact.inline.trigger.strategy": "NUM_COMMITS",
                           "hoodie.compact.inline.max.delta.commits": "1",
                           "hoodie.compact.inline.max.delta.seconds": "3600"}
    assert argv[argv.index("--spark-memory") + 1] == DEFAULT_EXECUTOR_MEMORY
    props_uri = argv[argv.index("--props") + 1]
    assert props_uri.startswith("file:///") and props_uri.endswith("/hudi.properties")
    assert not Path(props_uri[len("file://"):]).exists()  # removed with the attempt
    assert props == writer  # the writers' configuration, exactly, nothing else
    compactions = sorted(p.name for p in (trips / ".hoodie").glob("*.commit"))
    assert len(compactions) == 1  # the stand-in scheduled and completed one

    ((argv, props),) = received(planned)
    assert argv[:8] == ["--base-path", str(planned), "--table-name", "trips",
                        "--mode", "execute", "--instant-time", PLAN]
    assert _conf(argv) == {}  # a pending plan: no trigger, and the writers' clean may run
    assert props == writer
    assert (planned / ".hoodie" / f"{PLAN}.commit").is_file()

    # the writers' strategy finds nothing to compact: SKIPPED, then held while nothing changes
    nothing = wait_for(lambda: _only(stub, "sized.trips", OP.SKIPPED),
                       "the compaction of sized.trips to end SKIPPED")
    assert nothing.attempt == 1 and nothing.error == (
        "Hudi found nothing to plan: \"Couldn't do schedule\" (HoodieCompactor, exit 255)")
    ((argv, props),) = received(sized)
    assert argv[argv.index("--strategy") + 1] == SIZE_STRATEGY
    assert props["hoodie.compaction.logfile.size.threshold"] == "1048576"
    stub.PauseTable(tms_pb2.PauseTableRequest(name="tables/sized.trips"), timeout=10)
    stub.ResumeTable(tms_pb2.ResumeTableRequest(name="tables/sized.trips"), timeout=10)

    def held() -> tms_pb2.ActionExplanation | None:
        found = _explained(stub, "sized.trips")
        return found["compaction"] if found and "waiting for a new instant" in found[
            "compaction"].reason else None

    hold = wait_for(held, "the scheduler to decide sized.trips again")
    assert not hold.should_run and not hold.operation
    assert f"the last compaction (operation {nothing.name.rsplit('/', 1)[-1]}) found nothing " \
           "to plan (\"Couldn't do schedule\")" in hold.reason, hold.reason
    assert len(_ops(stub, "sized.trips")) == 1

    # again by hand with no new delta commit: Hudi finds no plan -> SKIPPED, not FAILED ---------
    again = stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
        parent="tables/lake.trips", action="compaction"), timeout=10)

    def ended() -> tms_pb2.Operation | None:
        op = next(o for o in _ops(stub, "lake.trips") if o.name == again.name)
        return op if op.state not in (OP.QUEUED, OP.RUNNING) else None

    skipped = wait_for(ended, "the manual compaction to end")
    assert skipped.state == OP.SKIPPED, (OP.State.Name(skipped.state), skipped.error)
    assert skipped.attempt == 1  # not retried
    assert dict(skipped.result) == {"exit_code": 255, "no_plan": "Couldn't do schedule"}
    assert skipped.exit_code == 255  # and the driver's log says why
    assert "stand-in: 0 delta commits since the last compaction, below 1" in skipped.log_tail
    assert skipped.error == ("Hudi found nothing to plan: \"Couldn't do schedule\" "
                             "(HoodieCompactor, exit 255)")
    runs = received(trips)
    assert len(runs) == 2 and _conf(runs[1][0])["hoodie.compact.inline.max.delta.commits"] == "1"

    # a new commit notified: the scheduler counts from the compaction the job left ---------------
    stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table="tables/lake.trips",
                                                  commit_id=compactions[0].split(".")[0]),
                      timeout=10)

    def decided_again() -> tms_pb2.ActionExplanation | None:
        found = _explained(stub, "lake.trips")
        return found["compaction"] if found and not found["compaction"].should_run else None

    after = wait_for(decided_again, "the scheduler to decide lake.trips again")
    assert after.reason.startswith("0 delta commits since the last compaction (threshold 1"), \
        after.reason
    assert len(_ops(stub, "lake.trips")) == 2  # nothing more queued
