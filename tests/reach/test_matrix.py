"""The reach matrix end to end: catalog type (sql, rest, hive, glue, hadoop) x storage (a local
directory, S3 on moto) x side (scheduler inspection, Spark job), on real servers on loopback and
the real tms-api, tms-scheduler and tms-executor processes.

Each cell: the catalog is created through the API (secrets by reference), a table is written
by pyiceberg through the real catalog (6 commits, 6 small files), registered, a commit is
notified; the scheduler inspects it through the catalog and queues a compaction; the executor
runs it with spark-submit. Afterwards the rows and a checksum over them are unchanged and the
table has fewer files.

Glue's Spark side needs Iceberg's AWS bundle (AWS SDK v2), which no registry reachable here
carries: its cells run everything up to the jar and check the operation fails at once,
non-retryable, naming the jar.

Set ``TMS_REACH_FIGURES=<file>`` to collect one line of figures per cell (docs/reach.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import stub_for, wait_for
from tests.integration.reach_support import Servers, iter_cells, make_cell, start_servers
from tms.local.stack import LocalStack
from tms.v1 import tms_pb2

pytestmark = pytest.mark.e2e

COMMITS = 6
MIN_SMALL_FILES = "3"
FIGURES_ENV = "TMS_REACH_FIGURES"
ICEBERG_DB = "reach_iceberg"
DONE = (tms_pb2.Operation.SUCCEEDED, tms_pb2.Operation.FAILED, tms_pb2.Operation.CANCELLED)


@dataclass
class Reach:
    stack: LocalStack
    servers: Servers
    iceberg_dsn: str


@pytest.fixture(scope="module")
def reach(tms_home: Path) -> Iterator[Reach]:
    """One stack and one set of catalog servers for every cell; the secrets' values are in the
    services' environment, the catalogs hold references to them."""
    root = Path(tempfile.mkdtemp(prefix="tms-reach-"))
    stack = LocalStack(root, tms_home)  # initdb runs as postgres: the stack chmods root
    try:
        with ExitStack() as servers_stack, pytest.MonkeyPatch.context() as mp:
            stack.start_servers()
            assert stack.postgres is not None
            dsn = stack.postgres.create_database(ICEBERG_DB)
            servers = start_servers(servers_stack, root / "servers", dsn, tms_home / "jars")
            for key, value in servers.environ().items():
                mp.setenv(key, value)
            stack.start_api()
            stack.start_scheduler()
            stack.start_executor()
            yield Reach(stack, servers, dsn)
    finally:
        stack.stop()
        shutil.rmtree(root, ignore_errors=True)


def checksum(table: Any) -> tuple[int, str]:
    """(rows, sha256 over the rows in id order): what a compaction must not change."""
    rows = table.refresh().scan().to_arrow().sort_by("id").to_pylist()
    blob = json.dumps(rows, default=str, sort_keys=True).encode()
    return len(rows), hashlib.sha256(blob).hexdigest()


def data_files(table: Any) -> int:
    snap = table.refresh().current_snapshot()
    summary = snap.summary.additional_properties if snap and snap.summary else {}
    return int(summary.get("total-data-files", 0))


def compaction(stub: Any, table_id: str) -> tms_pb2.Operation | None:
    ops = stub.ListOperations(tms_pb2.ListOperationsRequest(parent=f"tables/{table_id}"),
                              timeout=10).operations
    found = [o for o in ops if o.action == "compaction"]
    return found[0] if found else None


def record(cell: str, figures: dict[str, Any]) -> None:
    print(f"reach {cell}: {figures}")
    path = os.environ.get(FIGURES_ENV)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"cell": cell, **figures}) + "\n")


@pytest.mark.parametrize("ctype,storage", list(iter_cells()))
def test_cell(reach: Reach, ctype: str, storage: str) -> None:
    cell = make_cell(reach.servers, ctype, storage, reach.iceberg_dsn)
    stub = stub_for(reach.stack)
    catalog_id, namespace = f"{ctype}_{storage}", f"m_{storage}"
    stub.CreateCatalog(tms_pb2.CreateCatalogRequest(catalog_id=catalog_id, catalog=(
        tms_pb2.Catalog(type=ctype, properties=cell.properties, secrets=cell.secrets,
                        storage_options=cell.storage_options,
                        allowed_locations=[cell.warehouse]))), timeout=30)
    table = cell.write(namespace, "events", commits=COMMITS)
    before_files, before = data_files(table), checksum(table)
    assert before_files == COMMITS

    table_id = f"{catalog_id}_events"
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=tms_pb2.Table(
        format="iceberg", catalog=catalog_id, namespace=namespace, table_name="events",
        policy={"compaction.min-small-files": MIN_SMALL_FILES})), timeout=30)
    stub.NotifyCommit(tms_pb2.NotifyCommitRequest(
        table=f"tables/{table_id}", commit_id=str(table.current_snapshot().snapshot_id)),
        timeout=10)

    # the scheduler's side: it opened the catalog and read the table to decide
    queued = wait_for(lambda: compaction(stub, table_id), "the scheduler to queue a compaction")
    assert f"{COMMITS} of {COMMITS} data files" in queued.reason, queued.reason
    done = wait_for(lambda: (op := compaction(stub, table_id)) and op.state in DONE and op,
                    f"the {cell.ctype}/{cell.storage} compaction to end")
    seconds = (done.end_time.ToDatetime() - done.start_time.ToDatetime()).total_seconds()

    if ctype == "glue":  # the Spark side cannot run here: everything up to the jar did
        assert done.state == tms_pb2.Operation.FAILED, done
        assert "iceberg-aws-bundle" in done.error, done.error
        assert done.attempts_used == 1 and len(done.attempts) == 1, done
        record(f"{ctype}-{storage}", {"state": "FAILED (jar missing)", "seconds": round(seconds, 1),
                "files_before": before_files, "files_after": data_files(table)})
        assert checksum(table) == before
        return

    assert done.state == tms_pb2.Operation.SUCCEEDED, (done.error, done.log_tail[-2000:])
    after_files = data_files(table)
    assert after_files < before_files
    assert checksum(table) == before
    assert done.result["rewritten_data_files_count"] == COMMITS
    record(f"{ctype}-{storage}", {"state": "SUCCEEDED", "seconds": round(seconds, 1),
                                  "files_before": before_files, "files_after": after_files})
