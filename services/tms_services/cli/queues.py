"""``tms queues list|set``: how many operations of a queue may run at once, and what it holds."""

from __future__ import annotations

import argparse
from typing import Any

from tms.v1 import tms_pb2
from tms_services.cli.client import Client
from tms_services.cli.format import table
from tms_services.cli.output import emit

UNLIMITED = "unlimited"


def _limit(q: tms_pb2.Queue) -> str:
    return str(q.max_running) if q.HasField("max_running") else UNLIMITED


def _rows(r: tms_pb2.ListQueuesResponse) -> str:
    if not r.queues:
        return "no queues with a limit or active operations"
    return table(["QUEUE", "MAX RUNNING", "RUNNING", "QUEUED"],
                 [[q.name.removeprefix("queues/"), _limit(q), q.running, q.queued]
                  for q in r.queues], right=(1, 2, 3))


def _list(c: Client, args: argparse.Namespace) -> int:
    emit(args, tms_pb2.ListQueuesResponse(queues=c.tms.list_queues()), _rows)
    return 0


def _set(c: Client, args: argparse.Namespace) -> int:
    q = c.tms.update_queue(args.queue, None if args.unlimited else args.max_running)
    emit(args, q, lambda m: f"{m.name}: max running {_limit(m)} "
                            f"({m.running} running, {m.queued} queued)")
    return 0


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    q = sub.add_parser("queues", parents=[common], help="queue concurrency limits")
    qs = q.add_subparsers(dest="subcommand", metavar="COMMAND", required=True,
                          help="what to do with queues")
    ls = qs.add_parser("list", parents=[common],
                       help="queues with a limit or active operations")
    ls.set_defaults(fn=_list)
    s = qs.add_parser("set", parents=[common],
                      help="limit how many operations of a queue run at once (admin)")
    s.add_argument("queue", metavar="QUEUE", help="queue name or queues/{name}")
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument("--max-running", type=int, metavar="N",
                   help="at most N at once across all executors (the API accepts 0..10000; "
                        "0 holds the queue back)")
    g.add_argument("--unlimited", action="store_true", help="remove the limit")
    s.set_defaults(fn=_set)
