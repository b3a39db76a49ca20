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
from tms.storage.roles import DuplicateTable

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
