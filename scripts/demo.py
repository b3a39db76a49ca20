"""The TMS demo: the whole service, locally, maintaining a real Iceberg table, set up the way
an operator would set it up.

Starts PostgreSQL, ZooKeeper, tms-api (with bearer tokens), tms-scheduler and tms-executor on
loopback; writes small commits into an Iceberg table with pyiceberg (not Spark), as a writer
would; then runs an operator's first steps with the ``tms`` CLI and the admin token (create the
catalog, register the table), notifies every commit with the writer token, waits for the
scheduler to queue a compaction and the executor to run it on Spark, and prints the table
before and after, ``tms operations list`` and ``tms explain``. Everything started is stopped
again, on success, failure or Ctrl-C; ``--keep`` keeps the stack up after the demo until Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path

from tms.local import iceberg_data
from tms.local.keep import LocalTokens, cli_env, connection_text, keep_up, write_tokens_file
from tms.local.stack import LocalStack
from tms.v1 import tms_pb2
from tms_client import Commit, TmsClient
from tms_services.cli import run as tms_cli

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_COMMITS = 120
OPERATION_TIMEOUT_S = 600.0
POLL_S = 0.5
CALL_DEADLINE_S = 10.0
CATALOG_NAME = "tms_demo"
NAMESPACE, TABLE_NAME = "demo", "events"
TABLE_ID = f"{NAMESPACE}.{TABLE_NAME}"
ENDED = ("SUCCEEDED", "FAILED", "CANCELLED", "SKIPPED")


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def say(msg: str) -> None:
    print(f"[demo] {msg}", flush=True)


def tms(*argv: str) -> None:
    """Run one ``tms`` command in this process, shown as a person would type it; the CLI
    reads TMS_API and TMS_TOKEN from the environment, as in their shell."""
    print(f"$ {shlex.join(['tms', *argv])}", flush=True)
    code = tms_cli(list(argv))
    sys.stdout.flush()
    if code != 0:
        raise RuntimeError(f"tms {argv[0]} {argv[1]} failed with exit code {code}")


def wait_for_operation(client: TmsClient) -> tms_pb2.Operation:
    deadline = time.monotonic() + OPERATION_TIMEOUT_S
    last_state = None
    while time.monotonic() < deadline:
        ops = client.list_operations(TABLE_ID, action="compaction").operations
        if ops:
            op = ops[-1]  # the first compaction
            state = tms_pb2.Operation.State.Name(op.state)
            if state != last_state:
                say(f"{op.name}: {state} (attempt {op.attempts_used} of {op.max_attempts}) "
                    f"{op.engine_handle}")
                last_state = state
            if state in ENDED:
                return op
        time.sleep(POLL_S)
    raise TimeoutError(f"no finished compaction within {OPERATION_TIMEOUT_S:.0f} s")


def wait_until_idle(client: TmsClient) -> None:
    """Let whatever else the scheduler queued (e.g. a manifest rewrite after 120 commits)
    finish too, so the listing shows where the table ended up."""
    deadline = time.monotonic() + OPERATION_TIMEOUT_S
    active = (tms_pb2.Operation.QUEUED, tms_pb2.Operation.RUNNING)
    while time.monotonic() < deadline:
        ops = client.list_operations(TABLE_ID).operations
        if not any(o.state in active for o in ops):
            return
        time.sleep(POLL_S)
    say("some operations are still running; stopping anyway")


def first_steps(stack: LocalStack, tokens: LocalTokens, warehouse: Path,
                props: dict[str, str]) -> None:
    """What an operator does once per catalog and once per table, with the CLI as admin."""
    os.environ.update(cli_env(stack, tokens))
    say(f"the CLI as an admin: export TMS_API={stack.api_address} TMS_TOKEN=<admin token>")
    tms("catalogs", "create", CATALOG_NAME, "--type", "sql", "--property", f"uri={props['uri']}",
        "--property", f"warehouse={props['warehouse']}", "--allowed-location", str(warehouse))
    tms("tables", "register", TABLE_ID, "--catalog", CATALOG_NAME, "--namespace", NAMESPACE,
        "--name", TABLE_NAME, "--owner", "demo")


def run(commits: int, state_dir: Path, keep: bool, console: bool = False) -> int:
    if state_dir.exists():
        shutil.rmtree(state_dir)
    state_dir.mkdir(parents=True)
    tokens = write_tokens_file(state_dir / "tokens.json")
    stack = LocalStack(state_dir, ROOT / ".tms", executor_args=["--poll-interval-s", "0.5"],
                       api_args=["--tokens-file", str(tokens.path)])
    try:
        say(f"starting PostgreSQL, ZooKeeper, tms-api, tms-scheduler, tms-executor in {state_dir}")
        stack.start()
        assert stack.postgres is not None
        say(f"api on {stack.api_address} (bearer tokens required); logs in {state_dir / 'logs'}")
        catalog_dsn = stack.postgres.create_database("iceberg_catalog")
        warehouse = state_dir / "warehouse"
        warehouse.mkdir()
        props = iceberg_data.sql_catalog_properties(catalog_dsn, warehouse.as_uri())
        catalog = iceberg_data.load_catalog(CATALOG_NAME, props)
        table = iceberg_data.create_table(catalog, NAMESPACE, TABLE_NAME)
        t0 = time.monotonic()
        snapshot_ids = iceberg_data.append_batches(table, commits)
        say(f"a writer (pyiceberg) made {commits} small commits to {TABLE_ID} in "
            f"{time.monotonic() - t0:.1f} s")
        before = iceberg_data.stats(table)

        first_steps(stack, tokens, warehouse, props)
        with TmsClient(stack.api_address, token=tokens.writer,
                       deadline_s=CALL_DEADLINE_S) as writer:
            t0 = time.monotonic()
            results = writer.notify_commits(
                Commit(TABLE_ID, str(sid), files_added=1, operation="append")
                for sid in snapshot_ids)
            refused = [r for r in results if r.error]
            if refused:
                raise RuntimeError(f"{len(refused)} commits refused: {refused[0].error}")
            say(f"the writer notified {len(results)} commits (writer token) in "
                f"{time.monotonic() - t0:.2f} s")
        with TmsClient(stack.api_address, token=tokens.admin,
                       deadline_s=CALL_DEADLINE_S) as admin:
            op = wait_for_operation(admin)
            wait_until_idle(admin)
        after = iceberg_data.stats(table)
        print()
        print(f"{'':<14}{'data files':>12}{'snapshots':>12}{'rows':>10}")
        print(f"{'before':<14}{before['data_files']:>12}{before['snapshots']:>12}"
              f"{before['rows_scanned']:>10}")
        print(f"{'after':<14}{after['data_files']:>12}{after['snapshots']:>12}"
              f"{after['rows_scanned']:>10}")
        print()
        tms("operations", "list", "--table", TABLE_ID)
        print()
        tms("explain", TABLE_ID)
        print()
        ok = (op.state == tms_pb2.Operation.SUCCEEDED
              and after["data_files"] < before["data_files"]
              and after["rows_scanned"] == before["rows_scanned"])
        if not ok:
            say("FAILED: the compaction did not leave the table compacted and whole")
            tms("operations", "show", op.name, "--logs")
            return 1
        say(f"OK: {before['data_files']} data files -> {after['data_files']}, "
            f"rows unchanged ({after['rows_scanned']})")
        if keep or console:
            if console:
                stack.start_console()
                say(f"console on {stack.console_url}: sign in with the admin token below")
            print(connection_text(stack, tokens, ("tms tables list",
                                                  f"tms explain {TABLE_ID}",
                                                  "tms operations list")), flush=True)
            return keep_up(stack, say)
        return 0
    finally:
        say("stopping everything")
        t0 = time.monotonic()
        stack.stop()
        say(f"stopped in {time.monotonic() - t0:.1f} s")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--commits", type=int, default=DEFAULT_COMMITS,
                   help=f"small commits the writer makes (default {DEFAULT_COMMITS})")
    p.add_argument("--state-dir", type=Path, default=ROOT / ".tms" / "demo",
                   help="where data and logs go (wiped at start)")
    p.add_argument("--keep", action="store_true",
                   help="keep the stack up after the demo until Ctrl-C, and print the address, "
                        "an admin token and the lines that point the CLI at it")
    p.add_argument("--console", action="store_true",
                   help="then start tms-console, print its address and keep everything up "
                        "until Ctrl-C (as --keep)")
    args = p.parse_args()
    if args.commits < 1:
        p.error("--commits must be positive")
    # Explicit handlers: a demo started in the background inherits an ignored SIGINT.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        sys.exit(run(args.commits, args.state_dir, args.keep, args.console))
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
