"""A throw-away PostgreSQL server on 127.0.0.1, run from Debian's server binaries.

initdb and pg_ctl refuse to run as root, so when we are root the server runs as the
``postgres`` system user and its directory is handed to that user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tms.local.ports import free_port

PG_BIN_DIRS = tuple(f"/usr/lib/postgresql/{v}/bin" for v in (15, 16, 17))
PG_START_TIMEOUT_S = 30
PG_SUPERUSER = "postgres"


def pg_bin() -> Path:
    for d in PG_BIN_DIRS:
        if (Path(d) / "initdb").exists():
            return Path(d)
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise RuntimeError("PostgreSQL server binaries not found; run scripts/setup")


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", PG_SUPERUSER, "--", *argv]
    return argv


@dataclass
class LocalPostgres:
    """One PostgreSQL cluster in ``root`` listening on 127.0.0.1:``port``."""

    root: Path
    port: int = field(default_factory=free_port)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log_file(self) -> Path:
        return self.root / "postgres.log"

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://{PG_SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def _chown(self) -> None:
        if os.geteuid() == 0:
            pw = pwd.getpwnam(PG_SUPERUSER)
            for p in [self.root, *self.root.rglob("*")]:
                os.chown(p, pw.pw_uid, pw.pw_gid)

    def init(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "sock").mkdir(exist_ok=True)
        self._chown()
        if (self.data_dir / "PG_VERSION").exists():
            return
        res = subprocess.run(
            _as_server_user([str(pg_bin() / "initdb"), "--no-sync", "-A", "trust", "-U",
                             PG_SUPERUSER, "-E", "UTF8", "-D", str(self.data_dir)]),
            capture_output=True, text=True,
        )
        if res.returncode != 0:
            raise RuntimeError(f"initdb failed in {self.root}: {res.stderr.strip()}")

    def start(self) -> LocalPostgres:
        self.init()
        opts = (f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories="
                f"{self.root / 'sock'} -c fsync=off -c max_connections=300")
        res = subprocess.run(
            _as_server_user([str(pg_bin() / "pg_ctl"), "-D", str(self.data_dir), "-l",
                             str(self.log_file), "-o", opts, "-w",
                             "-t", str(PG_START_TIMEOUT_S), "start"]),
            capture_output=True, text=True,
        )
        if res.returncode != 0:
            tail = self.log_file.read_text()[-2000:] if self.log_file.exists() else ""
            raise RuntimeError(f"postgres failed to start: {res.stderr}\n{tail}")
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + PG_START_TIMEOUT_S
        while True:
            try:
                with psycopg.connect(self.dsn(), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def create_database(self, name: str, template: str | None = None) -> str:
        """Create database ``name`` (if missing), as a copy of database ``template`` if given,
        and return its DSN."""
        import psycopg
        from psycopg import sql

        from tms.storage.queries import q

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            exists = conn.execute(q("meta_database_exists"), {"name": name}).fetchone()
            if exists:
                return self.dsn(name)
            if template is None:
                conn.execute(sql.SQL(q("meta_create_database")).format(  # type: ignore[arg-type]
                    name=sql.Identifier(name)))
            else:
                conn.execute(sql.SQL(q("meta_create_database_from_template")).format(  # type: ignore[arg-type]
                    name=sql.Identifier(name), template=sql.Identifier(template)))
        return self.dsn(name)

    def stop(self, mode: str = "fast") -> None:
        if not (self.data_dir / "postmaster.pid").exists():
            return
        subprocess.run(
            _as_server_user([str(pg_bin() / "pg_ctl"), "-D", str(self.data_dir), "-m", mode,
                             "-w", "stop"]),
            capture_output=True,
        )
