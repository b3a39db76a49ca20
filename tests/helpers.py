"""Small helpers shared by the integration and end-to-end tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from bench.common.procs import iceberg_catalog as _iceberg_catalog
from bench.common.procs import stub_for
from tms.local.stack import LocalStack

T = TypeVar("T")
WAIT_TIMEOUT_S = 240.0
WAIT_STEP_S = 0.1


def wait_for(probe: Callable[[], T | None], what: str, timeout_s: float = WAIT_TIMEOUT_S,
             step_s: float = WAIT_STEP_S) -> T:
    """Poll ``probe`` until it returns something truthy; fail the test naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(step_s)


def iceberg_catalog(stack: LocalStack, name: str = "tms_e2e") -> tuple[object, dict[str, str]]:
    """A SQL Iceberg catalog on the stack's PostgreSQL (the benchmarks' helper)."""
    return _iceberg_catalog(stack, name)


__all__ = ["iceberg_catalog", "stub_for", "wait_for"]
