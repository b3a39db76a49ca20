"""Discovered tables' ids and the include/exclude patterns (pure functions)."""

from __future__ import annotations

import re

import pytest

from tms.formats.base import DiscoveredTable
from tms.scheduler.discovery import wanted
from tms.scheduler.discovery_ids import TABLE_ID_MAX_LEN, table_id_candidates

TABLE_ID_RE = re.compile(r"^[a-z][a-z0-9_.-]{0,62}$")


def test_plain_names_keep_a_readable_id_with_a_hashed_fallback() -> None:
    plain, hashed = table_id_candidates("lake", "sales", "orders")
    assert plain == "lake.sales.orders"
    assert re.fullmatch(r"lake\.sales\.orders-[0-9a-f]{10}", hashed)


@pytest.mark.parametrize(("namespace", "name"), [
    ("Sales", "Orders"), ("ventes", "café"), ("日本", "表"), ("a--b", "c__d"),
    ("ns", "x" * 300), ("", ".."), ("ns", "-lead"), ("ns", "a b\tc\x00d")])
def test_other_names_get_one_valid_hashed_id(namespace: str, name: str) -> None:
    ids = table_id_candidates("lake", namespace, name)
    assert len(ids) == 1
    (only,) = ids
    assert TABLE_ID_RE.fullmatch(only) and len(only) <= TABLE_ID_MAX_LEN
    assert ".." not in only and "--" not in only[:-11]


def test_ids_are_deterministic_and_distinct() -> None:
    assert table_id_candidates("lake", "Sales", "x") == table_id_candidates("lake", "Sales", "x")
    assert table_id_candidates("lake", "Sales", "x") != table_id_candidates("lake", "SALES", "x")
    # same names under two base paths (Hudi) are two tables
    assert (table_id_candidates("f", "a", "t", "/one/a/t")[-1]
            != table_id_candidates("f", "a", "t", "/two/a/t")[-1])
    # a long catalog id still leaves room for the hash
    long_id = table_id_candidates("c" * 63, "ns", "t")
    assert all(TABLE_ID_RE.fullmatch(i) for i in long_id) and len(long_id) == 1


def test_patterns_are_case_sensitive_globs_over_namespace_and_table() -> None:
    t = DiscoveredTable("sales.eu", "Orders")
    assert wanted(t, (), ())
    assert wanted(t, ("sales.*",), ())
    assert not wanted(t, ("sales.*",), ("*.Orders",))
    assert not wanted(t, ("SALES.*",), ())
    assert wanted(DiscoveredTable("", "t"), ("t",), ())
