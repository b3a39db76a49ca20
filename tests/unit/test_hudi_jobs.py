"""Hudi jobs, option by option, against the utilities' own flags and properties reader.

Hudi cannot run here (no Hudi bundle jar obtainable), so the contract is checked against the
utilities' sources instead, for the releases docs/hudi.md names (0.14.x, 0.15.x, 1.0.x, 1.1.x):
``DOCUMENTED`` below is each utility's JCommander ``Config`` (flag, aliases, required), and
``hudi_read_properties`` re-implements ``DFSPropertiesConfiguration.addPropsFromStream``
(trim, collapse blanks, split at the first '=', follow ``include=``) so the test reads the
``--props`` file the way Hudi would, independently of the code that wrote it.
"""

from __future__ import annotations

import re
import stat
import threading
import time
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.unit.fakes import (
    FakeEngine,
    FakeFormat,
    FakeStore,
    make_access,
    make_op,
    make_table,
)
from tms.catalogs import CatalogAccess
from tms.domain import JobSpec, Operation, Table
from tms.engines import hudi_submit, props_pipe
from tms.engines.base import EngineResult
from tms.engines.spark_submit import SparkSubmitEngine
from tms.executor.loop import Executor
from tms.formats.hudi.jobs import CLEANER, CLUSTERING_JOB, COMPACTOR
from tms.formats.hudi.plugin import HudiFormat
from tms.formats.hudi.writer_keys import LOCK_PROVIDER_ZOOKEEPER
from tms.spark import settings as spark_settings_module
from tms.spark.settings import SparkSettings

BASE = "/lake/trips"
# JCommander Config of each utility: flag -> (aliases, takes a value); required flags apart.
# HoodieCompactor.Config / HoodieClusteringJob.Config / HoodieCleaner.Config (0.14 - 1.x);
# --spark-memory was required by HoodieClusteringJob before 0.14, and a null value reaches
# SparkConf.set("spark.executor.memory", null) in UtilHelpers.buildSparkContext of some
# releases: TMS always passes it to the two utilities that take it.
DOCUMENTED: dict[str, dict[str, Any]] = {
    COMPACTOR: {"flags": {"--base-path": "-sp", "--table-name": "-tn", "--instant-time": "-it",
                          "--parallelism": "-pl", "--schema-file": "-sf",
                          "--spark-master": "-ms", "--spark-memory": "-sm", "--retry": "-rt",
                          "--schedule": "-sc", "--mode": "-m", "--strategy": "-st",
                          "--props": None, "--hoodie-conf": None},
                "required": {"--base-path", "--table-name"}},
    CLUSTERING_JOB: {"flags": {"--base-path": "-sp", "--table-name": "-tn",
                               "--instant-time": "-it", "--parallelism": "-pl",
                               "--spark-master": "-ms", "--spark-memory": "-sm",
                               "--retry": "-rt", "--schedule": "-sc",
                               "--retry-last-failed-clustering-job": "-rc", "--mode": "-m",
                               "--job-max-processing-time-ms": "-jt", "--props": None,
                               "--hoodie-conf": None},
                     "required": {"--base-path", "--table-name", "--spark-memory"}},
    CLEANER: {"flags": {"--target-base-path": None, "--props": None, "--hoodie-conf": None,
                        "--spark-master": None},
              "required": {"--target-base-path"}},
}
# UtilHelpers.EXECUTE / SCHEDULE / SCHEDULE_AND_EXECUTE, compared lower-cased by the utilities
DOCUMENTED_MODES = {"execute", "schedule", "scheduleandexecute"}
# Hudi's config keys TMS sets itself (HoodieCompactionConfig, HoodieClusteringConfig,
# HoodieCleanConfig), with the values each accepts
DOCUMENTED_CONF = {
    "hoodie.compact.inline.trigger.strategy": re.compile(
        r"NUM_COMMITS|NUM_COMMITS_AFTER_LAST_REQUEST|TIME_ELAPSED|NUM_AND_TIME|NUM_OR_TIME"),
    "hoodie.compact.inline.max.delta.commits": re.compile(r"[1-9][0-9]*"),
    "hoodie.compact.inline.max.delta.seconds": re.compile(r"[1-9][0-9]*"),
    "hoodie.clustering.inline": re.compile(r"true|false"),
    "hoodie.clustering.async.enabled": re.compile(r"true|false"),
    "hoodie.clustering.inline.max.commits": re.compile(r"[1-9][0-9]*"),
    "hoodie.clean.automatic": re.compile(r"true|false"),
}
WRITER = {"hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
          "hoodie.cleaner.commits.retained": "30", "hoodie.keep.min.commits": "40",
          "hoodie.keep.max.commits": "50",
          "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
          "hoodie.write.lock.provider": LOCK_PROVIDER_ZOOKEEPER,
          "hoodie.write.lock.zookeeper.url": "zk1:2181,zk2:2181",
          "hoodie.write.lock.zookeeper.base_path": "/hudi/locks",
          "hoodie.write.lock.zookeeper.lock_key": "trips",
          "hoodie.compaction.strategy":
              "org.apache.hudi.table.action.compact.strategy.LogFileNumBasedCompactionStrategy"}


def jcommander(app: str, args: tuple[str, ...] | list[str]) -> dict[str, list[str]]:
    """``args`` parsed as the utility's JCommander would: every flag known, each with one
    value (none of TMS's is a boolean flag), required ones present."""
    spec = DOCUMENTED[app]
    names = {**{f: f for f in spec["flags"]},
             **{a: f for f, a in spec["flags"].items() if a}}
    out: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        assert args[i] in names, f"{args[i]} is not a flag of {app}"
        assert i + 1 < len(args) and not args[i + 1].startswith("--"), f"{args[i]} needs a value"
        out.setdefault(names[args[i]], []).append(args[i + 1])
        i += 2
    missing = spec["required"] - set(out)
    assert not missing, f"{app} requires {missing}"
    return out


def hudi_read_properties(text: str) -> dict[str, str]:
    """DFSPropertiesConfiguration's reader: skip '#' and empty lines and lines without '=' or
    a blank; collapse blanks; split at the first '=' (else blank); trim; ``include=`` would
    read another file (asserted never to happen)."""
    out: dict[str, str] = {}
    for line in text.split("\n"):
        if line.startswith("#") or line == "" or not ("=" in line or " " in line):
            continue
        line = re.sub(r"\s+", " ", line)
        sep = "=" if "=" in line else " "
        key, value = line[:line.index(sep)].strip(), line[line.index(sep) + 1:].strip()
        assert not line.startswith(("include=", "include =")), "an include line"
        out[key] = value
    return out


def hoodie_conf(parsed: dict[str, list[str]]) -> dict[str, str]:
    """--hoodie-conf values as UtilHelpers.buildProperties splits them (first '=')."""
    out = {}
    for item in parsed.get("--hoodie-conf", []):
        key, _, value = item.partition("=")
        assert key in DOCUMENTED_CONF and DOCUMENTED_CONF[key].fullmatch(value), item
        assert "," not in item and "\n" not in item
        out[key] = value
    return out


def access(props: dict[str, str] | None = None, **extra: str) -> CatalogAccess:
    base = make_access("/lake")
    merged = {f"hudi.writer.{k}": v for k, v in (props or {}).items()}
    merged.update(extra)
    return replace(base, properties=merged)


def table(**kw: Any) -> Table:
    return make_table(table_id="trips", format="hudi", table_name="trips", base_path=BASE,
                      **kw)


def op(action: str, **params: str) -> Operation:
    return make_op(7, action=action, params=dict(params),
                   metrics={"table_name": "trips_from_props", "table_version": 6})


def build(action: str, writer: dict[str, str] | None = None, **params: str) -> JobSpec:
    return HudiFormat().build_job(table(), access(writer), op(action, **params))


# compaction --------------------------------------------------------------------------------------
@pytest.mark.parametrize("params,trigger", [
    ({"max_delta_commits": "2"}, {"hoodie.compact.inline.trigger.strategy": "NUM_COMMITS",
                                  "hoodie.compact.inline.max.delta.commits": "2"}),
    ({"trigger_strategy": "TIME_ELAPSED", "max_delta_commits": "5", "max_delta_seconds": "60"},
     {"hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED",
      "hoodie.compact.inline.max.delta.commits": "5",
      "hoodie.compact.inline.max.delta.seconds": "60"}),
    ({"trigger_strategy": "NUM_COMMITS_AFTER_LAST_REQUEST", "max_delta_commits": "3"},
     {"hoodie.compact.inline.trigger.strategy": "NUM_COMMITS_AFTER_LAST_REQUEST",
      "hoodie.compact.inline.max.delta.commits": "3"}),
    ({}, {"hoodie.compact.inline.trigger.strategy": "NUM_COMMITS",  # decided by hand
          "hoodie.compact.inline.max.delta.commits": "1"}),
])
def test_compaction_passes_the_evaluated_trigger(params: dict[str, str],
                                                 trigger: dict[str, str]) -> None:
    job = build("compaction", WRITER, mode="scheduleAndExecute", **params)
    parsed = jcommander(job.app, job.args)
    assert job.app == COMPACTOR
    assert parsed["--base-path"] == [BASE] and parsed["--table-name"] == ["trips"]
    assert parsed["--mode"][0].lower() in DOCUMENTED_MODES
    assert hoodie_conf(parsed) == trigger  # the writers' retention known: their own clean
    assert parsed["--strategy"] == [WRITER["hoodie.compaction.strategy"]]
    assert job.spec["hudi"]["properties"] == WRITER
    assert "--props" not in parsed  # the engine adds the private file


def test_executing_a_pending_compaction_needs_no_trigger() -> None:
    job = build("compaction", None, mode="execute", instant="20260601110000000")
    parsed = jcommander(job.app, job.args)
    assert parsed["--mode"] == ["execute"] and parsed["--instant-time"] == ["20260601110000000"]
    # no writer configuration: the compactor's own clean afterwards would use Hudi's default
    # retention of 10 commits, so it is off
    assert hoodie_conf(parsed) == {"hoodie.clean.automatic": "false"}


@pytest.mark.parametrize("params,words", [
    ({"mode": "execute"}, "instant time"),
    ({"mode": "execute", "instant": "--props=/etc/x"}, "instant time"),
    ({"mode": "purgePendingInstant"}, "unknown mode"),
    ({"max_delta_commits": "2\n--props=/x"}, "positive integer"),
    ({"max_delta_commits": "2,hoodie.base.path=/x"}, "positive integer"),
    ({"max_delta_commits": "0"}, "positive integer"),
    ({"trigger_strategy": "NUM_COMMITS=1"}, "trigger_strategy"),
    ({"trigger_strategy": "TIME_ELAPSED"}, "max_delta_seconds"),
])
def test_bad_params_build_no_job(params: dict[str, str], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        build("compaction", WRITER, **params)


# clustering --------------------------------------------------------------------------------------
def test_clustering_job_flags() -> None:
    job = build("clustering", WRITER, mode="scheduleAndExecute")
    parsed = jcommander(job.app, [*job.args, "--spark-memory", "1g"])  # the engine adds it
    assert job.app == CLUSTERING_JOB and job.spec["hudi"]["memory_flag"] == "--spark-memory"
    # both commit-count gates off: TMS decided the trigger, Hudi's plan strategy the files
    assert hoodie_conf(parsed) == {"hoodie.clustering.inline": "false",
                                   "hoodie.clustering.async.enabled": "false"}
    job = build("clustering", None, mode="execute", instant="20260601110000000")
    parsed = jcommander(job.app, [*job.args, "--spark-memory", "1g"])
    assert parsed["--instant-time"] == ["20260601110000000"]
    assert hoodie_conf(parsed)["hoodie.clean.automatic"] == "false"


def test_table_name_falls_back_to_the_properties_then_the_directory() -> None:
    t = replace(table(), table_name="")
    job = HudiFormat().build_job(t, access(), op("clustering"))
    assert jcommander(job.app, [*job.args, "--spark-memory", "1g"])["--table-name"] == [
        "trips_from_props"]
    job = HudiFormat().build_job(replace(t, base_path="file:///lake/my trips"), access(),
                                 make_op(7, action="compaction"))
    assert jcommander(job.app, job.args)["--table-name"] == ["my_trips"]


# clean -------------------------------------------------------------------------------------------
def test_clean_runs_with_the_writers_retention_only() -> None:
    job = build("clean", WRITER)
    parsed = jcommander(job.app, job.args)
    assert job.app == CLEANER and parsed == {"--target-base-path": [BASE]}
    assert job.spec["hudi"]["properties"]["hoodie.cleaner.commits.retained"] == "30"
    assert job.spec["hudi"]["memory_flag"] is None  # HoodieCleaner has no --spark-memory


@pytest.mark.parametrize("writer,words", [
    (None, "retention is unknown"),
    ({"hoodie.keep.min.commits": "40"}, "hoodie.cleaner.commits.retained"),
    ({"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
      "hoodie.cleaner.commits.retained": "30"}, "hoodie.cleaner.fileversions.retained"),
    ({"hoodie.cleaner.policy": "KEEP_LATEST_BY_HOURS"}, "hoodie.cleaner.hours.retained"),
    ({"hoodie.cleaner.commits.retained": "30"}, "hoodie.keep.min.commits"),  # Hudi refuses
    ({"hoodie.cleaner.commits.retained": "x"}, "writer configuration"),
])
def test_clean_is_refused_when_the_retention_is_unknown(writer: dict[str, str] | None,
                                                        words: str) -> None:
    with pytest.raises(ValueError, match=words):
        build("clean", writer)


def test_a_retention_the_writers_did_not_state_never_reaches_compaction_cleaning() -> None:
    job = build("compaction", {"hoodie.keep.min.commits": "40"}, mode="scheduleAndExecute")
    assert hoodie_conf(jcommander(job.app, job.args))["hoodie.clean.automatic"] == "false"


def test_the_base_path_is_checked_where_it_is_used(tmp_path: Path) -> None:
    allowed, outside = tmp_path / "lake", tmp_path / "elsewhere"
    (allowed / "t").mkdir(parents=True)
    outside.mkdir()
    (allowed / "link").symlink_to(outside)
    cat = replace(access(WRITER), allowed_locations=(str(allowed),))
    t = replace(table(), base_path=str(allowed / "t"))
    assert HudiFormat().build_job(t, cat, op("clean")).args == (
        "--target-base-path", str(allowed / "t"))
    for base in (str(outside), str(allowed / "link"), f"{allowed}/t/../../elsewhere",
                 f"{allowed}/%252e%252e/elsewhere"):
        with pytest.raises(ValueError):
            HudiFormat().build_job(replace(t, base_path=base), cat, op("clean"))
    with pytest.raises(ValueError, match="no action"):
        HudiFormat().build_job(t, cat, op("expire_snapshots"))


# releases ----------------------------------------------------------------------------------------
def fake_jar(path: Path, version: str | None = None, entries: tuple[str, ...] = ()) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        if version:
            zf.writestr("META-INF/MANIFEST.MF", f"Manifest-Version: 1.0\n"
                                                f"Implementation-Version: {version}\n")
        for entry in entries:
            zf.writestr(entry, b"")
    return str(path)


def lake_table(tmp_path: Path, version: int, base_format: str = "PARQUET") -> tuple[Table,
                                                                                  CatalogAccess]:
    base = tmp_path / "lake" / "trips"
    (base / ".hoodie").mkdir(parents=True)
    (base / ".hoodie" / "hoodie.properties").write_text(
        f"hoodie.table.version={version}\nhoodie.table.base.file.format={base_format}\n"
        "hoodie.table.type=MERGE_ON_READ\n")
    cat = replace(access(WRITER), allowed_locations=(str(tmp_path / "lake"),))
    return replace(table(), base_path=str(base)), cat


@pytest.mark.parametrize("version,fmt,jar,words", [
    (9, "LANCE", "1.1.0", "LANCE base files .*needs Hudi 1.2.0 or newer; the configured "
                          "bundle is 1.1.0"),
    (8, "PARQUET", "0.15.0", "table version 8 needs Hudi 1.0.0 or newer; the configured "
                             "bundle is 0.15.0"),
    (9, "PARQUET", "1.0.2", "table version 9 needs Hudi 1.1.0"),
])
def test_a_bundle_too_old_for_the_table_is_refused(tmp_path: Path, version: int, fmt: str,
                                                   jar: str, words: str) -> None:
    t, cat = lake_table(tmp_path, version, fmt)
    job = HudiFormat().build_job(t, cat, op("clean"))
    utilities = fake_jar(tmp_path / f"hudi-utilities-bundle_2.12-{jar}.jar")
    with pytest.raises(ValueError, match=words):
        SparkSubmitEngine(settings(), jvm_jar=utilities).argv(job, tmp_path)


def test_release_from_manifest_or_name_and_jars_of_one_release(tmp_path: Path) -> None:
    t, cat = lake_table(tmp_path, 8)
    job = HudiFormat().build_job(t, cat, op("clean"))
    # the manifest wins over a misleading name
    renamed = fake_jar(tmp_path / "hudi-utilities-bundle_2.12-1.0.2.jar", "0.15.0")
    with pytest.raises(ValueError, match="configured bundle is 0.15.0"):
        SparkSubmitEngine(settings(), jvm_jar=renamed).argv(job, tmp_path)
    slim = fake_jar(tmp_path / "hudi-utilities-slim-bundle_2.12-1.0.2.jar")
    with pytest.raises(ValueError, match="needs the Hudi Spark bundle"):
        SparkSubmitEngine(settings(), jvm_jar=slim).argv(job, tmp_path)
    other = fake_jar(tmp_path / "hudi-spark3.5-bundle_2.12-1.1.0.jar")
    with pytest.raises(ValueError, match="different releases"):
        SparkSubmitEngine(settings(hudi_spark_bundle=other), jvm_jar=slim).argv(job, tmp_path)
    unknown = fake_jar(tmp_path / "utilities.jar")
    with pytest.raises(ValueError, match="release of utilities.jar is unknown"):
        SparkSubmitEngine(settings(), jvm_jar=unknown).argv(job, tmp_path)
    writers_newer = replace(cat, properties={**cat.properties,
                                             "hudi.writer.tms.hudi.version": "1.1.1"})
    job = HudiFormat().build_job(t, writers_newer, op("clean"))
    ok = fake_jar(tmp_path / "hudi-utilities-bundle_2.12-1.0.2.jar")
    with pytest.raises(ValueError, match="writers' Hudi release"):
        SparkSubmitEngine(settings(), jvm_jar=ok).argv(job, tmp_path)


def test_a_trigger_strategy_of_hudi_1_needs_hudi_1(tmp_path: Path) -> None:
    t, cat = lake_table(tmp_path, 6)
    job = HudiFormat().build_job(t, cat, op("compaction", max_delta_commits="3",
                                            trigger_strategy="NUM_COMMITS_AFTER_LAST_REQUEST"))
    old = fake_jar(tmp_path / "hudi-utilities-bundle_2.12-0.15.0.jar")
    with pytest.raises(ValueError, match="NUM_COMMITS_AFTER_LAST_REQUEST needs Hudi 1.0.0"):
        SparkSubmitEngine(settings(), jvm_jar=old).argv(job, tmp_path)
    job = HudiFormat().build_job(t, cat, op("compaction", max_delta_commits="3"))
    assert SparkSubmitEngine(settings(), jvm_jar=old).argv(job, tmp_path)  # v6, 0.15: fine


# the engine: jars, properties file, command line -------------------------------------------------
def settings(**kw: Any) -> SparkSettings:
    return replace(SparkSettings(), **kw)


def test_only_hudi_and_storage_jars_ride_on_a_hudi_job(tmp_path: Path) -> None:
    iceberg = fake_jar(tmp_path / "iceberg-spark-runtime.jar",
                       entries=("org/apache/iceberg/spark/SparkCatalog.class",))
    s3a = fake_jar(tmp_path / "hadoop-aws.jar",
                   entries=("org/apache/hadoop/fs/s3a/S3AFileSystem.class",))
    utilities = fake_jar(tmp_path / "hudi-utilities-slim-bundle_2.12-1.0.2.jar")
    bundle = fake_jar(tmp_path / "hudi-spark3.5-bundle_2.12-1.0.2.jar")
    s = settings(jars=(iceberg, s3a), hudi_spark_bundle=bundle,
                 packages=("org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0",
                           "org.example:own:1"))
    local = HudiFormat().build_job(table(), access(WRITER), op("clean"))
    argv = SparkSubmitEngine(s, jvm_jar=utilities).argv(local, tmp_path)
    assert argv[argv.index("--jars") + 1] == bundle  # no Iceberg, no S3A for a local table
    assert argv[argv.index("--packages") + 1] == "org.example:own:1"
    assert argv[argv.index("--class") + 1:argv.index("--class") + 3] == [CLEANER, utilities]
    on_s3 = replace(local, spec={"hudi": {**local.spec["hudi"], "location": "s3a://b/trips"}})
    argv = SparkSubmitEngine(s, jvm_jar=utilities).argv(on_s3, tmp_path)
    assert argv[argv.index("--jars") + 1] == f"{bundle},{s3a}"
    # the catalog's jars win over the queue's and the environment's
    own = fake_jar(tmp_path / "own" / "hudi-utilities-bundle_2.12-1.0.2.jar")
    job = HudiFormat().build_job(table(), access(WRITER, **{"hudi.utilities-jar": own}),
                                 op("clean"))
    argv = SparkSubmitEngine(settings(hudi_utilities_jar=utilities), jvm_jar="x").argv(
        job, tmp_path)
    assert argv[argv.index("--class") + 2] == own


def test_the_properties_file_is_private_and_read_back_exactly(tmp_path: Path) -> None:
    """The properties are served through a 0600 named pipe: nothing is on disk before the run,
    and a reader of the pipe gets the text exactly."""
    utilities = fake_jar(tmp_path / "hudi-utilities-bundle_2.12-1.0.2.jar")
    job = build("compaction", WRITER, mode="scheduleAndExecute", max_delta_commits="2")
    work = tmp_path / "work"
    work.mkdir(mode=0o700)
    sub = SparkSubmitEngine(settings(), jvm_jar=utilities).submission(job, work)
    argv = sub.argv
    args = argv[argv.index(utilities) + 1:]
    parsed = jcommander(COMPACTOR, args)
    assert parsed["--spark-memory"] == ["1g"]
    props_uri, = parsed["--props"]
    path = (work / "hudi.properties").resolve()
    assert props_uri == path.as_uri()  # file://: never the default FS
    assert not path.exists() and list(sub.pipes) == [path]  # nothing written yet
    with props_pipe.serving(sub.pipes):
        st = path.lstat()
        assert stat.S_ISFIFO(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
        text = path.read_text()
    assert not path.exists()
    assert hudi_read_properties(text) == WRITER
    # what Hudi applies: the file, then --hoodie-conf over it
    effective = {**hudi_read_properties(text), **hoodie_conf(parsed)}
    assert effective["hoodie.compact.inline.max.delta.commits"] == "2"
    assert effective["hoodie.cleaner.commits.retained"] == "30"


@pytest.mark.parametrize("props", [
    {"hoodie.cleaner.commits.retained": "30\ninclude=/etc/passwd"},
    {"hoodie.cleaner.commits.retained": "30 hoodie.base.path=/x"},
    {"include": "/etc/passwd"},
    {"hoodie.base.path\n": "x"},
    {"hoodie.x=y": "1"},
])
def test_a_property_that_would_read_back_differently_is_refused(props: dict[str, str]) -> None:
    with pytest.raises(hudi_submit.HudiSubmitError):
        hudi_submit.render_properties(props)


def test_hoodie_conf_refuses_anything_but_plain_values() -> None:
    from tms.formats.hudi.jobs import hoodie_conf as conf
    assert conf("hoodie.clean.automatic", "false") == ("--hoodie-conf",
                                                       "hoodie.clean.automatic=false")
    for key, value in (("hoodie.a", "1,hoodie.base.path=/x"), ("hoodie.a", "1\n2"),
                       ("hoodie.a", "a=b"), ("include", "x"), ("hoodie.a b", "1"),
                       ("hoodie.a", "")):
        with pytest.raises(ValueError):
            conf(key, value)


def test_secrets_reach_the_private_file_only(tmp_path: Path) -> None:
    utilities = fake_jar(tmp_path / "hudi-utilities-bundle_2.12-1.0.2.jar")
    job = build("clean", WRITER)
    job.spec["hudi"]["property_secrets"] = {
        "hoodie.write.lock.zookeeper.url": "env:TMS_SECRET_ZK"}
    engine = SparkSubmitEngine(settings(), jvm_jar=utilities)
    env = {"TMS_SECRET_ZK": "zk-secret:2181", "PATH": "/usr/bin"}
    args, pipes = hudi_submit.job_args(job, settings(), tmp_path, env)
    assert "zk-secret:2181" not in " ".join(args)
    assert list(tmp_path.iterdir()) == [tmp_path / "hudi-utilities-bundle_2.12-1.0.2.jar"]
    (text,) = pipes.values()
    assert hudi_read_properties(text.decode())[
        "hoodie.write.lock.zookeeper.url"] == "zk-secret:2181"
    with pytest.raises(hudi_submit.HudiSubmitError, match="TMS_SECRET_ZK"):
        hudi_submit.job_args(job, settings(), tmp_path, {})
    cluster = settings(master="yarn", deploy_mode="cluster")
    with pytest.raises(hudi_submit.HudiSubmitError, match="cluster-mode"):
        hudi_submit.job_args(job, cluster, tmp_path, env)
    job.spec["hudi"]["property_secrets"] = {}
    args, pipes = hudi_submit.job_args(job, cluster, tmp_path / "x", env)
    assert pipes == {}  # a cluster-mode driver gets no file
    assert jcommander(CLEANER, args)["--hoodie-conf"][0] == "hoodie.cleaner.commits.retained=30"
    assert engine.settings.deploy_mode == "client"


# how a utility ended: exit code and log lines ----------------------------------------------------
@pytest.mark.parametrize("app,code,log,state", [
    (COMPACTOR, 255, "WARN HoodieCompactor: Couldn't do schedule\n", "skipped"),
    (COMPACTOR, 0, "INFO There is no scheduled compaction in the table.\n", "skipped"),
    (CLUSTERING_JOB, 1, "INFO Couldn't generate cluster plan\nException in thread main "
                        "HoodieException: Clustering with basePath: /l, tableName: t, "
                        "runningMode: scheduleAndExecute failed\n", "skipped"),
    (CLUSTERING_JOB, 0, "Clustering with basePath: /l, tableName: t, runningMode: execute "
                        "failed\n", "failed"),  # before 0.14: logged, exit 0
    (COMPACTOR, 0, "ERROR Fail to run compaction for t\njava.io.IOException: x\n", "failed"),
    (COMPACTOR, 255, "ERROR UtilHelpers: Compact failed\nCouldn't do schedule\n", "failed"),
    (COMPACTOR, 0, "INFO Finish job with 20260601 instant time.\n", "succeeded"),
    (CLEANER, 0, "INFO Cleaner completed successfully\n", "succeeded"),
    (CLEANER, 1, "Exception in thread main\n", "failed"),
])
def test_no_plan_is_skipped_never_failed(tmp_path: Path, app: str, code: int, log: str,
                                         state: str) -> None:
    from tms.formats.hudi.jobs import NO_PLAN
    job = JobSpec("jvm", app, spec={"hudi": {"no_plan": list(NO_PLAN.get(app, ()))}})
    (tmp_path / "driver.log").write_text("x\n" * 50_000 + log + "y\n" * 50_000)
    said = hudi_submit.outcome(job, code, tmp_path / "driver.log", "tail", "app-1")
    res = said or EngineResult(code == 0, None, None, "tail", code)  # the exit code decides
    got = "skipped" if res.skipped else "succeeded" if res.succeeded else "failed"
    assert got == state, res
    if res.skipped:
        assert "nothing to plan" in res.skipped and not res.retryable


def _utility_with_a_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, then: str
                           ) -> tuple[SparkSubmitEngine, JobSpec]:
    """spark-submit replaced by a script that prints its properties file, as Hudi's utilities
    do when they start, then runs ``then``; the job's lock URL is a secret reference."""
    script = tmp_path / "spark-submit"
    script.write_text("#!/bin/sh\nfor a; do case $a in file://*) p=\"${a#file://}\"; "
                      "test -p \"$p\" && echo props-are-a-pipe; cat \"$p\"; cat \"$p\" >/dev/null;"
                      " grep -rl zk-secret \"${p%/*}\" --devices=skip && echo secret-on-disk;;"
                      " esac; done\n" + then)
    script.chmod(0o755)
    monkeypatch.setattr(spark_settings_module, "spark_submit_path", lambda: str(script))
    utilities = fake_jar(tmp_path / "hudi-utilities-bundle_2.12-1.0.2.jar")
    job = build("compaction", WRITER, mode="scheduleAndExecute")
    job.spec["hudi"]["property_secrets"] = {
        "hoodie.write.lock.zookeeper.url": "env:TMS_SECRET_ZK"}
    monkeypatch.setenv("TMS_SECRET_ZK", "zk-secret.example:2181")
    return SparkSubmitEngine(settings(), jvm_jar=utilities), job


def test_the_engine_runs_a_utility_and_cleans_up(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """spark-submit replaced by a script that checks its properties file and says "no plan"
    as HoodieCompactor does: the attempt ends skipped and the file is gone."""
    engine, job = _utility_with_a_secret(
        tmp_path, monkeypatch, "echo \"WARN HoodieCompactor: Couldn't do schedule\"\nexit 255\n")
    work = tmp_path / "work"
    res = engine.run(job, work, threading.Event(), lambda h: None)
    assert res.skipped and "Couldn't do schedule" in res.skipped and res.exit_code == 255
    assert "hoodie.cleaner.commits.retained=30" in res.log_tail  # it was there for the job
    # Hudi prints its properties: the secret was in the file, never in the kept log
    assert "hoodie.write.lock.zookeeper.url=****" in res.log_tail
    assert b"zk-secret" not in (work / "driver.log").read_bytes()
    # read twice while it ran, from a pipe; no file in the work directory held the secret
    assert "props-are-a-pipe" in res.log_tail and "secret-on-disk" not in res.log_tail
    assert not (work / "hudi.properties").exists()


def test_the_executor_records_no_plan_as_skipped(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op(attempt=1)])
    engine = FakeEngine(EngineResult(False, {"exit_code": 255}, None, "log", 255, "app-1",
                                     retryable=False, skipped="Hudi found nothing to plan"))
    Executor(store, {"fake": FakeFormat()}, engine, "e1", tmp_path).run_once()  # type: ignore[arg-type]
    assert store.finished == [] and store.retried == []  # never FAILED, never retried
    (_, reason, result), = store.skipped
    assert reason == "Hudi found nothing to plan" and result == {"exit_code": 255}


def test_each_queue_may_name_its_own_hudi_jars(tmp_path: Path) -> None:
    from tms.engines.profiles import parse_profiles

    old = fake_jar(tmp_path / "hudi-utilities-bundle_2.12-0.15.0.jar")
    new = fake_jar(tmp_path / "hudi-utilities-slim-bundle_2.12-1.1.0.jar")
    bundle = fake_jar(tmp_path / "hudi-spark3.5-bundle_2.12-1.1.0.jar")
    default, queues = parse_profiles({
        "spark": {"hudi_utilities_jar": old},
        "queues": {"v9": {"spark": {"hudi_utilities_jar": new, "hudi_spark_bundle": bundle}}},
    }, SparkSettings())
    assert (default.settings.hudi_utilities_jar, default.settings.hudi_spark_bundle) == (old,
                                                                                          None)
    assert (queues["v9"].settings.hudi_utilities_jar,
            queues["v9"].settings.hudi_spark_bundle) == (new, bundle)
    job = build("clean", WRITER)
    argv = SparkSubmitEngine(queues["v9"].settings, jvm_jar=None).argv(job, tmp_path)
    assert argv[argv.index("--class") + 2] == new and argv[argv.index("--jars") + 1] == bundle
    with pytest.raises(ValueError, match="jar not found"):
        parse_profiles({"spark": {"hudi_spark_bundle": str(tmp_path / "missing.jar")}},
                       SparkSettings())


def test_a_missing_jar_is_refused_before_spark_submit(tmp_path: Path) -> None:
    job = HudiFormat().build_job(table(), access(WRITER, **{
        "hudi.utilities-jar": str(tmp_path / "hudi-utilities-bundle_2.12-1.0.2.jar")}),
        op("clean"))
    with pytest.raises(ValueError, match="Hudi jar not found"):
        SparkSubmitEngine(settings(), jvm_jar=None).argv(job, tmp_path)


def test_the_plugin_and_the_job_builder_name_the_same_utilities() -> None:
    from tms.formats.hudi import jobs as hudi_jobs
    from tms.formats.hudi import plugin as hudi

    assert (hudi.COMPACTOR, hudi.CLUSTERING_JOB, hudi.CLEANER, hudi.MODES) == (
        hudi_jobs.COMPACTOR, hudi_jobs.CLUSTERING_JOB, hudi_jobs.CLEANER, hudi_jobs.MODES)


def test_a_running_utilitys_log_never_holds_its_secrets(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Hudi prints its properties when it starts: while the job still runs (blocked on a gate
    here), the log on disk already shows the secret masked, not in plain text."""
    gate, work = tmp_path / "gate", tmp_path / "work"
    engine, job = _utility_with_a_secret(
        tmp_path, monkeypatch, f"echo started\nwhile [ ! -e {gate} ]; do sleep 0.02; done\n"
        "echo \"INFO Finish job with 20260601 instant time.\"\nexit 0\n")
    out: list[EngineResult] = []
    runner = threading.Thread(target=lambda: out.append(
        engine.run(job, work, threading.Event(), lambda h: None)))
    runner.start()
    log, deadline = work / "driver.log", time.monotonic() + 20
    try:
        while time.monotonic() < deadline and not (log.exists()
                                                   and b"started" in log.read_bytes()):
            time.sleep(0.02)
        mid_run = log.read_bytes()
    finally:  # the stand-in never waits on its gate beyond the test
        gate.touch()
        runner.join(20)
    assert b"hoodie.write.lock.zookeeper.url=****" in mid_run and b"started" in mid_run
    assert b"zk-secret" not in mid_run
    (res,) = out
    assert res.succeeded, res
    assert b"zk-secret" not in log.read_bytes() and b"instant time" in log.read_bytes()
