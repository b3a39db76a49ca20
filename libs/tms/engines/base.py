"""The execution-engine interface (RFC-43's pluggable execution): run a job to its end, report
the engine's handle as soon as it is known, stop it when asked, and release what the engine
holds on close.

Engines are found through the ``tms.engines`` entry-point group: each entry point names a class
with the same constructor, ``from_settings(settings, state_dir)``, so the executor builds every
engine (built in or shipped by a third party) the same way and needs no import of it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol, cast

from tms.domain import JobSpec
from tms.spark.settings import SparkSettings

ENGINES_GROUP = "tms.engines"
LOG_TAIL_MAX_BYTES = 16 * 1024


@dataclass(frozen=True)
class EngineResult:
    succeeded: bool
    result: dict[str, Any] | None = None
    error: str | None = None
    log_tail: str = ""
    exit_code: int | None = None
    handle: str | None = None
    stopped: bool = False  # ended because ``stop`` was set
    retryable: bool = True  # False: a failure another attempt cannot fix (bad spec, no table)
    # the job found nothing to do (a Hudi utility with no plan): the operation ends SKIPPED
    # with this reason, never FAILED
    skipped: str | None = None


# A running job's progress, JSON-able: {"stages": [{"id", "name", "tasks", "completed",
# "active", "failed"}, ...], "sampled_at": ISO time}. Called at most every few seconds.
ProgressCallback = Callable[[dict[str, Any]], None]


class ExecutionEngine(Protocol):
    name: str

    def run(self, job: JobSpec, workdir: Path, stop: threading.Event,
            on_handle: Callable[[str], None],
            on_progress: ProgressCallback | None = None) -> EngineResult:
        """Run ``job`` to its end (or until ``stop``); ``on_handle`` gets the engine's handle
        once known, ``on_progress`` the job's progress when the engine can observe it."""
        ...

    def close(self) -> None:
        """Release what the engine keeps between jobs (a warm driver); idempotent. The
        executor calls it once, on shutdown, through ``EngineRouter.close``."""


class EngineClass(Protocol):
    """What a ``tms.engines`` entry point names: the uniform way to build an engine."""

    def from_settings(self, settings: SparkSettings, state_dir: Path) -> ExecutionEngine:
        """An engine running jobs with ``settings``; ``state_dir`` is the executor's directory
        for engine files that outlive one job (each engine uses a subdirectory of its own)."""
        ...


class UnknownEngineError(ValueError):
    """No installed distribution provides an engine of that name."""


def read_tail(path: Path, max_bytes: int = LOG_TAIL_MAX_BYTES) -> str:
    """The last ``max_bytes`` of a log, starting at a line boundary."""
    if not path.exists():
        return ""
    with path.open("rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - max_bytes))
        data = f.read()
    if size > max_bytes and b"\n" in data:
        data = data[data.index(b"\n") + 1:]
    return data.decode("utf-8", errors="replace")


def engine_names() -> tuple[str, ...]:
    """The engines installed (their entry-point names), without importing them."""
    return tuple(sorted({ep.name for ep in entry_points(group=ENGINES_GROUP)}))


def unknown_engine(name: object) -> UnknownEngineError:
    installed = ", ".join(engine_names()) or "none"
    return UnknownEngineError(f"no execution engine named {name!r} in the {ENGINES_GROUP} "
                              f"entry points; installed: {installed}")


@cache
def engine_class(name: str) -> EngineClass:
    """The class the entry point ``name`` names; UnknownEngineError names a missing one."""
    for ep in entry_points(group=ENGINES_GROUP):
        if ep.name == name:
            cls = ep.load()
            if not callable(getattr(cls, "from_settings", None)):
                raise TypeError(f"entry point {name!r} ({ep.value}) has no from_settings")
            return cast(EngineClass, cls)
    raise unknown_engine(name)
