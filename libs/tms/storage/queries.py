"""Loads the named queries of ``sql/queries/<entity>.sql`` (blocks introduced by
``-- name: <name>``).

One file per entity, and every query's name starts with its entity (``table_get`` lives in
``tables.sql``), so a reader finds a query from the method that runs it and back.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_NAME_RE = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
QUERIES_DIR = "sql/queries"


def parse_queries(text: str) -> dict[str, str]:
    """Split a queries file into {name: sql}; duplicate names are an error, not a silent win."""
    out: dict[str, str] = {}
    matches = list(_NAME_RE.finditer(text))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[m.end():end].strip()
        if m.group(1) in out:
            raise ValueError(f"duplicate query name {m.group(1)!r}")
        out[m.group(1)] = body.rstrip(";").strip()
    return out


def entity_of(filename: str) -> str:
    """``operations.sql`` -> ``operation``: the prefix every query of the file carries."""
    stem = filename.removesuffix(".sql")
    return stem[:-1] if stem.endswith("s") and stem != "commits" else stem


def check_names(filename: str, names: list[str]) -> None:
    """Every query of an entity's file is named after the entity."""
    prefix = entity_of(filename) + "_"
    wrong = [n for n in names if not n.startswith(prefix)]
    if wrong:
        raise ValueError(f"{filename}: query names must start with {prefix!r}: {wrong}")


@cache
def queries() -> dict[str, str]:
    out: dict[str, str] = {}
    folder = resources.files("tms.storage").joinpath(QUERIES_DIR)
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".sql"):
            continue
        found = parse_queries(entry.read_text())
        check_names(entry.name, list(found))
        clash = set(found) & set(out)
        if clash:
            raise ValueError(f"{entry.name}: query names defined twice: {sorted(clash)}")
        out.update(found)
    return out


def q(name: str) -> str:
    """The SQL text of the named query; KeyError names the missing query."""
    try:
        return queries()[name]
    except KeyError:
        raise KeyError(f"no query named {name!r} in {QUERIES_DIR}/") from None
