"""Versioned schema migrations, applied under a Postgres advisory lock.

Every ``sql/migrations/NNNN_name.sql`` runs once, in order, in its own transaction, and is
recorded in ``tms_schema_migrations``. Several processes may start at once: the advisory lock
makes the others wait, then find nothing left to do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import psycopg

from tms.storage.queries import q

MIGRATION_LOCK_KEY = 0x746D735F6D6967  # "tms_mig"
_FILE_RE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations() -> list[Migration]:
    out = []
    for entry in resources.files("tms.storage").joinpath("sql/migrations").iterdir():
        m = _FILE_RE.match(entry.name)
        if m:
            out.append(Migration(int(m.group(1)), m.group(2), entry.read_text()))
    out.sort(key=lambda mig: mig.version)
    versions = [mig.version for mig in out]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration versions: {versions}")
    return out


def migrate(dsn: str, up_to: int | None = None) -> list[Migration]:
    """Apply pending migrations (those numbered at most ``up_to`` when given: tests of a
    migration start from the schema before it); return the ones applied (empty when
    already current)."""
    applied: list[Migration] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(q("meta_advisory_lock"), {"key": MIGRATION_LOCK_KEY})
        try:
            conn.execute(q("meta_create_migrations_table"))
            done = {r[0] for r in conn.execute(q("meta_applied_migrations"))}
            for mig in load_migrations():
                if mig.version in done or (up_to is not None and mig.version > up_to):
                    continue
                with conn.transaction():
                    conn.execute(mig.sql.encode())
                    conn.execute(q("meta_record_migration"),
                                 {"version": mig.version, "name": mig.name})
                applied.append(mig)
        finally:
            conn.execute(q("meta_advisory_unlock"), {"key": MIGRATION_LOCK_KEY})
    return applied
