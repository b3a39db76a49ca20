"""``tms tables list|show|register|pause|resume`` and ``tms explain``."""

from __future__ import annotations

import argparse
from typing import Any

from tms.v1 import tms_pb2
from tms_services.cli_client import (
    Client,
    add_limit_options,
    collect,
    key_value,
    limit_of,
    table_name,
)
from tms_services.cli_format import (
    NONE,
    block,
    cut,
    pairs,
    struct_text,
    table,
    when,
)
from tms_services.cli_output import emit, emit_more

DEFAULT_FORMAT = "iceberg"
TABLE_STATES = ("ACTIVE", "PAUSED")


def _short(name: str) -> str:
    return name.removeprefix("tables/")


def _rows(tables: list[tms_pb2.Table]) -> str:
    return table(
        ["TABLE", "FORMAT", "STATE", "QUEUE", "PRIORITY", "OWNER", "COMMITS",
         "LAST COMMIT (UTC)"],
        [[_short(t.name), t.format, tms_pb2.Table.State.Name(t.state), t.queue, t.priority,
          t.owner, t.commit_count, when(t.last_commit_time, zone=False)] for t in tables],
        right=(4, 6))


def table_text(t: tms_pb2.Table) -> str:
    last = NONE
    if t.last_commit_id:
        last = f"{t.last_commit_id} at {when(t.last_commit_time)}"
    return block([
        ("name", t.name), ("state", tms_pb2.Table.State.Name(t.state)), ("format", t.format),
        ("catalog", t.catalog), ("namespace", t.namespace), ("table_name", t.table_name),
        ("base_path", t.base_path), ("owner", t.owner), ("queue", t.queue),
        ("priority", t.priority), ("catalog_properties", pairs(t.catalog_properties)),
        ("policy", pairs(t.policy)), ("commit_count", t.commit_count),
        ("last_commit", last), ("create_time", when(t.create_time)),
        ("update_time", when(t.update_time)),
    ])


def _list(c: Client, args: argparse.Namespace) -> int:
    req = tms_pb2.ListTablesRequest(format=args.format, owner=args.owner, queue=args.queue,
                                    state=args.state)
    tables, token = collect(c, "ListTables", req, "tables", limit_of(args))
    emit(args, tms_pb2.ListTablesResponse(tables=tables, next_page_token=token),
         lambda _m: _rows(tables) if tables else "no tables")
    emit_more(args, token)
    return 0


def _show(c: Client, args: argparse.Namespace) -> int:
    emit(args, c.call("GetTable", tms_pb2.GetTableRequest(name=table_name(args.table))),
         table_text)
    return 0


def _register(c: Client, args: argparse.Namespace) -> int:
    spec = tms_pb2.Table(
        format=args.format, catalog=args.catalog, namespace=args.namespace,
        table_name=args.name, base_path=args.base_path,
        catalog_properties=dict(args.catalog_property), policy=dict(args.policy),
        owner=args.owner, queue=args.queue, priority=args.priority)
    t = c.call("RegisterTable", tms_pb2.RegisterTableRequest(
        table_id=args.table.removeprefix("tables/"), table=spec, request_id=args.request_id))
    emit(args, t, lambda m: f"registered {m.name} ({m.format}, queue {m.queue}, "
                            f"priority {m.priority}, {tms_pb2.Table.State.Name(m.state)})")
    return 0


def _set_state(method: str, request_type: Any) -> Any:
    def run(c: Client, args: argparse.Namespace) -> int:
        t = c.call(method, request_type(name=table_name(args.table)))
        emit(args, t, lambda m: f"{m.name} is {tms_pb2.Table.State.Name(m.state)}")
        return 0
    return run


def explain_text(r: tms_pb2.ExplainTableResponse) -> str:
    head = f"{r.table}  {tms_pb2.Table.State.Name(r.state)}"
    rows = [[a.action, when(a.decide_time, zone=False) if a.decided else "never",
             ("yes" if a.should_run else "no") if a.decided else NONE,
             _short(a.operation), _short(a.active_operation), cut(a.reason)]
            for a in r.actions]
    parts = [head, table(["ACTION", "DECIDED (UTC)", "RUN", "QUEUED OP", "ACTIVE OP", "REASON"],
                         rows)]
    metrics = [f"  {a.action}: {cut(struct_text(a.metrics), 200)}" for a in r.actions
               if a.decided and a.metrics.fields]
    if metrics:
        parts += ["metrics:", *metrics]
    return "\n".join(parts)


def _explain(c: Client, args: argparse.Namespace) -> int:
    emit(args, c.call("ExplainTable", tms_pb2.ExplainTableRequest(name=table_name(args.table))),
         explain_text)
    return 0


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    t = sub.add_parser("tables", parents=[common], help="list, show, register, pause, resume")
    ts = t.add_subparsers(dest="subcommand", metavar="COMMAND", required=True)

    ls = ts.add_parser("list", parents=[common], help="tables ordered by id")
    ls.add_argument("--format", default="", help="only tables of this format")
    ls.add_argument("--state", choices=TABLE_STATES, help="only tables in this state")
    ls.add_argument("--owner", default="", help="only tables of this owner")
    ls.add_argument("--queue", default="", help="only tables of this queue")
    add_limit_options(ls)
    ls.set_defaults(fn=_list)

    for name, fn, text in (("show", _show, "one table"),
                           ("pause", _set_state("PauseTable", tms_pb2.PauseTableRequest),
                            "stop new operations (queued ones stay queued)"),
                           ("resume", _set_state("ResumeTable", tms_pb2.ResumeTableRequest),
                            "resume and check the table at once")):
        p = ts.add_parser(name, parents=[common], help=text)
        p.add_argument("table", metavar="TABLE", help="table id or tables/{id}")
        p.set_defaults(fn=fn)

    r = ts.add_parser("register", parents=[common], help="register a table for maintenance")
    r.add_argument("table", metavar="TABLE_ID", help="the id: 1-63 of a-z 0-9 _ . -")
    r.add_argument("--format", default=DEFAULT_FORMAT,
                   help=f"table-format plugin (default {DEFAULT_FORMAT})")
    r.add_argument("--catalog", default="", help="catalog name as the engines know it")
    r.add_argument("--namespace", default="", help="namespace, dot separated")
    r.add_argument("--name", default="", help="table name in the namespace")
    r.add_argument("--base-path", default="", help="storage location (Hudi, path tables)")
    r.add_argument("--catalog-property", type=key_value, action="append", default=[],
                   metavar="K=V", help="catalog connection property (repeatable)")
    r.add_argument("--policy", type=key_value, action="append", default=[], metavar="K=V",
                   help="policy override, e.g. compaction.min-small-files=50 (repeatable)")
    r.add_argument("--owner", default="", help="owning team")
    r.add_argument("--queue", default="", help="executor queue (server default: default)")
    r.add_argument("--priority", type=int, default=0, help="-1000..1000, higher runs first")
    r.add_argument("--request-id", default="",
                   help="idempotency key: a replay returns the first result")
    r.set_defaults(fn=_register)

    e = sub.add_parser("explain", parents=[common],
                       help="the scheduler's last decision per action, and why")
    e.add_argument("table", metavar="TABLE", help="table id or tables/{id}")
    e.set_defaults(fn=_explain)

