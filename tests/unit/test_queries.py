"""Named queries: the parser, and that every query the code asks for exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tms.storage.queries import parse_queries, q, queries

LIBS = Path(__file__).resolve().parents[2] / "libs"


def test_parse_splits_blocks_and_strips_semicolons() -> None:
    text = "-- name: a\nSELECT 1;\n\n-- name: b\n-- a comment\nSELECT 2;\n"
    assert parse_queries(text) == {"a": "SELECT 1", "b": "-- a comment\nSELECT 2"}


def test_duplicate_names_are_an_error() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        parse_queries("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n")


def test_unknown_query_names_itself() -> None:
    with pytest.raises(KeyError, match="no_such_query"):
        q("no_such_query")


def test_every_query_used_in_code_exists() -> None:
    used = set()
    for path in LIBS.rglob("*.py"):
        text = path.read_text()
        used |= set(re.findall(r"""\bq\(\s*"([a-z_]+)"\s*\)""", text))
        used |= set(re.findall(r"""self\._(?:one|all|fenced)\(\s*"([a-z_]+)\"""", text))
    assert used, "found no query uses: the scan is broken"
    assert used <= set(queries()), used - set(queries())
