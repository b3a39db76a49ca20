"""A compaction is not scheduled on a table of version 6 (Hudi 0.x's timeline) while an
earlier write is pending: Hudi 0.14 throws there ("Earliest write inflight instant time must be
later than compaction time"). Decided on a real fixture table, with and without a pending
delta commit after its last completed one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.unit.test_hudi_fixture_decisions import FIXTURES, LOW, decide, unzip

FIXTURE = "quickstart_trips_table__mor__avro__v6_trips_8i1u.zip"
WRITER = {"hoodie.cleaner.commits.retained": "1"}


@pytest.fixture
def table(tmp_path: Path) -> Path:
    if not (FIXTURES / FIXTURE).is_file():
        pytest.skip(f"Hudi fixture {FIXTURE} not found")
    base = unzip(FIXTURE, tmp_path)
    props = (base / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.table.version=6" in props
    return base


def test_a_v6_table_compacts_when_no_write_is_pending(table: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    got, _ = decide(table, LOW, WRITER, monkeypatch)
    assert got["compaction"].should_run, got["compaction"].reason


@pytest.mark.parametrize("state", ["requested", "inflight"])
def test_a_pending_write_holds_the_compaction_of_a_v6_table(
        table: Path, state: str, monkeypatch: pytest.MonkeyPatch) -> None:
    hoodie = table / ".hoodie"
    instant = "20250331030700123"
    (hoodie / f"{instant}.deltacommit.requested").write_bytes(b"")
    if state == "inflight":
        shutil.copy(hoodie / "20250331030645735.deltacommit.inflight",
                    hoodie / f"{instant}.deltacommit.inflight")
    got, metrics = decide(table, LOW, WRITER, monkeypatch)
    decision = got["compaction"]
    assert not decision.should_run
    assert f"deltacommit {instant} is {state.upper()}" in decision.reason
    assert "version 6" in decision.reason and "Hudi refuses" in decision.reason
    assert metrics["table_version"] == 6
