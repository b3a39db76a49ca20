"""A Hudi job through the real spark-submit, with a stand-in for Hudi's compactor.

No Hudi bundle jar can be obtained here, so this compiles a stand-in main class named
``org.apache.hudi.utilities.HoodieCompactor`` into a jar named like the slim utilities bundle:
it refuses any flag the real compactor's ``Config`` does not declare, reads the ``--props``
file through its ``file://`` URI as the driver would, prints what it got (keys only), and ends
like the real one: "Couldn't do schedule" with exit code 255 when there is no plan (the test
says so with a marker file), else "Finish job" and 0. What this shows: spark-submit accepts
TMS's command line (``--class``, the slim jar, ``--jars`` with only the Spark bundle), the
properties file is readable by the driver while it runs and gone afterwards, and "no plan"
ends skipped. What it cannot show: Hudi's own scheduling (docs/hudi.md).
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from tests.unit.fakes import make_access, make_op, make_table
from tests.unit.test_hudi_jobs import WRITER
from tms.engines.spark_submit import SparkSubmitEngine
from tms.formats.hudi import HudiFormat
from tms.spark.settings import SparkSettings

STAND_IN = """
package org.apache.hudi.utilities;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Set;

public class HoodieCompactor {
  static final Set<String> FLAGS = Set.of("--base-path", "-sp", "--table-name", "-tn",
      "--instant-time", "-it", "--parallelism", "-pl", "--schema-file", "-sf",
      "--spark-master", "-ms", "--spark-memory", "-sm", "--retry", "-rt", "--schedule", "-sc",
      "--mode", "-m", "--strategy", "-st", "--props", "--hoodie-conf");

  public static void main(String[] args) throws Exception {
    String base = null;
    String props = null;
    for (int i = 0; i < args.length; i += 2) {
      if (!FLAGS.contains(args[i]) || i + 1 >= args.length) {
        System.out.println("stand-in: unknown flag " + args[i]);
        System.exit(2);
      }
      if (args[i].equals("--base-path")) base = args[i + 1];
      if (args[i].equals("--props")) props = args[i + 1];
      if (args[i].equals("--hoodie-conf")) System.out.println("stand-in conf " + args[i + 1]);
    }
    List<String> lines = Files.readAllLines(Paths.get(new URI(props)));
    for (String line : lines) System.out.println("stand-in prop " + line.split("=", 2)[0]);
    if (Files.exists(Paths.get(base, ".hoodie", "NO_PLAN"))) {
      System.out.println("WARN HoodieCompactor: Couldn't do schedule");
      System.exit(-1);
    }
    System.out.println("INFO UtilHelpers: Finish job with 20260601000000000 instant time.");
  }
}
"""


@pytest.fixture(scope="module")
def jars(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    if shutil.which("javac") is None:
        pytest.fail("javac is needed (scripts/setup installs Java 17 with javac)")
    root = tmp_path_factory.mktemp("stand-in")
    src = root / "src" / "org" / "apache" / "hudi" / "utilities"
    src.mkdir(parents=True)
    (src / "HoodieCompactor.java").write_text(STAND_IN)
    subprocess.run(["javac", "--release", "11", "-d", str(root / "classes"),
                    str(src / "HoodieCompactor.java")], check=True)
    utilities = root / "hudi-utilities-slim-bundle_2.12-1.0.2.jar"
    with zipfile.ZipFile(utilities, "w") as zf:
        for cls in (root / "classes").rglob("*.class"):
            zf.write(cls, cls.relative_to(root / "classes").as_posix())
    bundle = root / "hudi-spark3.5-bundle_2.12-1.0.2.jar"
    with zipfile.ZipFile(bundle, "w") as zf:
        zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    return str(utilities), str(bundle)


@pytest.mark.parametrize("no_plan", [True, False])
def test_a_compaction_through_spark_submit(tmp_path: Path, jars: tuple[str, str],
                                           no_plan: bool) -> None:
    utilities, bundle = jars
    base = tmp_path / "lake" / "trips"
    (base / ".hoodie").mkdir(parents=True)
    (base / ".hoodie" / "hoodie.properties").write_text(
        "hoodie.table.version=8\nhoodie.table.type=MERGE_ON_READ\n")
    if no_plan:
        (base / ".hoodie" / "NO_PLAN").touch()
    table = make_table(table_id="trips", format="hudi", table_name="trips",
                       base_path=str(base))
    access = replace(make_access(str(tmp_path / "lake")),
                     properties={f"hudi.writer.{k}": v for k, v in WRITER.items()})
    job = HudiFormat().build_job(table, access, make_op(
        action="compaction", params={"mode": "scheduleAndExecute", "max_delta_commits": "2"}))
    settings = replace(SparkSettings.from_env(tmp_path), hudi_spark_bundle=bundle)
    work = tmp_path / "work"
    res = SparkSubmitEngine(settings, jvm_jar=utilities).run(
        job, work, threading.Event(), lambda handle: None)
    assert "stand-in: unknown flag" not in res.log_tail
    assert "stand-in conf hoodie.compact.inline.max.delta.commits=2" in res.log_tail
    assert "stand-in prop hoodie.cleaner.commits.retained" in res.log_tail  # read while running
    assert not (work / "hudi.properties").exists()  # gone with the attempt
    if no_plan:
        assert (res.succeeded, res.exit_code) == (False, 255)
        assert res.skipped and "Couldn't do schedule" in res.skipped and not res.retryable
    else:
        assert res.succeeded and res.skipped is None, res.error
