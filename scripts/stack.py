"""A local TMS stack that stays up until Ctrl-C: PostgreSQL, ZooKeeper, tms-api (with bearer
tokens), tms-scheduler and tms-executor on loopback, in one state directory.

Prints the API's address, a fresh admin token and writer token, and the lines that point the
``tms`` CLI at the stack. It also makes an empty Iceberg SQL catalog (a database on the same
PostgreSQL and a warehouse directory) and prints the ``tms catalogs create`` command that
registers it, so the next steps (discover or register tables, notify commits) need nothing else.
The state directory is wiped at start; everything started is stopped on Ctrl-C.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path

from tms.local import iceberg_data
from tms.local.keep import connection_text, keep_up, write_tokens_file
from tms.local.stack import LocalStack

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_STATE_DIR = ROOT / ".tms" / "stack"
CATALOG_DATABASE = "iceberg_catalog"
CATALOG_NAME = "local"


def say(msg: str) -> None:
    print(f"[stack] {msg}", flush=True)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def catalog_command(catalog_dsn: str, warehouse: Path) -> str:
    """The ``tms catalogs create`` line for the stack's empty Iceberg SQL catalog."""
    props = iceberg_data.sql_catalog_properties(catalog_dsn, warehouse.as_uri())
    argv = ["tms", "catalogs", "create", CATALOG_NAME, "--type", "sql",
            "--property", f"uri={props['uri']}", "--property", f"warehouse={props['warehouse']}",
            "--allowed-location", str(warehouse), "--discover"]
    return shlex.join(argv)


def run(args: argparse.Namespace) -> int:
    state_dir: Path = args.state_dir
    if state_dir.exists():
        shutil.rmtree(state_dir)
    state_dir.mkdir(parents=True)
    tokens = write_tokens_file(state_dir / "tokens.json")
    stack = LocalStack(state_dir, ROOT / ".tms", executors=args.executors,
                       api_args=["--tokens-file", str(tokens.path)],
                       executor_args=["--poll-interval-s", "0.5"], api_port=args.api_port)
    try:
        say(f"starting PostgreSQL, ZooKeeper, tms-api, tms-scheduler and {args.executors} "
            f"tms-executor(s) in {state_dir}")
        t0 = time.monotonic()
        stack.start()
        assert stack.postgres is not None
        catalog_dsn = stack.postgres.create_database(CATALOG_DATABASE)
        warehouse = state_dir / "warehouse"
        warehouse.mkdir()
        say(f"up in {time.monotonic() - t0:.1f} s")
        steps = (catalog_command(catalog_dsn, warehouse), "tms catalogs list",
                 "tms tables list")
        print(connection_text(stack, tokens, steps), flush=True)
        return keep_up(stack, say)
    finally:
        say("stopping everything")
        t0 = time.monotonic()
        stack.stop()
        say(f"stopped in {time.monotonic() - t0:.1f} s")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR,
                   help=f"where data and logs go (wiped at start; default {DEFAULT_STATE_DIR})")
    p.add_argument("--api-port", type=int, default=0,
                   help="tms-api's port on 127.0.0.1 (default: a free one)")
    p.add_argument("--executors", type=int, default=1, help="tms-executor processes")
    args = p.parse_args()
    if args.executors < 1:
        p.error("--executors must be at least 1")
    # Explicit handlers: a stack started in the background inherits an ignored SIGINT.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        sys.exit(run(args))
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
