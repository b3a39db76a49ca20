"""docs/architecture.md against the code it describes: the migration range it names, the
storage roles it lists and the tables it lists are the ones that exist (the doc drifted before:
"0001–0010" against 0014 migrations, 7 roles of 9)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Protocol

from tms.storage import roles

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "architecture.md").read_text()
MIGRATIONS = REPO / "libs" / "tms" / "storage" / "sql" / "migrations"
SCHEMA = REPO / "libs" / "tms" / "storage" / "sql" / "schema.sql"
# Protocols in roles.py that group roles for a service rather than being one
GROUPS = {"ApiStore", "SchedulerStore"}


def _section(title: str) -> str:
    start = DOC.index(title)
    end = DOC.find("\n## ", start + 1)
    return DOC[start:end if end != -1 else len(DOC)]


def test_the_migration_range_is_the_migrations_on_disk() -> None:
    versions = sorted(int(p.name[:4]) for p in MIGRATIONS.glob("[0-9][0-9][0-9][0-9]_*.sql"))
    named = re.search(r"migrations/`\s*\((\d{4})[–-](\d{4})\)", DOC)
    assert named is not None, "architecture.md no longer names the migration range"
    assert (int(named[1]), int(named[2])) == (versions[0], versions[-1])


def test_every_storage_role_is_listed_and_no_other() -> None:
    in_code = {name for name, obj in vars(roles).items()
               if inspect.isclass(obj) and name.endswith("Store") and Protocol in obj.__mro__
               and obj is not Protocol and name not in GROUPS}
    table = _section("## Where things live").split("| role |", 1)[1].split("\n\n", 1)[0]
    in_doc = set(re.findall(r"^\| `(\w+Store)` \|", table, re.MULTILINE))
    assert in_doc == in_code
    for group in GROUPS:
        assert f"`{group}`" in DOC


def test_every_table_of_the_schema_is_listed() -> None:
    in_schema = set(re.findall(r"CREATE TABLE public\.(\w+)", SCHEMA.read_text()))
    listed = set(re.findall(r"^\| `(tms_\w+)` \|", _section("## Tables"), re.MULTILINE))
    assert listed == in_schema
