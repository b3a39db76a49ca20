"""Loads the named queries of ``sql/queries.sql`` (blocks introduced by ``-- name: <name>``)."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_NAME_RE = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


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


@cache
def queries() -> dict[str, str]:
    text = resources.files("tms.storage").joinpath("sql/queries.sql").read_text()
    return parse_queries(text)


def q(name: str) -> str:
    """The SQL text of the named query; KeyError names the missing query."""
    try:
        return queries()[name]
    except KeyError:
        raise KeyError(f"no query named {name!r} in queries.sql") from None
