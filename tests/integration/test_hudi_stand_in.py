"""A Hudi job through the real spark-submit, with a stand-in for Hudi's compactor.

No Hudi bundle jar can be obtained here, so this compiles a stand-in main class named
``org.apache.hudi.utilities.HoodieCompactor`` into a jar named like the slim utilities bundle
(tests/hudi_stand_in.py, shared with the end-to-end test): it refuses any flag the real
compactor's ``Config`` does not declare, reads the ``--props`` file through its ``file://``
URI as the driver would, records what it got, and ends like the real one: "Couldn't do
schedule" with exit code 255 when the delta commits do not reach the trigger it was given
(Hudi's default of 5 without one), else "Finish job" and 0. What this shows: spark-submit accepts
TMS's command line (``--class``, the slim jar, ``--jars`` with only the Spark bundle), the
properties reach the driver through Hadoop's ``FileSystem.open`` (as Hudi reads them) from a
named pipe, never a file on disk, and the name is gone afterwards, and "no plan"
ends skipped. What it cannot show: Hudi's own scheduling (docs/hudi.md).
"""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from tests.hudi_stand_in import compile_stand_in, received
from tests.unit.fakes import make_access, make_op, make_table
from tests.unit.test_hudi_jobs import WRITER
from tms.domain import JobSpec
from tms.engines.spark_submit import SparkSubmitEngine
from tms.formats.hudi.plugin import HudiFormat
from tms.spark.provision_fence import FENCE_JAR, LOCAL_FS_CLASS
from tms.spark.settings import SparkSettings


@pytest.fixture(scope="module")
def jars(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return compile_stand_in(tmp_path_factory.mktemp("stand-in"))


def _mor_table(tmp_path: Path) -> Path:
    """An empty merge-on-read table of version 8 (the stand-in reads its timeline)."""
    base = tmp_path / "lake" / "trips"
    (base / ".hoodie").mkdir(parents=True)
    (base / ".hoodie" / "hoodie.properties").write_text(
        "hoodie.table.version=8\nhoodie.table.type=MERGE_ON_READ\n")
    return base


def _compaction(tmp_path: Path, base: Path) -> JobSpec:
    """The compaction TMS builds for the table, with the writers' configuration."""
    table = make_table(table_id="trips", format="hudi", table_name="trips",
                       base_path=str(base))
    access = replace(make_access(str(tmp_path / "lake")),
                     properties={f"hudi.writer.{k}": v for k, v in WRITER.items()})
    return HudiFormat().build_job(table, access, make_op(
        action="compaction", params={"mode": "scheduleAndExecute", "max_delta_commits": "2"}))


@pytest.mark.parametrize("no_plan", [True, False])
def test_a_compaction_through_spark_submit(tmp_path: Path, jars: tuple[str, str],
                                           no_plan: bool) -> None:
    utilities, bundle = jars
    base = _mor_table(tmp_path)
    if not no_plan:  # two delta commits: the trigger passed (2) is met, Hudi's default (5) not
        for t in ("20260601000000000", "20260601000100000"):
            (base / ".hoodie" / f"{t}.deltacommit").write_bytes(b"{}")
    job = _compaction(tmp_path, base)
    settings = replace(SparkSettings.from_env(tmp_path), hudi_spark_bundle=bundle)
    work = tmp_path / "work"
    res = SparkSubmitEngine(settings, jvm_jar=utilities).run(
        job, work, threading.Event(), lambda handle: None)
    assert "stand-in: unknown flag" not in res.log_tail
    assert "stand-in conf hoodie.compact.inline.max.delta.commits=2" in res.log_tail
    assert "stand-in prop hoodie.cleaner.commits.retained" in res.log_tail  # read while running
    # through Hadoop's FileSystem, from a pipe: the properties never were a file on disk
    assert "stand-in props kind not-a-file" in res.log_tail
    assert not (work / "hudi.properties").exists()  # gone with the attempt
    ((argv, props),) = received(base)
    assert argv[argv.index("--mode") + 1] == "scheduleAndExecute"
    assert props == WRITER  # the writers' configuration, exactly
    if no_plan:
        assert (res.succeeded, res.exit_code) == (False, 255)
        assert res.skipped and "Couldn't do schedule" in res.skipped and not res.retryable
    else:
        assert res.succeeded and res.skipped is None, res.error


def test_a_hudi_utility_runs_fenced_to_its_base_path(tmp_path: Path, jars: tuple[str, str]
                                                     ) -> None:
    """With TMS's provisioned jars, a Hudi utility runs on the fenced file systems rooted at
    its base path (``spark.hadoop.tms.fence.roots``, nothing armed from Python): a delete
    outside the table, as a hostile metadata table would make the cleaner do, is refused;
    one inside goes through."""
    utilities, bundle = jars
    base = _mor_table(tmp_path)
    victim = tmp_path / "lake" / "other" / "live.parquet"
    victim.parent.mkdir()
    victim.write_bytes(b"another tenant's file slice")
    own = base / "p1" / "old-slice.parquet"
    own.parent.mkdir()
    own.write_bytes(b"an older file slice of this table")
    Path(f"{base}.fence-probe").write_text(f"{victim.as_uri()}\n{own.as_uri()}\n")
    job = _compaction(tmp_path, base)
    home = Path(os.environ.get("TMS_HOME", Path(__file__).resolve().parents[2] / ".tms"))
    settings = replace(SparkSettings.from_env(home), hudi_spark_bundle=bundle)
    assert any(Path(j).name == FENCE_JAR for j in settings.jars), "run scripts/setup"

    res = SparkSubmitEngine(settings, jvm_jar=utilities).run(
        job, tmp_path / "work", threading.Event(), lambda handle: None)

    fenced = f"stand-in fence {LOCAL_FS_CLASS}"
    assert f"{fenced} {victim.as_uri()} refused: TMS fence: delete of" in res.log_tail, \
        res.log_tail[-3000:]
    assert f"{fenced} {own.as_uri()} deleted" in res.log_tail
    assert victim.read_bytes() == b"another tenant's file slice" and not own.exists()
