"""The exact command line and properties of every Hudi job, on every real fixture table.

For each table in ``tests/fixtures/hudi`` (hudi-rs test data: table versions 6, 8 and 9,
parquet and LANCE base files) the test reads ``hoodie.properties`` itself, from the zip, and
derives which bundle may run a job on it from Hudi's release history (table version 6 came with
0.14.0, 8 with 1.0.0, 9 with 1.1.0; LANCE base files with 1.2.0); then it checks the argv of
clean, compaction and clustering through the spark-submit engine with a bundle new enough
(every flag and value) and with an older one (refused, naming both releases).
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from tests.unit.fakes import make_access, make_op, make_table
from tests.unit.test_hudi_jobs import WRITER, fake_jar, hudi_read_properties
from tms.domain import JobSpec
from tms.engines.spark_submit import SparkSubmitEngine
from tms.formats.hudi.jobs import CLEANER, CLUSTERING_JOB, COMPACTOR
from tms.formats.hudi.plugin import HudiFormat
from tms.spark.settings import SparkSettings

REPO_ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "hudi"
ZIPS = sorted(p.name for p in FIXTURES.glob("*.zip")) if FIXTURES.is_dir() else []
RELEASE_OF_TABLE_VERSION = {6: "0.14.0", 8: "1.0.0", 9: "1.1.0"}
LANCE_RELEASE = "1.2.0"


def table_properties(name: str) -> tuple[str, dict[str, str]]:
    """(top directory, the data table's hoodie.properties) read straight from the zip."""
    with zipfile.ZipFile(FIXTURES / name) as zf:
        member = next(m for m in zf.namelist() if re.fullmatch(r"[^/]+/\.hoodie/hoodie\."
                                                                r"properties", m))
        text = zf.read(member).decode()
    props = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            props[key] = value
    return member.split("/")[0], props


def needed_release(props: dict[str, str]) -> str:
    release = RELEASE_OF_TABLE_VERSION[int(props["hoodie.table.version"])]
    if props.get("hoodie.table.base.file.format", "PARQUET").upper() == "LANCE":
        release = LANCE_RELEASE
    return release


def unzip_properties(name: str, dest: Path) -> Path:
    top, _ = table_properties(name)
    with zipfile.ZipFile(FIXTURES / name) as zf:
        zf.extract(f"{top}/.hoodie/hoodie.properties", dest)
    return dest / top


SERVED: dict[Path, bytes] = {}  # what the last submission serves through its pipes


def argv_after_jar(job: JobSpec, jar: str, work: Path) -> list[str]:
    sub = SparkSubmitEngine(SparkSettings(), jvm_jar=jar).submission(job, work)
    SERVED.clear()
    SERVED.update(sub.pipes)
    argv = sub.argv
    at = argv.index("--class")
    assert argv[at + 1:at + 3] == [job.app, jar]
    return argv[at + 3:]


@pytest.mark.skipif(not ZIPS, reason=f"Hudi fixtures not found at {FIXTURES}")
def test_there_are_the_fixtures_the_issue_names() -> None:
    assert len(ZIPS) >= 47


@pytest.mark.parametrize("name", ZIPS)
def test_every_fixture_gets_exact_jobs(tmp_path: Path, name: str) -> None:
    _, props = table_properties(name)
    base = unzip_properties(name, tmp_path / "lake")
    table = make_table(table_id="t", format="hudi", table_name="", base_path=str(base))
    access = replace(make_access(str(tmp_path / "lake")),
                     properties={f"hudi.writer.{k}": v for k, v in WRITER.items()})
    name_arg = props.get("hoodie.table.name", "")
    ops = {
        "clean": make_op(1, action="clean", metrics={"table_name": name_arg}),
        "compaction": make_op(2, action="compaction", metrics={"table_name": name_arg},
                              params={"mode": "scheduleAndExecute",
                                      "max_delta_commits": "2"}),
        "clustering": make_op(3, action="clustering", metrics={"table_name": name_arg},
                              params={"mode": "scheduleAndExecute"}),
    }
    needed = needed_release(props)
    new_enough = fake_jar(tmp_path / "jars" / f"hudi-utilities-bundle_2.12-{LANCE_RELEASE}.jar")
    too_old = fake_jar(tmp_path / "jars" / "hudi-utilities-bundle_2.12-0.13.1.jar")
    work = tmp_path / "work"
    work.mkdir(mode=0o700)
    props_uri = (work / "hudi.properties").as_uri()
    expected = {
        "clean": (CLEANER, ["--target-base-path", str(base), "--props", props_uri]),
        "compaction": (COMPACTOR, [
            "--base-path", str(base), "--table-name", name_arg, "--mode", "scheduleAndExecute",
            "--strategy", WRITER["hoodie.compaction.strategy"],
            "--hoodie-conf", "hoodie.compact.inline.trigger.strategy=NUM_COMMITS",
            "--hoodie-conf", "hoodie.compact.inline.max.delta.commits=2",
            "--spark-memory", "1g", "--props", props_uri]),
        "clustering": (CLUSTERING_JOB, [
            "--base-path", str(base), "--table-name", name_arg, "--mode", "scheduleAndExecute",
            "--hoodie-conf", "hoodie.clustering.inline=false",
            "--hoodie-conf", "hoodie.clustering.async.enabled=false",
            "--spark-memory", "1g", "--props", props_uri]),
    }
    for action, op in ops.items():
        job = HudiFormat().build_job(table, access, op)
        app, args = expected[action]
        assert job.app == app
        assert argv_after_jar(job, new_enough, work) == args, action
        assert not (work / "hudi.properties").exists()  # served through a pipe while it runs
        served = SERVED[(work / "hudi.properties").resolve()].decode()
        assert hudi_read_properties(served) == WRITER
        assert job.spec["hudi"]["min_release"] == needed, action
        with pytest.raises(ValueError, match=f"needs Hudi {re.escape(needed)} or newer; "
                                             "the configured bundle is 0.13.1"):
            argv_after_jar(job, too_old, work)
