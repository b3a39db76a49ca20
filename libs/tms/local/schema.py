"""The current schema in one file, ``tms/storage/sql/schema.sql``, generated from the migrations:
a developer's tool (it starts a throw-away PostgreSQL), kept with the other local tools.

The migrations are the source of truth, but reading eight of them in order to learn what a
table looks like today is slow, so ``schema.sql`` holds what they produce, as ``pg_dump``
prints it. It is never applied; ``tests/integration/test_schema.py`` fails when it drifts
from the migrations. After changing a migration, regenerate it with::

    python -m tms.local.schema --write

which migrates a fresh database on a throw-away local PostgreSQL (loopback, ephemeral port,
stopped at the end) and rewrites the file.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from tms.generated import generator_main
from tms.local.postgres import LocalPostgres, pg_bin
from tms.storage.migrate import migrate

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "storage" / "sql" / "schema.sql"
REGENERATE_CMD = "python -m tms.local.schema --write"
HEADER = (
    "-- GENERATED FILE, do not edit by hand: the TMS schema as the migrations in\n"
    "-- sql/migrations/ produce it (pg_dump --schema-only, normalised).\n"
    f"-- Regenerate with: {REGENERATE_CMD}\n"
)

# Lines that vary with the pg_dump version or from run to run, not with the schema: session
# settings, the search_path reset, the \restrict key (random per dump) and the version banner.
_NOISE_RE = re.compile(
    r"^(SET [a-z_]+ = .*;"
    r"|SELECT pg_catalog\.set_config\(.*\);"
    r"|\\(un)?restrict\b.*"
    r"|-- Dumped (from|by) .*)$"
)
_DOLLAR_TAG_RE = re.compile(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$")


def normalise(dump: str) -> str:
    """Drop the volatile lines of a ``pg_dump`` and collapse runs of blank lines.

    Only lines outside dollar-quoted function bodies are touched: a body is the migration's
    own text, and a line such as ``SET x = 0;`` in it is code, not a session setting.
    """
    out: list[str] = []
    open_tag: str | None = None
    for line in dump.splitlines():
        in_body = open_tag is not None
        for m in _DOLLAR_TAG_RE.finditer(line):
            if open_tag is None:
                open_tag = m.group(0)
            elif m.group(0) == open_tag:
                open_tag = None
        if not in_body:
            line = line.rstrip()
            if _NOISE_RE.match(line) or (not line and (not out or not out[-1])):
                continue
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n"


def generate(dsn: str) -> str:
    """Migrate the EMPTY database at ``dsn`` and return the text ``schema.sql`` should hold.

    ``pg_dump`` comes from the server's own installation, so it is never older than the
    server. It connects over TCP with the role named in the DSN, so it needs no OS user.
    """
    migrate(dsn)
    res = subprocess.run(
        [str(pg_bin() / "pg_dump"), "--schema-only", "--no-owner", "--no-privileges",
         "--no-comments", "--exclude-table-data=public.tms_schema_migrations",
         f"--dbname={dsn}"],
        capture_output=True, text=True,
    )
    if res.returncode != 0:
        raise RuntimeError(f"pg_dump failed: {res.stderr.strip()}")
    return HEADER + "\n" + normalise(res.stdout)


def generate_on_local_postgres() -> str:
    """Generate the schema on a throw-away local server, stopped and removed even on error."""
    # Not a private temp dir: the server may run as the postgres system user (see
    # tms.local.postgres), which must be able to reach its directory.
    root = Path(tempfile.mkdtemp(prefix="tms-schema-"))
    root.chmod(0o755)
    server = LocalPostgres(root / "pg")
    try:
        server.start()
        return generate(server.create_database("tms_schema"))
    finally:
        server.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    return generator_main("tms.local.schema", SCHEMA_PATH, generate_on_local_postgres, argv)


if __name__ == "__main__":
    raise SystemExit(main())
