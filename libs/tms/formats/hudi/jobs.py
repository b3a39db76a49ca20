"""The Hudi utilities' command lines: what TMS decided, with the writers' own settings.

Each job is one of Hudi's utilities (flags checked against their ``Config`` classes for the
releases in docs/hudi.md):

- compaction: ``HoodieCompactor --base-path --table-name --mode [--instant-time]``, with the
  trigger TMS evaluated (``hoodie.compact.inline.trigger.strategy``, ``...max.delta.commits``,
  ``...max.delta.seconds`` as ``--hoodie-conf``) so Hudi's own trigger check in
  ``scheduleAndExecute`` finds the plan TMS decided instead of applying its default of 5;
- clustering: ``HoodieClusteringJob`` with the same flags; the writers' inline/async
  clustering gates are turned off for the job (TMS decided the trigger), so only Hudi's plan
  strategy decides whether there is work;
- clean: ``HoodieCleaner --target-base-path``, only with the writers' retention: unknown
  retention builds no job (a clear error saying what to set).

The writers' configuration (:mod:`tms.formats.hudi.writer`) goes into a private properties
file the engine writes in the job's work directory (``--props``; secret references resolved
only there, removed when the attempt ends); TMS's own settings go as ``--hoodie-conf``, which
Hudi applies over the file. Compaction and clustering clean after they commit (Hudi's
``hoodie.clean.automatic``): without a known retention that clean is turned off, so no job
ever cleans with Hudi's default of 10 commits.

"No plan" (Hudi found nothing to do) is not a failure: the job names the log lines that mean
it (``no_plan``) and the engine ends the operation SKIPPED with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tms.domain import JobSpec, Operation, Table
from tms.formats.hudi.releases import minimum_release, table_facts
from tms.formats.hudi.writer import (
    JAR_PROPERTIES,
    WriterConfigError,
    jar_problem,
    writer_config,
)
from tms.formats.hudi.writer_keys import TRIGGER_STRATEGIES

if TYPE_CHECKING:
    from tms.catalogs import CatalogAccess

COMPACTOR = "org.apache.hudi.utilities.HoodieCompactor"
CLUSTERING_JOB = "org.apache.hudi.utilities.HoodieClusteringJob"
CLEANER = "org.apache.hudi.utilities.HoodieCleaner"
MODES = ("scheduleAndExecute", "execute", "schedule")  # --mode of compactor and clustering job
INSTANT_RE = re.compile(r"[0-9]{14,20}")
MAX_TRIGGER = 100_000_000
# the operation params each job reads (tms.formats.hudi.decide writes them; the plugin
# declares them in tms.formats.hudi.policy.PARAMS, which the API and scheduler check)
READS = {"compaction": ("mode", "instant", "trigger_strategy", "max_delta_commits",
                        "max_delta_seconds"),
         "clustering": ("mode", "instant"),
         "clean": ("instant",)}
# log lines by which each utility says it found nothing to plan (their sources, 0.14 - 1.x)
NO_PLAN = {
    COMPACTOR: ("Couldn't do schedule", "There is no scheduled compaction in the table"),
    CLUSTERING_JOB: ("Couldn't generate cluster plan",
                     "There is no scheduled clustering in the table"),
}
CATALOG_JAR_KEYS = dict(zip(("utilities_jar", "spark_bundle"), JAR_PROPERTIES, strict=True))
_CONF_KEY_RE = re.compile(r"hoodie(\.[a-z0-9_]+)+")
_CONF_VALUE_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def hoodie_conf(key: str, value: str) -> tuple[str, str]:
    """One ``--hoodie-conf key=value``. Hudi splits it at the first '=', reads it like a
    properties line (blanks collapsed, ``include=`` followed) and, before 0.10, split the
    flag's value at commas: so only a dotted lower-case key and a short value of letters,
    digits, ``_ . -`` get here (TMS's own numbers and enum names)."""
    if not _CONF_KEY_RE.fullmatch(key) or not _CONF_VALUE_RE.fullmatch(value):
        raise ValueError(f"refusing --hoodie-conf {key[:80]!r}={value[:40]!r}: only "
                         "hoodie.* keys and values of letters, digits, _ . -")
    return "--hoodie-conf", f"{key}={value}"


def _int_param(params: Mapping[str, Any], name: str) -> str | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    text = str(raw)
    if not re.fullmatch(r"[1-9][0-9]{0,8}", text) or int(text) > MAX_TRIGGER:
        raise ValueError(f"param {name} must be a positive integer, got {text[:40]!r}")
    return text


def compaction_trigger(params: Mapping[str, Any]) -> dict[str, str]:
    """The trigger TMS evaluated, as Hudi's keys. Without one (a plan triggered by hand, or
    queued before triggers were recorded) TMS has decided already: one delta commit is
    enough for Hudi to schedule."""
    strategy = str(params.get("trigger_strategy") or "NUM_COMMITS")
    if strategy not in TRIGGER_STRATEGIES:
        raise ValueError(f"param trigger_strategy: one of {', '.join(TRIGGER_STRATEGIES)}, "
                         f"got {strategy[:40]!r}")
    out = {"hoodie.compact.inline.trigger.strategy": strategy,
           "hoodie.compact.inline.max.delta.commits":
               _int_param(params, "max_delta_commits") or "1"}
    seconds = _int_param(params, "max_delta_seconds")
    if seconds is not None:
        out["hoodie.compact.inline.max.delta.seconds"] = seconds
    elif "TIME" in strategy:
        raise ValueError(f"trigger strategy {strategy} needs param max_delta_seconds")
    return out


def retention_problem(props: Mapping[str, str]) -> str | None:
    """Why the cleaner may not run with ``props``: the retention of the writers' cleaner
    policy must be stated (Hudi's defaults are not what writers rely on), and archival must
    keep more instants than the cleaner (Hudi refuses the configuration otherwise)."""
    policy = props.get("hoodie.cleaner.policy", "KEEP_LATEST_COMMITS")
    needed = {"KEEP_LATEST_COMMITS": "hoodie.cleaner.commits.retained",
              "KEEP_LATEST_FILE_VERSIONS": "hoodie.cleaner.fileversions.retained",
              "KEEP_LATEST_BY_HOURS": "hoodie.cleaner.hours.retained"}[policy]
    if needed not in props:
        return (f"the writers' retention is unknown: cleaner policy {policy} needs {needed} "
                "in the writer configuration (catalog property hudi.writer." + needed +
                " or the writer properties file)")
    if policy == "KEEP_LATEST_COMMITS":
        keep_min = int(props.get("hoodie.keep.min.commits", "20"))
        keep_max = int(props.get("hoodie.keep.max.commits", "30"))
        retained = int(props[needed])
        if keep_min <= retained or keep_max <= keep_min:
            return (f"hoodie.keep.min.commits ({keep_min}) must exceed "
                    f"hoodie.cleaner.commits.retained ({retained}) and hoodie.keep.max.commits "
                    f"({keep_max}) must exceed it: Hudi refuses this writer configuration")
    return None


def auto_clean(props: Mapping[str, str] | None) -> bool:
    """Whether a compaction or clustering job cleans after it commits (Hudi's
    ``hoodie.clean.automatic``, default true): TMS turns it off unless the writers' retention
    is known and accepted (:func:`build`), and the writer configuration may turn it off. Any
    value but ``false`` counts as on (the safe side for the checks that depend on it), and
    so does a configuration no job is built with (numbers that are none, an unknown policy)."""
    if props is None:
        return False
    try:
        if retention_problem(props):
            return False
    except (KeyError, ValueError):
        return True
    return props.get("hoodie.clean.automatic", "true").strip().lower() != "false"


def can_clean(action: str, props: Mapping[str, str] | None) -> bool:
    """Whether the job for ``action`` runs Hudi's cleaner (:mod:`tms.formats.hudi.clean_guard`
    checks what it would read first)."""
    return action == "clean" or (action in ("compaction", "clustering") and auto_clean(props))


def _table_name(table: Table, operation: Operation) -> str:
    """HoodieCompactor/HoodieClusteringJob require --table-name but use it only to name the
    Spark app (in the sources checked): the registered name, else hoodie.table.name as
    inspected, else the directory name."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", table.table_name
                  or str(operation.work.metrics.get("table_name") or "")
                  or PurePosixPath(urlsplit(table.base_path).path).name).lstrip("-")


def _jars(catalog: CatalogAccess) -> dict[str, str]:
    """The catalog's own Hudi jars (an admin's setting), over the queue's."""
    out = {}
    for name, key in CATALOG_JAR_KEYS.items():
        value = catalog.properties.get(key, "")
        if value:
            why = jar_problem(value)
            if why:
                raise ValueError(f"catalog property {key}: {why}")
            out[name] = value
    return out


def build(table: Table, catalog: CatalogAccess, operation: Operation, base: str) -> JobSpec:
    """The job for ``operation`` on the checked base path ``base``; ValueError (bad
    configuration, not retried) says why none can be built."""
    action, params = operation.action, operation.work.params
    if action not in ("compaction", "clustering", "clean"):
        raise ValueError(f"hudi has no action {action!r}")
    try:
        writer = writer_config(table, catalog)
    except WriterConfigError as e:
        raise ValueError(f"writer configuration: {e}") from None
    props = dict(writer.properties) if writer else {}
    conf: dict[str, str] = {}
    if action == "clean":
        problem = retention_problem(props) if writer else (
            "the writers' retention is unknown: set the writer configuration of this table "
            "(catalog properties hudi.writer.hoodie.cleaner.policy and "
            "hudi.writer.hoodie.cleaner.commits.retained, or hudi.writer.properties-file); "
            "TMS never cleans with Hudi's default retention")
        if problem:
            raise ValueError(f"clean not built: {problem}")
        # a pending clean's instant has no flag: HoodieCleaner finishes every pending clean
        # before it plans a new one (CleanActionExecutor); it is checked all the same
        instant = params.get("instant")
        if instant is not None and not INSTANT_RE.fullmatch(str(instant)):
            raise ValueError(f"param instant must be a Hudi instant time, got "
                             f"{str(instant)[:40]!r}")
        app, args = CLEANER, ["--target-base-path", base]
    else:
        mode = str(params.get("mode", "scheduleAndExecute"))
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
        app = COMPACTOR if action == "compaction" else CLUSTERING_JOB
        args = ["--base-path", base, "--table-name", _table_name(table, operation),
                "--mode", mode]
        if mode == "execute":
            instant = str(params.get("instant", ""))
            if not INSTANT_RE.fullmatch(instant):
                raise ValueError(f"mode execute needs the plan's instant time, got "
                                 f"{instant[:40]!r}")
            args += ["--instant-time", instant]
        if action == "compaction" and mode != "execute":
            conf.update(compaction_trigger(params))
            if "hoodie.compaction.strategy" in props:  # the flag's default would win for
                args += ["--strategy", props["hoodie.compaction.strategy"]]  # the schedule
        if action == "clustering":  # with both gates off only the plan strategy decides
            conf.update({"hoodie.clustering.inline": "false",
                         "hoodie.clustering.async.enabled": "false"})
        if retention_problem(props) if writer else True:
            conf["hoodie.clean.automatic"] = "false"  # never clean with Hudi's defaults
    needed, why = minimum_release(table_facts(base, catalog, operation.work.metrics), writer,
                                  conf)
    for key, value in conf.items():
        args += hoodie_conf(key, value)
    spec: dict[str, Any] = {"hudi": {
        "properties": props, "property_secrets": dict(writer.secret_refs) if writer else {},
        "jars": _jars(catalog), "min_release": needed, "min_release_why": why,
        "location": base, "no_plan": list(NO_PLAN.get(app, ())),
        "memory_flag": None if app == CLEANER else "--spark-memory",
        "writer_sources": list(writer.sources) if writer else []}}
    return JobSpec(kind="jvm", app=app, spec=spec, args=tuple(args))
