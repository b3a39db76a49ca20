"""``tms watch``: a live view of operations, refreshed every few seconds until Ctrl-C.

Each frame shows RUNNING operations first (how long the current attempt has run and on which
executor), then QUEUED ones (with the next attempt time of those waiting out a retry backoff),
then the most recent others, newest first. Active operations are fetched by state, so an old
queued operation is never pushed off the screen by newer finished ones.

A transient failure (the API restarting, a deadline) is reported on stderr and the view goes
on: a monitor should outlast a rolling restart. Anything else (bad token, unknown table) ends
the watch with its exit code, since refreshing cannot fix it. ``--once`` / ``--iterations N``
bound the loop for scripts and tests; with ``--json`` each frame is one JSON line.

Ctrl-C ends the watch at once with exit code 0, wherever it lands: the SIGINT handler only sets
a stop flag and cancels the call in flight (the wait for its answer then returns), instead of
raising KeyboardInterrupt inside gRPC, which could leave the process stuck on a half-torn-down
call while the API is slow to answer.
"""

from __future__ import annotations

import argparse
import datetime as dt
import signal
import sys
import threading
from types import FrameType
from typing import Any

from tms.v1 import tms_pb2
from tms_client import CancelledError, TmsError
from tms_services.cli.client import Client, collect, table_name, upper
from tms_services.cli.errors import EXIT_OK, TRANSIENT, from_tms_error
from tms_services.cli.format import TIME_FORMAT, dumps, to_dict
from tms_services.cli.operations import OP_STATES, op_rows, state

WATCH_INTERVAL_S = 2.0  # default refresh period
MIN_WATCH_INTERVAL_S = 0.1  # below this the view would mostly load the API
WATCH_LIMIT = 30  # operations per group (running / queued / recent) fetched each frame
CLEAR_SCREEN = "\x1b[H\x1b[2J"  # cursor home + erase display (ANSI), only on a terminal
ACTIVE_STATES = ("RUNNING", "QUEUED")  # shown first, in this order
ALL_TABLES = "tables/-"


def _list(c: Client, args: argparse.Namespace, only: str | None) -> list[tms_pb2.Operation]:
    parent = table_name(args.table) if args.table else ALL_TABLES

    def page(size: int, token: str) -> tms_pb2.ListOperationsResponse:
        return c.call("ListOperations", tms_pb2.ListOperationsRequest(
            parent=parent, state=only, page_size=size, page_token=token))

    return collect(page, "operations", args.limit)[0]


def fetch(c: Client, args: argparse.Namespace) -> list[tms_pb2.Operation]:
    """The operations of one frame, in display order (see the module docstring). QUEUED is
    asked before RUNNING: an operation starting in between then shows up twice (and is kept as
    RUNNING) rather than not at all."""
    if args.state:
        return _list(c, args, args.state)
    queued = _list(c, args, "QUEUED")
    running = _list(c, args, "RUNNING")
    seen = {op.name for op in running}
    active = running + [op for op in queued if op.name not in seen]
    seen |= {op.name for op in queued}
    recent = [op for op in _list(c, args, None) if op.name not in seen
              and state(op) not in ACTIVE_STATES]
    return active + recent[:max(0, args.limit - len(active))]


def frame_text(ops: list[tms_pb2.Operation], args: argparse.Namespace, now: dt.datetime) -> str:
    counts = {s: sum(1 for o in ops if state(o) == s) for s in ACTIVE_STATES}
    scope = table_name(args.table) if args.table else "all tables"
    if args.state:
        scope += f", {args.state}"
    head = (f"tms watch  {now.strftime(TIME_FORMAT)} UTC  {scope}  every {args.interval_s:g}s"
            "  (Ctrl-C to stop)")
    summary = (f"{counts['RUNNING']} running, {counts['QUEUED']} queued, "
               f"{len(ops) - sum(counts.values())} other shown")
    body = op_rows(ops, now) if ops else "no operations"
    return "\n".join([head, summary, "", body])


def _show(ops: list[tms_pb2.Operation], args: argparse.Namespace, clear: bool) -> None:
    now = dt.datetime.now(dt.UTC)
    if args.json:
        print(dumps({"time": now.isoformat().replace("+00:00", "Z"),
                     "operations": [to_dict(o) for o in ops]}, compact=True))
    else:
        print((CLEAR_SCREEN if clear else "") + frame_text(ops, args, now))
        if not clear:
            print()  # frames apart when the output is a file or a pipe
    sys.stdout.flush()


def _watch(c: Client, args: argparse.Namespace) -> int:
    frames = 1 if args.once else args.iterations  # None: until Ctrl-C
    clear = sys.stdout.isatty() and not args.json
    stop = threading.Event()

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        stop.set()
        c.interrupt()

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        return _loop(c, args, frames, clear, stop)
    finally:
        signal.signal(signal.SIGINT, previous)


def _loop(c: Client, args: argparse.Namespace, frames: int | None, clear: bool,
          stop: threading.Event) -> int:
    status = EXIT_OK
    shown = 0
    while not stop.is_set():
        try:
            ops = fetch(c, args)
        except CancelledError:
            if stop.is_set():
                break  # Ctrl-C during a call: the normal way to leave a live view
            raise
        except TmsError as e:
            if e.code not in TRANSIENT:
                raise
            err = from_tms_error(e, c.api)
            err.report(args.json)
            status = err.exit_code
        else:
            _show(ops, args, clear)
            status = EXIT_OK
        shown += 1
        if frames is not None and shown >= frames:
            return status
        stop.wait(args.interval_s)
    return EXIT_OK


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from e
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def _interval(text: str) -> float:
    try:
        s = float(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from e
    if not s >= MIN_WATCH_INTERVAL_S:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be at least {MIN_WATCH_INTERVAL_S:g}")
    return s


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    w = sub.add_parser("watch", parents=[common],
                       help="follow operations live (Ctrl-C to stop)")
    w.add_argument("--table", default="", help="only this table's operations")
    w.add_argument("--state", type=upper, choices=OP_STATES, help="only this state (any case)")
    w.add_argument("--interval-s", type=_interval, default=WATCH_INTERVAL_S, metavar="S",
                   help=f"refresh period in seconds (default {WATCH_INTERVAL_S:g})")
    w.add_argument("--limit", type=_positive, default=WATCH_LIMIT, metavar="N",
                   help=f"operations per frame (default {WATCH_LIMIT}); active ones come "
                        "first, up to N of each state, recent ones fill what is left")
    g = w.add_mutually_exclusive_group()
    g.add_argument("--once", action="store_true", help="show one frame and exit")
    g.add_argument("--iterations", type=_positive, metavar="N",
                   help="show N frames and exit")
    w.set_defaults(fn=_watch)
