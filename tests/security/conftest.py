"""The real tms-api process, started on a fresh database with a tokens file, for tests that
play a hostile table owner: an owner-scoped token that may manage its team's tables only.
The database holds two catalogs to register tables in: ``cat``, a real pyiceberg SQL catalog
(on the same database), and ``files``, a file-system catalog for Hudi base paths."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.helpers import SqlCatalog, sql_catalog, wait_for
from tms.domain import CatalogSpec, CatalogType
from tms.local.ports import free_port
from tms.local.postgres import LocalPostgres
from tms.storage.postgres import PostgresStore
from tms.v1 import tms_pb2_grpc

OWNER = "team-a"
OWNER_TOKEN = "team-a-admin-secret"
WRITER_TOKEN = "team-a-writer-secret"
_modules = itertools.count()


def bearer(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


HUDI_CATALOG = "files"


@dataclass
class ApiProcess:
    address: str
    channel: grpc.Channel
    catalog: SqlCatalog  # catalogs/cat (Iceberg tables)
    hudi_root: Path  # the allowed location of catalogs/files (Hudi base paths)

    @property
    def stub(self) -> tms_pb2_grpc.TableManagementServiceStub:
        return tms_pb2_grpc.TableManagementServiceStub(self.channel)


@pytest.fixture(scope="module")
def security_db(pg_server: LocalPostgres) -> str:
    """One migrated database per test module: the process is started once per module (tests
    in it use distinct table ids), since hundreds of hostile values need no fresh state."""
    from tms.storage.migrate import migrate

    dsn = pg_server.create_database(f"sec{os.getpid()}_{next(_modules)}")
    migrate(dsn)
    return dsn


@pytest.fixture(scope="module")
def api_process(security_db: str, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[ApiProcess]:
    db_dsn = security_db
    tmp_path = tmp_path_factory.mktemp("api")
    store = PostgresStore(db_dsn)
    try:
        catalog = sql_catalog(store, db_dsn, tmp_path / "warehouse")
        hudi_root = tmp_path / "hudi"
        hudi_root.mkdir()
        store.catalog_create(CatalogSpec(HUDI_CATALOG, CatalogType.HADOOP,
                                         allowed_locations=(str(hudi_root),)))
    finally:
        store.close()
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [
        {"name": "team-a-owner", "token": OWNER_TOKEN, "roles": ["admin"], "owners": [OWNER]},
        {"name": "team-a-writer", "token": WRITER_TOKEN, "roles": ["writer"],
         "owners": [OWNER]},
    ]}))
    tokens.chmod(0o600)
    address = f"127.0.0.1:{free_port()}"
    log = (tmp_path / "api.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "tms_services.api", "--listen", address,
                             "--tokens-file", str(tokens)],
                            env=dict(os.environ, TMS_DATABASE_URL=db_dsn),
                            stdout=log, stderr=subprocess.STDOUT)
    channel = grpc.insecure_channel(address)
    try:
        health = health_pb2_grpc.HealthStub(channel)

        def serving() -> bool:
            assert proc.poll() is None, (tmp_path / "api.log").read_text()
            try:
                return health.Check(health_pb2.HealthCheckRequest(), timeout=2).status == \
                    health_pb2.HealthCheckResponse.SERVING
            except grpc.RpcError:
                return False

        wait_for(serving, "the API process to serve")
        yield ApiProcess(address, channel, catalog, hudi_root)
    finally:
        channel.close()
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
