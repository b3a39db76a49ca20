"""The pyiceberg example on a real Iceberg table: TMS records each append's snapshot id."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO
from tests.helpers import sql_catalog
from tests.integration.conftest import Api
from tms.local import iceberg_data
from tms.local.postgres import LocalPostgres
from tms_client import CommitNotifier, TmsClient

pytestmark = pytest.mark.integration

EXAMPLES = REPO / "libs" / "tms_client" / "examples"
FLUSH_TIMEOUT_S = 15.0


def load_example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"tms_client_example_{name}",
                                                  EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pyiceberg_append_notifies_the_snapshot(api: Api, pg_server: LocalPostgres,
                                                tmp_path: Path) -> None:
    example = load_example("pyiceberg_append")
    dsn = pg_server.create_database(f"ice_{tmp_path.name.lower()}"[:60])
    lake = sql_catalog(api.store, dsn, tmp_path / "warehouse", "lake")
    table = lake.table("demo", "events")
    client = TmsClient(api.address)
    client.register_table("demo.events", lake.pb("demo", "events"))
    notifier = CommitNotifier(client)
    ids = [example.append_and_notify(table, iceberg_data.batch(i * 10, 10), notifier,
                                     "demo.events") for i in range(3)]
    assert notifier.flush(FLUSH_TIMEOUT_S) and notifier.stats().sent == 3
    registered = client.get_table("demo.events")
    assert registered.commit_count == 3 and registered.last_commit_id == str(ids[-1])
    assert [s.snapshot_id for s in table.refresh().metadata.snapshots] == ids
    notifier.close(FLUSH_TIMEOUT_S)

