"""Processes a benchmark starts, stopped on every way out: single children (``Children``) and
the whole local stack (PostgreSQL, ZooKeeper, tms-api, schedulers, executors) in a temporary
directory (``local_stack``), plus the Iceberg catalog and API stub most runs need on it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import IO, Any

import grpc

from bench.common import TMS_HOME, say
from tms.domain import CatalogSpec, CatalogType
from tms.local import iceberg_data
from tms.local.stack import LocalStack
from tms.storage.postgres import PostgresStore
from tms.v1 import tms_pb2_grpc

STOP_GRACE_S = 10.0  # SIGTERM, then this long, then SIGKILL
STATE_DIR_MODE = 0o755  # PostgreSQL may run as another user and must reach its directory
ICEBERG_CATALOG_DB = "iceberg_catalog"


class Children:
    """Every process the benchmark starts, so that all of them are stopped on any exit."""

    def __init__(self) -> None:
        self.popens: list[subprocess.Popen[bytes]] = []
        self.workers: list[BaseProcess] = []

    def popen(self, argv: list[str], log: IO[bytes], env: dict[str, str] | None = None
              ) -> subprocess.Popen[bytes]:
        # A session of its own: Ctrl-C reaches only us, and we stop the child in order.
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
        self.popens.append(p)
        return p

    @staticmethod
    def stop_popen(p: subprocess.Popen[bytes]) -> None:
        if p.poll() is not None:
            return
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(STOP_GRACE_S)

    def stop_workers(self) -> None:
        for w in self.workers:
            if w.is_alive():
                w.terminate()
        for w in self.workers:
            w.join(STOP_GRACE_S)
            if w.is_alive():
                w.kill()
                w.join(STOP_GRACE_S)
        self.workers.clear()

    def stop_all(self) -> None:
        self.stop_workers()
        for p in reversed(self.popens):
            try:
                self.stop_popen(p)
            except OSError:
                pass
        self.popens.clear()


@contextmanager
def scratch_dir(prefix: str, keep: bool = False) -> Iterator[Path]:
    """A temporary directory the database server can use; removed afterwards unless
    ``keep`` (then its path is printed, for the logs)."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(tmp, STATE_DIR_MODE)
    try:
        yield tmp
    finally:
        if keep:
            say(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def local_stack(directory: Path, **kwargs: Any) -> Iterator[LocalStack]:
    """A LocalStack in ``directory`` (nothing started yet); every process it started is
    stopped on the way out, Ctrl-C and SIGTERM (see ``sigterm_as_interrupt``) included."""
    stack = LocalStack(directory, TMS_HOME, **kwargs)
    try:
        yield stack
    finally:
        stack.stop()


def iceberg_catalog(stack: LocalStack, name: str, warehouse: Path | None = None
                    ) -> tuple[Any, dict[str, str]]:
    """A SQL Iceberg catalog in a database of the stack's PostgreSQL, and its properties.
    The catalog is also created in TMS (``catalogs/{name}``, the warehouse its allowed
    location), so tables made in it register as ``catalog=name``."""
    assert stack.postgres is not None, "start the stack's servers first"
    dsn = stack.postgres.create_database(ICEBERG_CATALOG_DB)
    where = warehouse or stack.state_dir / "warehouse"
    where.mkdir(parents=True, exist_ok=True)
    props = iceberg_data.sql_catalog_properties(dsn, where.as_uri())
    create_catalog(stack.database_url, CatalogSpec(
        name, CatalogType.SQL, properties={k: v for k, v in props.items() if k != "type"},
        allowed_locations=(str(where),)))
    return iceberg_data.load_catalog(name, props), props


CONSTANT_CATALOG = "const"
CONSTANT_ROOT = "/tms-constant"  # nothing is read or written there: the plugin reads nothing


def constant_catalog(database_url: str, catalog_id: str = CONSTANT_CATALOG) -> str:
    """The catalog the test plugin's ``constant`` tables are registered in; its id."""
    create_catalog(database_url, CatalogSpec(catalog_id, CatalogType.HADOOP,
                                             allowed_locations=(CONSTANT_ROOT,)))
    return catalog_id


def hudi_catalog(database_url: str, root: Path, names: list[str],
                 catalog_id: str = "files") -> str:
    """A file-system catalog allowing ``root`` and, under it, one directory per name that
    holds a Hudi table as far as registration looks (``.hoodie/hoodie.properties``): tables
    to register cheaply when what they hold does not matter. Returns the catalog id."""
    for name in names:
        meta = root / name / ".hoodie"
        meta.mkdir(parents=True, exist_ok=True)
        (meta / "hoodie.properties").write_text(f"hoodie.table.name={name}\n")
    create_catalog(database_url, CatalogSpec(catalog_id, CatalogType.HADOOP,
                                             allowed_locations=(str(root),)))
    return catalog_id


def create_catalog(database_url: str, spec: CatalogSpec) -> None:
    """Create a catalog in TMS's own database (what an operator's CreateCatalog does);
    nothing when one of that id exists."""
    store = PostgresStore(database_url, min_size=1, max_size=1)
    try:
        if store.catalog_get(spec.catalog_id) is None:
            store.catalog_create(spec)
    finally:
        store.close()


def stub_for(stack: LocalStack) -> tms_pb2_grpc.TableManagementServiceStub:
    return tms_pb2_grpc.TableManagementServiceStub(grpc.insecure_channel(stack.api_address))
