"""Which engine, with which Spark settings, runs an operation: per queue, then per table.

An engine name is an entry point of the ``tms.engines`` group (``spark-submit`` and
``warm-spark`` are built in); the router builds each engine through its entry point.

The executor's configuration file (TOML) sets the engine and Spark settings for every queue and
overrides them per queue; a table's policy may then ask for more or less resources and tuning
conf (``spark.driver-memory``, ``spark.conf.spark.sql.shuffle.partitions``, ...). Where a job runs
(master, deploy mode, jars) stays the operator's, per queue: see ``tms.policy``.

A warm driver's resources are fixed when it starts, so a table that asks for its own runs cold.

    engine = "spark-submit"            # default engine: spark-submit, warm-spark or a plugin's
    [spark]                            # over the TMS_SPARK_* environment
    master = "yarn"
    deploy_mode = "cluster"
    [queues.small]
    engine = "warm-spark"
    [queues.small.spark]
    driver_memory = "2g"
    conf = { "spark.sql.shuffle.partitions" = "8" }
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
from tms.policy import SPARK_CONF_PREFIX, SPARK_TABLE_KEYS
from tms.spark.settings import SparkSettings

ENGINE_COLD = "spark-submit"  # entry-point names of the built-in engines
ENGINE_WARM = "warm-spark"
_SETTINGS_FIELDS = ("master", "deploy_mode", "driver_memory", "executor_memory", "jars",
                    "packages", "conf", "driver_cores", "executor_cores", "num_executors")
_TABLE_FIELD = {"spark.driver-memory": "driver_memory", "spark.executor-memory": "executor_memory",
                "spark.driver-cores": "driver_cores", "spark.executor-cores": "executor_cores",
                "spark.num-executors": "num_executors"}

EngineFactory = Callable[[SparkSettings], ExecutionEngine]

log = structlog.get_logger("tms.engines.profiles")


@dataclass(frozen=True)
class QueueProfile:
    engine: str
    settings: SparkSettings


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
    unknown = set(data) - {"engine", "spark", "queues"}
    if unknown:
        raise ValueError(f"unknown top-level keys: {', '.join(sorted(unknown))}")
    default = QueueProfile(_engine(data.get("engine", ENGINE_COLD), "engine"),
                           _apply(base, data.get("spark", {}), "spark"))
    queues: dict[str, QueueProfile] = {}
    for name, raw in (data.get("queues") or {}).items():
        where = f"queues.{name}"
        if not isinstance(raw, dict) or set(raw) - {"engine", "spark"}:
            raise ValueError(f"{where}: only 'engine' and 'spark' may be set")
        queues[name] = QueueProfile(_engine(raw.get("engine", default.engine), f"{where}.engine"),
                                    _apply(default.settings, raw.get("spark", {}),
                                           f"{where}.spark"))
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


def table_settings(settings: SparkSettings, policy: Mapping[str, str]) -> SparkSettings | None:
    """The settings with the table's own resources and conf, or None when it sets none.
    Values were validated at registration; ValueError here means a stored value went bad."""
    changes: dict[str, Any] = {}
    conf = {k[len(SPARK_CONF_PREFIX):]: v for k, v in policy.items()
            if k.startswith(SPARK_CONF_PREFIX)}
    for key, field_name in _TABLE_FIELD.items():
        if key in policy:
            changes[field_name] = SPARK_TABLE_KEYS[key].get(policy)
    if not changes and not conf:
        return None
    if conf:
        changes["conf"] = {**settings.conf, **conf}
    return replace(settings, **changes)


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
        profile = self.profile(table.queue)
        own = table_settings(profile.settings, table.policy)
        if own is not None:
            return self.factories[ENGINE_COLD](own)
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
