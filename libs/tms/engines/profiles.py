"""Which engine, with which Spark settings, runs an operation: per queue, then per table.

An engine name is an entry point of the ``tms.engines`` group (``spark-submit`` and
``warm-spark`` are built in); the router builds each engine through its entry point.

The executor's configuration file (TOML) sets the engine and Spark settings for every queue and
overrides them per queue; a table's policy may then ask for more or less resources and tuning
conf (``spark.driver-memory``, ``spark.conf.spark.sql.shuffle.partitions``, ...). Where a job runs
(master, deploy mode, jars) stays the operator's, per queue: see ``tms.policy.common``.

A warm driver's resources are fixed when it starts, so a table that asks for its own runs cold.
A table's resources are clamped to the caps of its queue (``[caps]``, ``[queues.X.caps]``,
see ``tms.spark.caps``); its tuning conf is limited to the allowlist of ``tms.policy.spark``
and checked again here, since a row stored before a rule tightened may carry anything.

    engine = "spark-submit"            # default engine: spark-submit, warm-spark or a plugin's
    [spark]                            # over the TMS_SPARK_* environment
    master = "yarn"
    deploy_mode = "cluster"
    [queues.small]
    engine = "warm-spark"
    [queues.small.spark]
    driver_memory = "2g"
    conf = { "spark.sql.shuffle.partitions" = "8" }
    [queues.small.caps]                # the most a table of this queue may ask for
    executor_memory = "4g"

A queue's share of a shared cluster is a Spark setting of the queue (``cores_max`` on a
standalone master, ``min_executors``/``max_executors`` for dynamic allocation, see
``tms.spark.cluster_settings``): it holds for the queue's warm driver and cold jobs alike, and
for tables with resources of their own (their settings start from the queue's).
"""

from __future__ import annotations

import threading
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import structlog

from tms.domain import Table
from tms.engines.base import (
    EngineClass,
    ExecutionEngine,
    engine_class,
    engine_names,
    unknown_engine,
)
from tms.policy.common import SPARK_CONF_KEYS, SPARK_CONF_PREFIX, SPARK_TABLE_KEYS
from tms.policy.spark import conf_refusal
from tms.spark.caps import ResourceCaps
from tms.spark.cluster_settings import FIELDS as CLUSTER_FIELDS
from tms.spark.settings import SparkSettings

ENGINE_COLD = "spark-submit"  # entry-point names of the built-in engines
ENGINE_WARM = "warm-spark"
_SETTINGS_FIELDS = ("master", "deploy_mode", "driver_memory", "executor_memory", "jars",
                    "packages", "conf", "driver_cores", "executor_cores", "num_executors",
                    "hudi_utilities_jar", "hudi_spark_bundle", *CLUSTER_FIELDS)
_TABLE_FIELD = {"spark.driver-memory": "driver_memory", "spark.executor-memory": "executor_memory",
                "spark.driver-cores": "driver_cores", "spark.executor-cores": "executor_cores",
                "spark.num-executors": "num_executors"}

EngineFactory = Callable[[SparkSettings], ExecutionEngine]

log = structlog.get_logger("tms.engines.profiles")


@dataclass(frozen=True)
class QueueProfile:
    engine: str
    settings: SparkSettings
    caps: ResourceCaps = ResourceCaps()


def _apply(settings: SparkSettings, raw: Any, where: str) -> SparkSettings:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a table of Spark settings")
    changes: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in _SETTINGS_FIELDS:
            raise ValueError(f"{where}.{key}: unknown setting; known: "
                             + ", ".join(_SETTINGS_FIELDS))
        if key in ("jars", "packages"):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{where}.{key}: expected a list of strings")
            value = tuple(value)
        elif key == "conf":
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise ValueError(f"{where}.conf: expected a table of string values")
            value = {**settings.conf, **value}
        changes[key] = value
    try:
        return replace(settings, **changes)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{where}: {e}") from None


def _engine(raw: Any, where: str) -> str:
    if not isinstance(raw, str) or raw not in engine_names():
        raise ValueError(f"{where}: {unknown_engine(raw)}")
    return raw


def parse_profiles(data: Mapping[str, Any], base: SparkSettings
                   ) -> tuple[QueueProfile, dict[str, QueueProfile]]:
    """(default profile, profiles by queue) from the parsed configuration file."""
    unknown = set(data) - {"engine", "spark", "queues", "caps"}
    if unknown:
        raise ValueError(f"unknown top-level keys: {', '.join(sorted(unknown))}")
    default = QueueProfile(_engine(data.get("engine", ENGINE_COLD), "engine"),
                           _apply(base, data.get("spark", {}), "spark"),
                           ResourceCaps.from_toml(data.get("caps", {}), ResourceCaps(), "caps"))
    queues: dict[str, QueueProfile] = {}
    for name, raw in (data.get("queues") or {}).items():
        where = f"queues.{name}"
        if not isinstance(raw, dict) or set(raw) - {"engine", "spark", "caps"}:
            raise ValueError(f"{where}: only 'engine', 'spark' and 'caps' may be set")
        queues[name] = QueueProfile(_engine(raw.get("engine", default.engine), f"{where}.engine"),
                                    _apply(default.settings, raw.get("spark", {}),
                                           f"{where}.spark"),
                                    ResourceCaps.from_toml(raw.get("caps", {}), default.caps,
                                                           f"{where}.caps"))
    return default, queues


def load_profiles(path: Path, base: SparkSettings
                  ) -> tuple[QueueProfile, dict[str, QueueProfile]]:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"{path}: {e}") from None
    try:
        return parse_profiles(data, base)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def table_settings(settings: SparkSettings, policy: Mapping[str, str],
                   caps: ResourceCaps | None = None) -> SparkSettings | None:
    """The settings with the table's own resources and conf, or None when it sets none."""
    return own_settings(settings, policy, caps or ResourceCaps())[0]


def own_settings(settings: SparkSettings, policy: Mapping[str, str], caps: ResourceCaps
                 ) -> tuple[SparkSettings | None, list[str]]:
    """(the settings with the table's own resources, clamped to ``caps``, and tuning conf, or
    None when it sets none; a note per clamped value). Every value is parsed again through the
    schema: ValueError means a stored value went bad (bad configuration, not retried)."""
    changes: dict[str, Any] = {}
    notes: list[str] = []
    conf: dict[str, str] = {}
    for k, raw in policy.items():
        if not k.startswith(SPARK_CONF_PREFIX):
            continue
        spec = SPARK_CONF_KEYS.get(k)
        if spec is None:
            raise ValueError(f"policy {k}: {conf_refusal(k)}")
        spec.get(policy)
        conf[k[len(SPARK_CONF_PREFIX):]] = raw
    for key, field_name in _TABLE_FIELD.items():
        if key in policy:
            value, note = caps.clamp(field_name, SPARK_TABLE_KEYS[key].get(policy))  # type: ignore[arg-type]
            changes[field_name] = value
            if note:
                notes.append(note)
    if not changes and not conf:
        return None, notes
    if conf:
        changes["conf"] = {**settings.conf, **conf}
    return replace(settings, **changes), notes


def _factory(cls: EngineClass, state_dir: Path) -> EngineFactory:
    def make(settings: SparkSettings) -> ExecutionEngine:
        return cls.from_settings(settings, state_dir)

    return make


class EngineRouter:
    """The engine for each table: its queue's profile (engines made once and kept, so a warm
    driver lives on), or a cold engine with the table's own settings."""

    def __init__(self, default: QueueProfile, queues: Mapping[str, QueueProfile],
                 factories: Mapping[str, EngineFactory]) -> None:
        for name in {ENGINE_COLD, default.engine, *(p.engine for p in queues.values())}:
            if name not in factories:
                raise ValueError(f"no factory for engine {name!r}")
        self.default = default
        self.queues = dict(queues)
        self.factories = dict(factories)
        self._engines: dict[str, ExecutionEngine] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_entry_points(cls, default: QueueProfile, queues: Mapping[str, QueueProfile],
                          state_dir: Path) -> EngineRouter:
        """A router whose engines are built through their ``tms.engines`` entry points (and
        cold spark-submit for tables with settings of their own). UnknownEngineError (a
        ValueError) names an engine no installed distribution provides."""
        names = sorted({ENGINE_COLD, default.engine, *(p.engine for p in queues.values())})
        return cls(default, queues, {n: _factory(engine_class(n), state_dir) for n in names})

    def profile(self, queue: str) -> QueueProfile:
        return self.queues.get(queue, self.default)

    def engine_for(self, table: Table) -> ExecutionEngine:
        return self.route(table)[0]

    def route(self, table: Table) -> tuple[ExecutionEngine, list[str]]:
        """(the engine, notes on the table's resources clamped to its queue's caps)."""
        profile = self.profile(table.queue)
        own, notes = own_settings(profile.settings, table.policy, profile.caps)
        if own is not None:
            return self.factories[ENGINE_COLD](own), notes
        return self._kept(table, profile), notes

    def _kept(self, table: Table, profile: QueueProfile) -> ExecutionEngine:
        key = table.queue if table.queue in self.queues else ""
        with self._lock:
            engine = self._engines.get(key)
            if engine is None:
                engine = self._engines[key] = self.factories[profile.engine](profile.settings)
            return engine

    def close(self) -> None:
        """Close every engine the router kept (a warm engine stops its driver); one that fails
        to close does not keep the others running. Engines made for a table's own settings
        are cold, hold nothing between jobs and are not kept."""
        with self._lock:
            engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            try:
                engine.close()
            except Exception:
                log.exception("engine failed to close", engine=engine.name)
