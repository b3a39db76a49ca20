"""Named queries: the parser, and that every query the code asks for exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tms.storage.queries import check_names, entity_of, parse_queries, q, queries

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
        used |= set(re.findall(r"""self\._(?:one|all|write|fenced|view_of)\(\s*"([a-z_]+)\"""",
                               text))
        used |= {f"retention_prune_{w}" for w in re.findall(
            r'PRUNABLE = \(([^)]*)\)', text) for w in re.findall(r'"([a-z_]+)"', w)}
    assert used, "found no query uses: the scan is broken"
    assert used <= set(queries()), used - set(queries())


def test_every_query_is_used_by_code() -> None:
    """A query nothing runs is dead weight a reader must still understand."""
    text = "\n".join(p.read_text() for p in LIBS.rglob("*.py"))
    unused = [name for name in queries() if f'"{name}"' not in text
              and not name.startswith("retention_prune_")]
    assert not unused, unused


def test_query_names_start_with_their_entity() -> None:
    assert entity_of("operations.sql") == "operation"
    assert entity_of("commits.sql") == "commits"
    assert entity_of("meta.sql") == "meta"
    check_names("tables.sql", ["table_get", "table_list"])
    with pytest.raises(ValueError, match="table_"):
        check_names("tables.sql", ["table_get", "get_operation"])


def test_queries_are_split_by_entity() -> None:
    folder = LIBS / "tms" / "storage" / "sql" / "queries"
    files = sorted(f.name for f in folder.glob("*.sql"))
    assert {"tables.sql", "commits.sql", "decisions.sql", "operations.sql", "attempts.sql",
            "queues.sql", "retention.sql"} <= set(files)
    assert not (LIBS / "tms" / "storage" / "sql" / "queries.sql").exists()
