"""What every benchmark script shares: SIGTERM handled like Ctrl-C (so every process a
benchmark started is stopped on the way out), and its error type."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


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
