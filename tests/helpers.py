"""Small helpers shared by the integration and end-to-end tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import grpc

from tms.local import iceberg_data
from tms.local.stack import LocalStack
from tms.v1 import tms_pb2_grpc

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
    assert stack.postgres is not None
    dsn = stack.postgres.create_database("iceberg_catalog")
    props = iceberg_data.catalog_properties(dsn, f"file://{stack.state_dir / 'warehouse'}")
    return iceberg_data.load_catalog(name, props), props


def stub_for(stack: LocalStack) -> tms_pb2_grpc.TableManagementServiceStub:
    return tms_pb2_grpc.TableManagementServiceStub(grpc.insecure_channel(stack.api_address))
