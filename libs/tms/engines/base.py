"""The execution-engine interface (RFC-43's pluggable execution): run a job to its end, report
the engine's handle as soon as it is known, and stop it when asked. Engines are found through
the ``tms.engines`` entry-point group."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol

from tms.domain import JobSpec

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


class ExecutionEngine(Protocol):
    name: str

    def run(self, job: JobSpec, workdir: Path, stop: threading.Event,
            on_handle: Callable[[str], None]) -> EngineResult: ...


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


@cache
def engine_class(name: str) -> Any:
    for ep in entry_points(group=ENGINES_GROUP):
        if ep.name == name:
            return ep.load()
    raise KeyError(f"no execution engine named {name!r}")
