"""The location overlap check finds its candidates through indexes (migration 0013); these
tests hold it to the plain definition, computed here by brute force, on tricky locations:
sibling names that share a prefix ("t1" / "t10"), trailing and doubled slashes, characters
sorting right around '/' ('.', '0'), LIKE wildcards, non-ASCII."""

from __future__ import annotations

import random

import pytest

from tests.helpers import store_catalog
from tms.domain import TableSpec
from tms.storage.postgres import PostgresStore
from tms.storage.roles import DuplicateTable, TableListParams

pytestmark = pytest.mark.integration

SEGMENTS = ["t", "t1", "t10", "t1.", "t1-", "t/", "x%", "x_", "é", "t0", "0", ".", "日本"]
ROOTS = ["s3://lake", "s3://lake/", "/w", "file:///w"]


def _overlaps(a: str, b: str) -> bool:
    """The definition: equal, or one inside the other on a whole path segment."""
    return (a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/"))


def _locations(rng: random.Random, n: int, min_depth: int) -> list[str]:
    out: set[str] = set()
    while len(out) < n:
        out.add(rng.choice(ROOTS) + "/" + "/".join(
            rng.choice(SEGMENTS) for _ in range(rng.randint(min_depth, 3))))
    return rng.sample(sorted(out), n)


def test_set_location_agrees_with_the_definition(store: PostgresStore) -> None:
    store_catalog(store, "c")
    rng = random.Random(15)
    registered: dict[str, str] = {}  # location -> table id
    for i, loc in enumerate(_locations(rng, 80, 2)):
        clash = [t for other, t in registered.items() if _overlaps(loc, other)]
        try:
            view = store.table_register(TableSpec(f"r{i}", "iceberg", "c", "ns", f"r{i}"), loc)
        except DuplicateTable as e:
            assert clash, (loc, e.table_id)
            assert e.what == "location" and _overlaps(loc, _location_of(registered, e.table_id))
            continue
        assert view is not None and not clash, (loc, clash)
        registered[loc] = f"r{i}"
    assert len(registered) >= 10  # the sample holds non-overlapping tables to move around
    mover = store.table_register(TableSpec("m", "iceberg", "c", "ns", "m"), "")
    assert mover is not None
    for loc in _locations(random.Random(16), 120, 0):
        other = store.table_set_location(mover.table.pk, loc)
        expected = sorted(t for o, t in registered.items() if _overlaps(loc, o))
        if expected:
            assert other in expected, (loc, other, expected)
        else:
            assert other is None, (loc, other)


def _location_of(registered: dict[str, str], table_id: str) -> str:
    return next(loc for loc, t in registered.items() if t == table_id)


def test_prefix_siblings_and_wildcards_are_not_overlaps(store: PostgresStore) -> None:
    store_catalog(store, "c")
    assert store.table_register(TableSpec("a", "iceberg", "c", "ns", "a"), "s3://l/t1")
    for i, loc in enumerate(["s3://l/t10", "s3://l/t1.", "s3://l/t1-x", "s3://l/t0",
                             "s3://l/t%", "s3://l/t_"]):
        assert store.table_register(TableSpec(f"n{i}", "iceberg", "c", "ns", f"n{i}"), loc)
    for loc, owner in [("s3://l/t1/", "a"), ("s3://l/t1//d", "a"), ("s3://l", "a"),
                       ("s3://l/", "a"), ("s3://l/t%/x", "n4")]:
        with pytest.raises(DuplicateTable) as info:
            store.table_register(TableSpec("z", "iceberg", "c", "ns", "z"), loc)
        assert info.value.table_id == owner, loc  # the first by id when several


def _unplaced(store: PostgresStore, n: int, prefix: str) -> list[int]:
    """``n`` registered tables with no location yet (as before the scheduler's first look)."""
    out = []
    for i in range(n):
        view = store.table_register(TableSpec(f"{prefix}{i}", "iceberg", "c", "ns",
                                              f"{prefix}{i}"), "")
        assert view is not None
        out.append(view.table.pk)
    return out


def test_batch_set_locations_agrees_with_the_definition(store: PostgresStore) -> None:
    """One statement for a batch: each location refused when it overlaps a stored one or
    an earlier one of the batch, whatever became of that earlier one."""
    store_catalog(store, "c")
    registered: dict[str, str] = {}
    for i, loc in enumerate(_locations(random.Random(17), 40, 2)):
        if not any(_overlaps(loc, o) for o in registered):
            assert store.table_register(TableSpec(f"r{i}", "iceberg", "c", "ns", f"r{i}"), loc)
            registered[loc] = f"r{i}"
    pks = _unplaced(store, 60, "b")
    wanted = _locations(random.Random(18), 60, 0)
    clashes = store.table_set_locations(list(zip(pks, wanted, strict=True)))
    kinds = {"stored": 0, "earlier": 0}
    for i, (pk, loc) in enumerate(zip(pks, wanted, strict=True)):
        stored = [t for o, t in registered.items() if _overlaps(loc, o)]
        earlier = [f"b{j}" for j in range(i) if _overlaps(loc, wanted[j])]
        got = store.table_get(f"b{i}")
        assert got is not None
        if stored:
            assert clashes.get(pk) in stored, (loc, clashes.get(pk), stored)
            kinds["stored"] += 1
        elif earlier:
            assert clashes.get(pk) == earlier[0], (loc, clashes.get(pk), earlier)
            kinds["earlier"] += 1
        else:
            assert pk not in clashes and got.table.location == loc, (loc, clashes.get(pk))
        if pk in clashes:
            assert got.table.location == "", loc  # nothing stored for a refused one
    assert len(clashes) < len(pks) and min(kinds.values()) > 0, kinds  # every kind met


def test_batch_refuses_another_tenants_location_and_stores_the_rest(
        store: PostgresStore) -> None:
    store_catalog(store, "c")
    victim = store.table_register(TableSpec("victim", "iceberg", "c", "ns", "victim"),
                                  "s3://lake/tenant-a/orders")
    assert victim is not None
    first, inside, around, own, same = _unplaced(store, 5, "x")
    clashes = store.table_set_locations([
        (first, "s3://lake/tenant-b/t1"),
        (inside, "s3://lake/tenant-a/orders/data"),  # inside the victim's table
        (around, "s3://lake/tenant-a"),  # containing it
        (own, "s3://lake/tenant-b/t1/sub"),  # inside the batch's first
        (same, "s3://lake/tenant-a/orders"),  # the victim's own location
    ])
    assert clashes == {inside: "victim", around: "victim", own: "x0", same: "victim"}
    assert store.table_get("x0").table.location == "s3://lake/tenant-b/t1"  # type: ignore[union-attr]
    for refused in ("x1", "x2", "x3", "x4"):
        assert store.table_get(refused).table.location == ""  # type: ignore[union-attr]
    assert store.table_get("victim").table.location == "s3://lake/tenant-a/orders"  # type: ignore[union-attr]
    # a table moving within its own location is no clash with itself
    assert store.table_set_locations([(first, "s3://lake/tenant-b/t1")]) == {}
    assert store.table_set_locations([]) == {}


def test_batch_location_writes_and_registrations_at_once(store: PostgresStore) -> None:
    """Batches and registrations from many threads, all nesting in one another, behind the
    one location lock: exactly one location ends up stored."""
    from concurrent.futures import ThreadPoolExecutor

    store_catalog(store, "c")
    pks = _unplaced(store, 8, "w")

    def place(i: int) -> None:
        if i % 2:
            try:
                store.table_register(TableSpec(f"n{i}", "iceberg", "c", "ns", f"n{i}"),
                                     "/lake/w" + "/x" * i)
            except DuplicateTable:
                pass
        else:  # the batch's second always overlaps its first
            store.table_set_locations([(pks[i], "/lake/w" + "/x" * i),
                                       (pks[i + 1], "/lake/w" + "/x" * i + "/y")])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(place, range(7)))
    placed = [t for t in store.table_list(TableListParams(limit=100)) if t.table.location]
    assert len(placed) == 1, [(t.table.table_id, t.table.location) for t in placed]
