"""Shared fixtures: a real PostgreSQL and a real ZooKeeper on loopback, one per test session.

Each test that wants a clean database gets its own (``db_dsn``), so tests never see each
other's rows: a copy (``CREATE DATABASE ... TEMPLATE``) of one database migrated once per
session with the project's own runner, which costs a file copy instead of 14 migrations.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import own_postgres
from tms.local.postgres import LocalPostgres
from tms.local.stack import LocalStack
from tms.local.zookeeper import LocalZooKeeper

REPO = Path(__file__).resolve().parent.parent
# Tiers whose tests start whole stacks, Spark clusters or catalog servers: a longer bound on a
# hang than pyproject's default (300 s), unless the module sets its own.
SLOW_TIERS = frozenset({"e2e", "faults", "reach"})
SLOW_TIER_TIMEOUT_S = 900
_db_counter = itertools.count()
# Every warm driver a test starts (and those of the executors it starts) would first warm its
# data path up (tms.jobs.warmup): off here; test_warm_engine.py turns it on where it is shown.
os.environ.setdefault("TMS_WARMUP_ROWS", "0")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tier = item.path.relative_to(REPO).parts[1:2] if item.path.is_relative_to(REPO) else ()
        if tier and tier[0] in SLOW_TIERS and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(SLOW_TIER_TIMEOUT_S))


@dataclass(frozen=True)
class PgHandle:
    server: LocalPostgres
    dbname: str

    @property
    def dsn(self) -> str:
        return self.server.dsn(self.dbname)

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def user(self) -> str:
        return "postgres"


@pytest.fixture(scope="session")
def tms_home() -> Path:
    return Path(os.environ.get("TMS_HOME", REPO / ".tms"))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[LocalPostgres]:
    with own_postgres("tms-pg-") as server:
        yield server


@pytest.fixture(scope="session")
def migrated_template(pg_server: LocalPostgres) -> str:
    """The name of a database with the TMS schema applied, once per session: ``db_dsn``
    copies it. Nothing connects to it after the migration (a template must be idle)."""
    from tms.storage.migrate import migrate

    name = f"tms_template_{os.getpid()}"
    migrate(pg_server.create_database(name))
    return name


@pytest.fixture
def pg(pg_server: LocalPostgres, request: pytest.FixtureRequest) -> PgHandle:
    """A fresh database on the shared server: empty, or, when the test also asks for
    ``db_dsn`` (the same database), a copy of the migrated template."""
    name = f"t{os.getpid()}_{next(_db_counter)}"
    template = (request.getfixturevalue("migrated_template")
                if "db_dsn" in request.fixturenames else None)
    pg_server.create_database(name, template=template)
    return PgHandle(pg_server, name)


@pytest.fixture
def db_dsn(pg: PgHandle) -> str:
    """A fresh database with the TMS schema applied (a copy of the migrated template)."""
    return pg.dsn


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalZooKeeper]:
    server = LocalZooKeeper(tmp_path_factory.mktemp("zk")).start()
    try:
        yield server
    finally:
        server.stop()


StackFactory = Callable[..., LocalStack]


@pytest.fixture
def make_stack(tms_home: Path) -> Iterator[StackFactory]:
    """Build a LocalStack whose servers are started; services are started by the test."""
    stacks: list[LocalStack] = []
    roots: list[Path] = []

    def factory(**kwargs: object) -> LocalStack:
        root = Path(tempfile.mkdtemp(prefix="tms-e2e-"))
        roots.append(root)
        stack = LocalStack(root, tms_home, **kwargs)  # type: ignore[arg-type]
        stacks.append(stack)
        stack.start_servers()
        return stack

    yield factory
    for stack in stacks:
        stack.stop()
    for root in roots:
        shutil.rmtree(root, ignore_errors=True)
