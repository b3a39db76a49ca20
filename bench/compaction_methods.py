"""The methods the compaction benchmark runs on a fresh copy of a table, each timed with the
CPU of every process that does its work (``bench.engine_bench.CpuMeter``):

* ``tms-warm``: the executor's warm engine (``WarmSparkEngine``, one long-lived PySpark
  driver), started once before the first measured run; its driver's process group counts;
* ``tms-cold``: ``SparkSubmitEngine``, one spark-submit per run (a reaped child: counts),
  with its class-data archive (dumped by a first cold job before the measured runs);
* ``tms-cold-noarchive``: the same without the archive (what a cold job cost before it);
* ``tms-warm-spark`` / ``tms-cold-spark``: the same engines with the job's data path forced to
  Spark's (``data_path: spark`` in the spec: what an operator's switch does), against the
  arrow path (``tms.jobs.arrow_rewrite``) that ``tms-warm`` / ``tms-cold`` take when eligible;
* ``pyarrow-1t`` / ``pyarrow-2t``: ``bench/compaction_pyarrow.py`` (read + rewrite, no commit);
* ``iceberg-compaction`` / ``iceberg-zamboni``: ``bench/compaction_ext.py`` in each package's
  own virtualenv; iceberg-compaction through ``bench/compaction_rest.py`` (its CPU counts).

The TMS job is the one the executor would run: the Iceberg plugin measures the copy and its
policy decides the compaction (defaults, ``compaction.target-file-size-bytes`` = target);
the decision's parameters are the job's options.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import REPO, BenchError
from bench.common.cpu import children_of, reap_orphans
from bench.engine_bench import CpuMeter, Phase

EXT_TIMEOUT_S = 1800.0


@dataclass
class Run:
    """One method's run on one copy; ``output_dir`` when it wrote outside the table."""

    wall_s: float
    cpu_s: float
    postgres_cpu_s: float
    info: dict[str, Any]
    output_dir: Path | None = None


@dataclass
class Env:
    """What every method needs: the catalog (pyiceberg), its properties and name, the
    target, the warehouse, the Spark engines and the foreign interpreters."""

    catalog: Any
    catalog_name: str
    props: dict[str, str]
    warehouse: Path
    target_bytes: int
    threads: int
    meter_postgres: Callable[[], list[int]]
    warm: Any = None  # WarmSparkEngine
    cold: Any = None  # SparkSubmitEngine, with a class-data archive
    cold_plain: Any = None  # SparkSubmitEngine without one
    pythons: dict[str, Path | None] | None = None
    rest_uri: str | None = None
    rest_pid: int | None = None
    jfr_dir: Path | None = None  # record every TMS run with Java Flight Recorder here
    tms_options: dict[str, str] | None = None  # overrides of the policy's job options


def _measure(env: Env, live: Callable[[], list[int]], work: Callable[[], dict[str, Any]]
             ) -> Run:
    phase = Phase("x")
    with CpuMeter(live, env.meter_postgres).measure(phase):
        info = work()
    return Run(phase.wall_s, phase.cpu_s, phase.postgres_cpu_s, info)


def tms_options(env: Env, identifier: str) -> dict[str, str]:
    """The compaction options TMS's scheduler would queue for this table (its plugin's
    measurement and policy, defaults but the target)."""
    from tms.domain import Table, TableState
    from tms.formats.iceberg.plugin import IcebergFormat

    ns, name = identifier.rsplit(".", 1)
    now = datetime.now(UTC)
    policy = {"compaction.target-file-size-bytes": str(env.target_bytes)}
    table = Table(pk=1, table_id=name, format="iceberg", catalog=env.catalog_name,
                  namespace=ns, table_name=name, base_path="", owner="", queue="default",
                  priority=0, policy=policy, state=TableState.ACTIVE, created_at=now,
                  updated_at=now)
    plugin = IcebergFormat()
    metrics = plugin._measure(table, env.catalog.load_table(identifier))
    decision = {d.action: d for d in plugin.evaluate(table, metrics, {}, now)}["compaction"]
    if not decision.should_run:
        raise BenchError(f"TMS's policy would not compact {identifier}: {decision.reason}")
    return {k: str(v) for k, v in decision.params.items()}


def tms_job(env: Env, identifier: str, data_path: str = "auto") -> Any:
    from tms.domain import JobSpec
    from tms.jobs import ICEBERG_MAINTENANCE_APP

    return JobSpec("pyspark", str(ICEBERG_MAINTENANCE_APP), {
        "catalog_name": env.catalog_name, "catalog_properties": env.props,
        "table": identifier, "action": "compaction",
        "options": {**tms_options(env, identifier), **(env.tms_options or {})},
        "allowed_locations": [str(env.warehouse)], "data_path": data_path})


def _engine_run(engine: Any, job: Any, workdir: Path) -> dict[str, Any]:
    res = engine.run(job, workdir, threading.Event(), lambda handle: None)
    if not res.succeeded:
        raise BenchError(f"{engine.name} failed: {res.error}\n{(res.log_tail or '')[-3000:]}")
    return {"result": res.result}


def warm_group(env: Env) -> list[int]:
    """The warm driver's process group and everything below it (PySpark's worker daemon and
    its Python workers run in a process group of their own)."""
    from bench.common.cpu import descendants
    from tms.engines.warm_process import group_members

    driver = env.warm.driver if env.warm else None
    members = group_members(driver.pid) if driver and driver.pid else []
    return sorted(set(members) | set(descendants(members)))


def _java_pid(pids: list[int]) -> int | None:
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
                return pid
        except OSError:
            continue
    return None


def _jcmd(pid: int, *args: str) -> None:
    subprocess.run(["jcmd", str(pid), *args], capture_output=True, timeout=60, check=False)


def _cold_engine(env: Env, recording: Path) -> Any:
    """The cold engine with a flight recording of its driver JVM (the executor's tasks
    run in it: local master)."""
    from dataclasses import replace

    from tms.engines.spark_submit import SparkSubmitEngine

    key = "spark.driver.extraJavaOptions"
    conf = env.cold.settings.effective_conf()
    opts = f"{conf.get(key, '')} -XX:StartFlightRecording:filename={recording}".strip()
    return SparkSubmitEngine(replace(env.cold.settings,
                                     conf={**env.cold.settings.conf, key: opts}))


def run_tms(env: Env, method: str, identifier: str, workdir: Path) -> Run:
    job = tms_job(env, identifier,  # planning is the scheduler's, not the run's
                  "spark" if method.endswith("-spark") else "auto")
    recording = env.jfr_dir / f"{workdir.name}.jfr" if env.jfr_dir else None
    if method.startswith("tms-warm"):
        pid = env.warm.driver.pid if env.warm.driver else None
        java = _java_pid(warm_group(env)) if recording else None
        if java:
            _jcmd(java, "JFR.start", "name=bench", "settings=profile")
        run = _measure(env, lambda: warm_group(env), lambda: _engine_run(env.warm, job, workdir))
        if java:
            _jcmd(java, "JFR.stop", "name=bench", f"filename={recording}")
        after = env.warm.driver.pid if env.warm.driver else None
        if after is None or (pid is not None and after != pid):
            raise BenchError("the warm driver was replaced during a run (the fallback ran it "
                             f"cold); see {env.warm.log_path}")
        return run
    engine = env.cold_plain if method == "tms-cold-noarchive" else env.cold
    cold = _cold_engine(env, recording) if recording else engine
    known = set(children_of(os.getpid()))

    def run_cold() -> dict[str, Any]:  # the worker daemon the JVM left is reaped (counted)
        out = _engine_run(cold, job, workdir)
        out["orphans_reaped"] = reap_orphans(known)
        return out

    run = _measure(env, lambda: [], run_cold)
    # A cold job's Python workers escape the accounting above (measured: a cold arrow-path
    # compaction of 261 MB counted about the CPU of one of 4.5 MB; neither the JVM nor this
    # subreaper reaps them): the tasks' own CPU, which they report, is added.
    task_cpu = float((run.info.get("result") or {}).get("arrow_task_cpu_s") or 0.0)
    run.cpu_s += task_cpu
    run.info["task_cpu_added_s"] = task_cpu
    return run


def _child(argv: list[str], log: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    with log.open("wb") as out:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=out, env=env,
                              timeout=EXT_TIMEOUT_S, cwd=REPO)
    if done.returncode != 0:
        raise BenchError(f"{argv[:3]} exited {done.returncode}: "
                         f"{log.read_text(errors='replace')[-3000:]}")
    last = done.stdout.decode(errors="replace").strip().splitlines()
    return json.loads(last[-1]) if last and last[-1].startswith("{") else {}


def run_pyarrow(env: Env, threads: int, inputs: list[str], workdir: Path) -> Run:
    workdir.mkdir(parents=True, exist_ok=True)
    listing = workdir / "inputs.txt"
    listing.write_text("\n".join(inputs) + "\n")
    out = workdir / "out"
    argv = [sys.executable, "-m", "bench.compaction_pyarrow", "--threads", str(threads),
            "--target-bytes", str(env.target_bytes), "--out", str(out), str(listing)]
    child_env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), os.environ.get("PYTHONPATH", "")])}
    run = _measure(env, lambda: [], lambda: _child(argv, workdir / "pyarrow.log", child_env))
    run.output_dir = out
    return run


def run_external(env: Env, method: str, identifier: str, workdir: Path) -> Run:
    assert env.pythons is not None
    python = env.pythons.get(method)
    if python is None:
        raise BenchError(f"{method} is not installed")
    workdir.mkdir(parents=True, exist_ok=True)
    request = workdir / "request.json"
    request.write_text(json.dumps({
        "name": env.catalog_name, "properties": env.props, "rest_uri": env.rest_uri,
        "table": identifier, "target_bytes": env.target_bytes, "threads": env.threads}))
    os.chmod(request, 0o600)
    argv = [str(python), str(REPO / "bench" / "compaction_ext.py"), method, str(request)]
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    rest = [env.rest_pid] if method == "iceberg-compaction" and env.rest_pid else []
    return _measure(env, lambda: list(rest),
                    lambda: _child(argv, workdir / f"{method}.log", clean))


def start_rest(env: Env, workdir: Path, children: Any) -> None:
    """The REST catalog iceberg-compaction talks to (``compaction_rest.py``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    props = workdir / "rest-props.json"
    props.write_text(json.dumps(env.props))
    os.chmod(props, 0o600)
    log = (workdir / "rest.log").open("wb")
    child_env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.Popen([sys.executable, "-m", "bench.compaction_rest", env.catalog_name,
                          str(props)], stdout=subprocess.PIPE, stderr=log, env=child_env,
                         cwd=REPO, start_new_session=True)
    children.popens.append(p)
    assert p.stdout is not None
    line = p.stdout.readline().decode().split()
    if len(line) != 2 or line[0] != "READY":
        raise BenchError(f"the REST catalog did not start: {(workdir / 'rest.log').read_text()}")
    env.rest_uri, env.rest_pid = f"http://127.0.0.1:{line[1]}", p.pid


def time_it(fn: Callable[[], Any]) -> float:
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0
