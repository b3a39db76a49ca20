"""Which engine, with which Spark settings, runs an operation: per queue, then per table.

The executor's configuration file (TOML) sets the engine and Spark settings for every queue and
overrides them per queue; a table's policy may then ask for more or less resources and tuning
conf (``spark.driver-memory``, ``spark.conf.spark.sql.shuffle.partitions``, ...). Where a job runs
(master, deploy mode, jars) stays the operator's, per queue: see ``tms.policy``.

A warm driver's resources are fixed when it starts, so a table that asks for its own runs cold.

    engine = "spark-submit"            # default engine: spark-submit or warm-spark
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

from tms.domain import TableRecord
from tms.engines.base import ExecutionEngine
from tms.policy import SPARK_CONF_PREFIX, SPARK_TABLE_KEYS
from tms.spark.settings import SparkSettings

ENGINE_COLD = "spark-submit"
ENGINE_WARM = "warm-spark"
ENGINE_NAMES = (ENGINE_COLD, ENGINE_WARM)
_SETTINGS_FIELDS = ("master", "deploy_mode", "driver_memory", "executor_memory", "jars",
                    "packages", "conf", "driver_cores", "executor_cores", "num_executors")
_TABLE_FIELD = {"spark.driver-memory": "driver_memory", "spark.executor-memory": "executor_memory",
                "spark.driver-cores": "driver_cores", "spark.executor-cores": "executor_cores",
                "spark.num-executors": "num_executors"}

EngineFactory = Callable[[SparkSettings], ExecutionEngine]


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
    if raw not in ENGINE_NAMES:
        raise ValueError(f"{where}: engine must be one of {', '.join(ENGINE_NAMES)}, got {raw!r}")
    return str(raw)


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


class EngineRouter:
    """The engine for each table: its queue's profile (engines made once and kept, so a warm
    driver lives on), or a cold engine with the table's own settings."""

    def __init__(self, default: QueueProfile, queues: Mapping[str, QueueProfile],
                 factories: Mapping[str, EngineFactory]) -> None:
        for profile in (default, *queues.values()):
            if profile.engine not in factories:
                raise ValueError(f"no factory for engine {profile.engine!r}")
        self.default = default
        self.queues = dict(queues)
        self.factories = dict(factories)
        self._engines: dict[str, ExecutionEngine] = {}
        self._lock = threading.Lock()

    def profile(self, queue: str) -> QueueProfile:
        return self.queues.get(queue, self.default)

    def engine_for(self, table: TableRecord) -> ExecutionEngine:
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
        with self._lock:
            engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            close = getattr(engine, "close", None)
            if callable(close):
                close()
