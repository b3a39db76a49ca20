"""The intake's two statements: a group is first written as if every event were new (a plain
INSERT), and a group holding a stored event falls back to the statement that skips it. Both
must answer and store exactly what the one ON CONFLICT statement did."""

from __future__ import annotations

import random
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest

from tests.helpers import store_catalog
from tms.domain import CommitEvent, TableSpec
from tms.storage.postgres import PostgresStore
from tms.storage.postgres import tables as intake

pytestmark = pytest.mark.integration


def _tables(store: PostgresStore, *names: str) -> None:
    store_catalog(store, "c")
    for name in names:
        assert store.table_register(TableSpec(table_id=name, format="iceberg", catalog="c",
                                              namespace="ns", table_name=name)) is not None


@pytest.fixture
def statements(store: PostgresStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the intake statements the store runs, in order (failed ones included)."""
    ran: list[str] = []
    tuples = store._tuples

    def spy(name: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        ran.append(name)
        return tuples(name, params)

    monkeypatch.setattr(store, "_tuples", spy)
    yield ran


def _stored(dsn: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(  # type: ignore[return-value]
            "SELECT t.table_id, e.commit_id FROM tms_commit_events e"
            " JOIN tms_tables t ON t.id = e.table_pk ORDER BY e.seq").fetchall()


def test_a_stored_event_in_a_group_of_new_ones(store: PostgresStore, db_dsn: str,
                                               statements: list[str]) -> None:
    _tables(store, "a", "b")
    assert store.commits_notify([CommitEvent("a", "old")]) == [True]
    assert statements == ["commits_notify_new"]
    group = [CommitEvent("a", "n1"), CommitEvent("a", "old", traceparent="00-x-y-01"),
             CommitEvent("b", "n1"), CommitEvent("zz", "x"), CommitEvent("a", "n2")]
    assert store.commits_notify(group) == [True, False, True, None, True]
    # the plain INSERT failed on the stored event and wrote nothing: the fallback wrote the rest
    assert statements[1:] == ["commits_notify_new", "commits_notify"]
    assert _stored(db_dsn) == [("a", "old"), ("a", "n1"), ("b", "n1"), ("a", "n2")]
    a = store.table_get("a")
    assert a is not None and (a.stats.commit_count, a.stats.last_commit_id) == (3, "n2")


def test_after_a_replay_the_next_groups_skip_the_plain_insert(
        store: PostgresStore, statements: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intake, "REPLAY_HOLD_GROUPS", 2)
    _tables(store, "h")
    store.commits_notify([CommitEvent("h", "c0")])
    assert store.commits_notify([CommitEvent("h", "c0")]) == [False]
    for k in (1, 2, 3):
        assert store.commits_notify([CommitEvent("h", f"c{k}")]) == [True]
    assert statements == ["commits_notify_new", "commits_notify_new", "commits_notify",
                          "commits_notify", "commits_notify", "commits_notify_new"]


def test_unknown_tables_only_and_mixed_through_the_plain_insert(
        store: PostgresStore, statements: list[str]) -> None:
    _tables(store, "k")
    assert store.commits_notify([CommitEvent("nope", "c1")]) == [None]
    assert store.commits_notify([CommitEvent("k", "c1"), CommitEvent("nope", "c1"),
                                 CommitEvent("k", "c1")]) == [True, None, False]
    assert statements == ["commits_notify_new", "commits_notify_new"]


def test_racing_writers_of_the_same_commits_store_each_once(store: PostgresStore,
                                                            db_dsn: str) -> None:
    """Writers sending the same commits at once: a plain INSERT waits for the other writer's
    row, fails on the key, and falls back; every commit is new to exactly one writer."""
    names = [f"r{i}" for i in range(4)]
    _tables(store, *names)
    events = [CommitEvent(n, f"c{k}") for k in range(25) for n in names]

    def send(seed: int) -> list[bool | None]:
        order = list(range(len(events)))
        random.Random(seed).shuffle(order)
        out = store.commits_notify([events[i] for i in order])
        back: list[bool | None] = [None] * len(events)
        for i, o in zip(order, out, strict=True):
            back[i] = o
        return back

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(send, range(12)))
    assert all(sum(1 for r in results if r[i]) == 1 for i in range(len(events)))
    assert all(r[i] is not None for r in results for i in range(len(events)))
    assert sorted(_stored(db_dsn)) == sorted((e.table_id, e.commit_id) for e in events)
