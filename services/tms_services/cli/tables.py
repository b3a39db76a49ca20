"""``tms tables list|show|register|update|deregister|pause|resume|held``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tms.v1 import tms_pb2
from tms_services.cli.client import (
    Client,
    add_limit_options,
    collect,
    key_value,
    limit_of,
    lower,
    table_name,
    upper,
)
from tms_services.cli.errors import usage_error
from tms_services.cli.format import NONE, block, cut, pairs, table, when
from tms_services.cli.output import emit, emit_more, note
from tms_services.cli.policy import POLICY_HELP
from tms_services.cli.policy import add_parser as add_policy_keys_parser

DEFAULT_FORMAT = "iceberg"
TABLE_STATES = ("ACTIVE", "PAUSED")
CONFIRM_ANSWERS = ("y", "yes")
SORTS = ("name", "health", "-health", "last_commit_time", "-last_commit_time")
DECISION_CELL_CHARS = 60


def _short(name: str) -> str:
    return name.removeprefix("tables/")


def health_text(t: tms_pb2.Table) -> str:
    return str(t.health_score) if t.HasField("health_score") else NONE


def last_operation_text(t: tms_pb2.Table) -> str:
    if not t.last_operation:
        return NONE
    op_id = t.last_operation.rsplit("/", 1)[-1]
    return f"{op_id} {tms_pb2.Operation.State.Name(t.last_operation_state)}"


def _rows(tables: list[tms_pb2.Table]) -> str:
    return table(
        ["TABLE", "FORMAT", "STATE", "HEALTH", "QUEUE", "PRIORITY", "OWNER", "COMMITS",
         "LAST COMMIT (UTC)", "LAST OPERATION", "LAST DECISION"],
        [[_short(t.name), t.format, tms_pb2.Table.State.Name(t.state), health_text(t),
          t.queue, t.priority, t.owner, f"{t.commit_count:,}", when(t.last_commit_time, zone=False),
          last_operation_text(t), cut(t.last_decision, DECISION_CELL_CHARS)]
         for t in tables],
        right=(3, 5, 7))


def table_text(t: tms_pb2.Table) -> str:
    last = NONE
    if t.last_commit_id:
        last = f"{t.last_commit_id} at {when(t.last_commit_time)}"
    return block([
        ("name", t.name), ("state", tms_pb2.Table.State.Name(t.state)), ("format", t.format),
        ("catalog", t.catalog), ("namespace", t.namespace), ("table_name", t.table_name),
        ("base_path", t.base_path), ("location", t.location or NONE),
        ("discovered", "yes" if t.discovered else "no"), ("owner", t.owner),
        ("queue", t.queue), ("priority", t.priority),
        ("policy", pairs(t.policy)), ("commit_count", f"{t.commit_count:,}"),
        ("last_commit", last), ("health", health_text(t)),
        ("last_decision", t.last_decision or NONE),
        ("last_operation", t.last_operation or NONE),
        ("create_time", when(t.create_time)),
        ("update_time", when(t.update_time)),
    ])


def _list(c: Client, args: argparse.Namespace) -> int:
    state = tms_pb2.Table.State.Value(args.state) if args.state else 0

    def page(size: int, token: str) -> tms_pb2.ListTablesResponse:
        return c.tms.list_tables(page_size=size, page_token=token, format=args.format,
                                 state=state, owner=args.owner, queue=args.queue,
                                 catalog=args.catalog, namespace=args.namespace,
                                 search=args.search, max_health=args.max_health,
                                 min_health=args.min_health, order_by=args.sort)

    tables, token = collect(page, "tables", limit_of(args))
    emit(args, tms_pb2.ListTablesResponse(tables=tables, next_page_token=token),
         lambda _m: _rows(tables) if tables else "no tables")
    emit_more(args, token)
    return 0


def _show(c: Client, args: argparse.Namespace) -> int:
    emit(args, c.tms.get_table(args.table), table_text)
    return 0


def _register(c: Client, args: argparse.Namespace) -> int:
    spec = tms_pb2.Table(
        format=args.format, catalog=args.catalog, namespace=args.namespace,
        table_name=args.name, base_path=args.base_path, policy=dict(args.policy),
        owner=args.owner, queue=args.queue, priority=args.priority)
    t = c.tms.register_table(args.table.removeprefix("tables/"), spec,
                             request_id=args.request_id or None)
    emit(args, t, lambda m: f"registered {m.name} ({m.format}, queue {m.queue}, "
                            f"priority {m.priority}, {tms_pb2.Table.State.Name(m.state)})")
    return 0


def _edited(current: Any, sets: list[tuple[str, str]], unsets: list[str]) -> dict[str, str]:
    out = dict(current)
    out.update(sets)
    for key in unsets:
        out.pop(key, None)
    return out


def _update(c: Client, args: argparse.Namespace) -> int:
    """A field mask of exactly the flags given. Setting or unsetting single policy keys
    reads the table first (the API replaces a map whole)."""
    maps = (args.policy, args.unset_policy)
    if all(v is None for v in (args.owner, args.queue, args.priority)) and not any(maps):
        raise usage_error("tms tables update: give at least one field to change")
    policy = None
    if any(maps):
        current = c.tms.get_table(args.table)
        policy = _edited(current.policy, args.policy, args.unset_policy)
    t = c.tms.update_table(args.table, owner=args.owner, queue=args.queue,
                           priority=args.priority, policy=policy)
    emit(args, t, table_text)
    return 0


def _confirmed(args: argparse.Namespace, name: str) -> bool:
    if args.yes:
        return True
    if not sys.stdin.isatty():
        raise usage_error(f"tms tables deregister: refusing to deregister {name} without "
                          "--yes (stdin is not a terminal to ask on)")
    answer = input(f"deregister {name}{' (force)' if args.force else ''}? [y/N] ")
    return answer.strip().lower() in CONFIRM_ANSWERS


def _deregister(c: Client, args: argparse.Namespace) -> int:
    name = table_name(args.table)
    if not _confirmed(args, name):
        note(args, "not deregistered")
        return 0
    c.tms.deregister_table(name, force=args.force)
    emit(args, tms_pb2.Table(name=name), lambda m: f"deregistered {m.name}",
         json_doc={"name": name, "deregistered": True})
    return 0


def _set_state(pause: bool) -> Any:
    def run(c: Client, args: argparse.Namespace) -> int:
        t = c.tms.pause_table(args.table) if pause else c.tms.resume_table(args.table)
        emit(args, t, lambda m: f"{m.name} is {tms_pb2.Table.State.Name(m.state)}")
        return 0
    return run


def _held(c: Client, args: argparse.Namespace) -> int:
    parent = table_name(args.table) if args.table else "tables/-"

    def page(size: int, token: str) -> tms_pb2.ListHeldActionsResponse:
        return c.call("ListHeldActions", tms_pb2.ListHeldActionsRequest(
            parent=parent, action=args.action, page_size=size, page_token=token))

    held, token = collect(page, "holds", limit_of(args))
    emit(args, tms_pb2.ListHeldActionsResponse(holds=held, next_page_token=token),
         lambda _m: table(["TABLE", "ACTION", "FAILURES", "HELD UNTIL (UTC)", "LAST FAILED",
                           "WHY"],
                          [[h.table, h.action, str(h.failures), when(h.held_until, zone=False),
                            h.last_operation, h.reason[:160]] for h in held])
         if held else "no held actions")
    emit_more(args, token)
    return 0


def _map_flags(p: argparse.ArgumentParser, flag: str, what: str, more: str = "") -> None:
    p.add_argument(f"--{flag}", type=key_value, action="append", default=[], metavar="K=V",
                   help=f"set one {what} (repeatable); the others stay{more}")
    p.add_argument(f"--unset-{flag}", action="append", default=[], metavar="K",
                   help=f"remove one {what} (repeatable)")


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    t = sub.add_parser("tables", parents=[common],
                       help="list, show, register, update, deregister, pause, resume, held")
    ts = t.add_subparsers(dest="subcommand", metavar="COMMAND", required=True,
                          help="what to do with tables")

    ls = ts.add_parser("list", parents=[common],
                       help="tables with health, last operation and last decision")
    ls.add_argument("--format", type=lower, default="", help="only tables of this format")
    ls.add_argument("--state", type=upper, choices=TABLE_STATES,
                    help="only tables in this state (any case)")
    ls.add_argument("--owner", default="", help="only tables of this owner")
    ls.add_argument("--queue", default="", help="only tables of this queue")
    ls.add_argument("--catalog", default="", help="only tables of this catalog")
    ls.add_argument("--namespace", default="", help="only tables of this namespace")
    ls.add_argument("--search", default="",
                    help="only tables whose id, namespace or name contains this text")
    ls.add_argument("--max-health", type=int, metavar="N",
                    help="only tables whose health score is at most N (0-100)")
    ls.add_argument("--min-health", type=int, metavar="N",
                    help="only tables whose health score is at least N (0-100)")
    ls.add_argument("--sort", choices=SORTS, default="",
                    help="order: name (default), health (least healthy first), -health, "
                         "last_commit_time, -last_commit_time (newest first); write a leading - as "
                         "--sort=-health")
    add_limit_options(ls)
    ls.set_defaults(fn=_list)

    for name, fn, text in (("show", _show, "one table"),
                           ("pause", _set_state(True),
                            "stop new operations (queued ones stay queued)"),
                           ("resume", _set_state(False),
                            "resume and check the table at once; releases held actions")):
        p = ts.add_parser(name, parents=[common], help=text)
        p.add_argument("table", metavar="TABLE", help="table id or tables/{id}")
        p.set_defaults(fn=fn)

    h = ts.add_parser("held", parents=[common],
                      help="actions held after failing too often in a row (tms tables resume "
                           "releases a table's)")
    h.add_argument("table", metavar="TABLE", nargs="?", default="",
                   help="only this table's (table id or tables/{id})")
    h.add_argument("--action", default="", help="only this action's")
    add_limit_options(h)
    h.set_defaults(fn=_held)

    r = ts.add_parser("register", parents=[common], help="register a table for maintenance")
    r.add_argument("table", metavar="TABLE_ID", help="the id: 1-63 of a-z 0-9 _ . -")
    r.add_argument("--format", type=lower, default=DEFAULT_FORMAT,
                   help=f"table-format plugin (default {DEFAULT_FORMAT})")
    r.add_argument("--catalog", default="",
                   help="the catalog id (tms catalogs list) the table lives in")
    r.add_argument("--namespace", default="", help="namespace, dot separated")
    r.add_argument("--name", default="", help="table name in the namespace")
    r.add_argument("--base-path", default="",
                   help="storage location (Hudi, path tables), inside the catalog's allowed "
                        "locations")
    r.add_argument("--policy", type=key_value, action="append", default=[], metavar="K=V",
                   help=f"e.g. compaction.min-small-files=50: {POLICY_HELP}")
    r.add_argument("--owner", default="", help="owning team")
    r.add_argument("--queue", default="", help="executor queue (server default: default)")
    r.add_argument("--priority", type=int, default=0, help="-1000..1000, higher runs first")
    r.add_argument("--request-id", default="",
                   help="idempotency key: a replay returns the first result")
    r.set_defaults(fn=_register)

    u = ts.add_parser("update", parents=[common],
                      help="change a table's owner, queue, priority or policy; only the "
                           "flags given change")
    u.add_argument("table", metavar="TABLE", help="table id or tables/{id}")
    u.add_argument("--owner", help="new owning team")
    u.add_argument("--queue", help="new executor queue ('' for the server default)")
    u.add_argument("--priority", type=int, help="new priority, -1000..1000")
    _map_flags(u, "policy", "policy key", f"; {POLICY_HELP}")
    u.set_defaults(fn=_update)

    add_policy_keys_parser(ts, common)

    d = ts.add_parser("deregister", parents=[common],
                      help="stop maintaining a table (asks first; --yes in scripts)")
    d.add_argument("table", metavar="TABLE", help="table id or tables/{id}")
    d.add_argument("--yes", action="store_true",
                   help="do not ask; required when stdin is not a terminal")
    d.add_argument("--force", action="store_true",
                   help="even while an operation runs (its result will not be recorded)")
    d.set_defaults(fn=_deregister)
