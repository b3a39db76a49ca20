"""A writer configuration whose ZooKeeper lock key is not the one the writers take (Hudi's
writers lock under hoodie.table.name unless they set a key) is warned about: in the metrics,
in every decision's reason (what ExplainTable shows), and in the log."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_hudi_fixture_decisions import FIXTURES, LOW, decide, props_of, unzip
from tms.formats.hudi.plugin import LOCK_KEY_WARNING
from tms.formats.hudi.writer import LOCK_KEY, lock_key_warning

FIXTURE = "quickstart_trips_table__mor__avro__v6_trips_8i1u.zip"
ZK = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
      "hoodie.write.lock.provider":
          "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider",
      "hoodie.write.lock.zookeeper.url": "zk1", "hoodie.write.lock.zookeeper.base_path": "/l",
      "hoodie.cleaner.commits.retained": "1"}


def test_the_warning_names_both_keys() -> None:
    assert lock_key_warning(None, "trips") == ""
    assert lock_key_warning({}, "trips") == ""
    assert lock_key_warning({LOCK_KEY: "trips"}, "trips") == ""
    assert lock_key_warning({LOCK_KEY: "other"}, "") == ""  # the table's name unknown
    warning = lock_key_warning({LOCK_KEY: "trips_lock"}, "trips")
    assert "'trips_lock'" in warning and "'trips'" in warning and LOCK_KEY in warning


@pytest.fixture
def table(tmp_path: Path) -> Path:
    if not (FIXTURES / FIXTURE).is_file():
        pytest.skip(f"Hudi fixture {FIXTURE} not found")
    return unzip(FIXTURE, tmp_path)


def test_a_lock_key_other_than_the_tables_is_warned_about(
        table: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = props_of(table)["hoodie.table.name"]
    got, metrics = decide(table, LOW, {**ZK, LOCK_KEY: f"{name}_other"}, monkeypatch)
    warning = metrics[LOCK_KEY_WARNING]
    assert f"{name}_other" in warning and repr(name) in warning
    assert all(f"(warning: {warning})" in d.reason for d in got.values())
    got, metrics = decide(table, LOW, {**ZK, LOCK_KEY: name}, monkeypatch)
    assert LOCK_KEY_WARNING not in metrics
    assert not any("warning:" in d.reason for d in got.values())
