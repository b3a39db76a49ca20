"""The benchmarks' one harness: what every script in bench/ shares.

* :mod:`bench.common.cpu` — CPU seconds of process groups and the machine's busy / steal /
  other-load share from /proc, so every figure says whether the run was disturbed;
* :mod:`bench.common.stats` — percentiles and medians, computed one way everywhere;
* :mod:`bench.common.procs` — child processes stopped on any exit, the local stack (PostgreSQL,
  ZooKeeper, TMS) in a temporary directory, an Iceberg catalog on it;
* here — SIGTERM handled like Ctrl-C (so cleanup runs), the error type, progress lines, and
  the test plugins' path for the "constant" table format.

Benchmarks import from here and from :mod:`bench.faults`; never from ``tests`` (tests may
import bench, not the reverse).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TypeVar

REPO = Path(__file__).resolve().parents[2]
# Plugin packages (the "constant" table format) that live beside the tests; a directory put on
# the path, not an import of the tests package.
PLUGINS = REPO / "tests" / "plugins"
T = TypeVar("T")
TMS_HOME = Path(os.environ.get("TMS_HOME", REPO / ".tms"))


class BenchError(RuntimeError):
    """The benchmark could not measure what it set out to (a process died, a bound ran out)."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt inside the block, so cleanup code runs."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def guarded(run: Callable[[], T]) -> tuple[T | None, int]:
    """``run()`` with SIGTERM as an interrupt: (its result, 0), or (None, the exit status)
    after saying why on stderr: 130 interrupted (everything it started is stopped by its own
    cleanup), 1 when it could not measure (BenchError)."""
    try:
        with sigterm_as_interrupt():
            return run(), 0
    except KeyboardInterrupt:
        print("[bench] interrupted; everything stopped", file=sys.stderr)
        return None, 130
    except BenchError as e:
        print(f"[bench] failed: {e}", file=sys.stderr)
        return None, 1


def say(msg: str) -> None:
    """A progress line on stderr, so stdout carries only the figures."""
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def install_plugin_path() -> None:
    """The test plugins for this process and every process it starts (via the environment)."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = f"{PLUGINS}{os.pathsep}{old}" if old else str(PLUGINS)
    if str(PLUGINS) not in sys.path:
        sys.path.insert(0, str(PLUGINS))
