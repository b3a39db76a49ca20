"""An in-process API server on a fresh database, with optional auth, allowlist and TLS."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.helpers import SqlCatalog, sql_catalog
from tms.api.server import ApiServer
from tms.formats.registry import load_formats
from tms.local.ports import free_port
from tms.storage.postgres import PostgresStore
from tms.v1 import tms_pb2_grpc


@dataclass
class Api:
    server: ApiServer
    store: PostgresStore
    address: str
    catalog: SqlCatalog  # catalogs/cat: a real SQL catalog on the test database

    def stub(self, channel: grpc.Channel | None = None) -> tms_pb2_grpc.TableManagementServiceStub:
        """A stub that also carries ``catalog`` (for helpers that make tables in it)."""
        stub = tms_pb2_grpc.TableManagementServiceStub(
            channel or grpc.insecure_channel(self.address))
        stub.catalog = self.catalog  # type: ignore[attr-defined]
        return stub


@pytest.fixture
def make_api(db_dsn: str, tmp_path: Path) -> Iterator[Callable[..., Api]]:
    started: list[Api] = []

    def factory(**kwargs: Any) -> Api:
        store = PostgresStore(db_dsn)
        address = f"127.0.0.1:{free_port()}"
        server = ApiServer(store, load_formats(), address, **kwargs)
        server.start()
        api = Api(server, store, address, sql_catalog(store, db_dsn, tmp_path / "warehouse"))
        started.append(api)
        return api

    yield factory
    for api in started:
        api.server.stop(0)
        api.store.close()


@pytest.fixture
def api(make_api: Callable[..., Api]) -> Api:
    return make_api()


@pytest.fixture
def store(db_dsn: str) -> Iterator[PostgresStore]:
    """The store on a fresh database, for tests of storage behaviour without a server."""
    s = PostgresStore(db_dsn)
    yield s
    s.close()
