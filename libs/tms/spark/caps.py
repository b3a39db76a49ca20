"""The most Spark resources a table's policy may ask for, set by the operator per queue.

The policy schema bounds ``spark.executor-memory`` and friends absolutely (the API refuses
anything outside); within that, each queue of the executor's engine profiles has caps, and the
executor clamps a table's request to them and says so in the operation's log and result. A
table owner cannot take a cluster's memory by writing a large number.

    [caps]                      # every queue
    executor_memory = "16g"
    [queues.small.caps]         # one queue
    executor_memory = "2g"
    num_executors = 4
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from tms import strict

DEFAULT_MAX_DRIVER_MEMORY = "8g"
DEFAULT_MAX_EXECUTOR_MEMORY = "16g"
DEFAULT_MAX_DRIVER_CORES = 8
DEFAULT_MAX_EXECUTOR_CORES = 8
DEFAULT_MAX_NUM_EXECUTORS = 50
MAX_CAP_MEMORY_BYTES = 1 << 40  # 1t
MAX_CAP_COUNT = 10_000
_POLICY_KEY = {"driver_memory": "spark.driver-memory", "executor_memory": "spark.executor-memory",
               "driver_cores": "spark.driver-cores", "executor_cores": "spark.executor-cores",
               "num_executors": "spark.num-executors"}


@dataclass(frozen=True)
class ResourceCaps:
    """Per-queue caps; field names match SparkSettings' so a clamp maps one onto the other."""

    driver_memory: str = DEFAULT_MAX_DRIVER_MEMORY
    executor_memory: str = DEFAULT_MAX_EXECUTOR_MEMORY
    driver_cores: int = DEFAULT_MAX_DRIVER_CORES
    executor_cores: int = DEFAULT_MAX_EXECUTOR_CORES
    num_executors: int = DEFAULT_MAX_NUM_EXECUTORS

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("memory"):
                if not isinstance(value, str):
                    raise ValueError(f"caps.{f.name}: expected a size like 8g")
                try:
                    strict.parse_memory(value, 1 << 20, MAX_CAP_MEMORY_BYTES)
                except ValueError as e:
                    raise ValueError(f"caps.{f.name}: {e}") from None
            elif (isinstance(value, bool) or not isinstance(value, int)
                  or not 1 <= value <= MAX_CAP_COUNT):
                raise ValueError(f"caps.{f.name}: expected an integer from 1 to "
                                 f"{MAX_CAP_COUNT}, got {value!r}")

    @classmethod
    def from_toml(cls, raw: Any, base: ResourceCaps, where: str) -> ResourceCaps:
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: expected a table of caps")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(raw) - set(known))
        if unknown:
            raise ValueError(f"{where}.{unknown[0]}: unknown cap; known: {', '.join(known)}")
        try:
            return cls(**{**{k: getattr(base, k) for k in known}, **raw})
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None

    def clamp(self, name: str, value: str | int) -> tuple[str | int, str | None]:
        """(the value within this cap, a note when it was lowered)."""
        cap = getattr(self, name)
        if isinstance(value, str):
            asked = strict.parse_memory(value, 1, MAX_CAP_MEMORY_BYTES)
            over = asked > strict.parse_memory(cap, 1, MAX_CAP_MEMORY_BYTES)
        else:
            over = value > cap
        if not over:
            return value, None
        return cap, (f"{_POLICY_KEY[name]}={value} is above the queue's cap; "
                     f"capped at {cap}")
