"""``tms commits notify``: tell TMS about commits by hand, as a writer's client would.

For backfills and for checking the intake path end to end: one commit goes through
NotifyCommit, several through NotifyCommits (an unknown table fails only its own entries, so
each commit gets its own line, and the exit code is that of the first refused one).
"""

from __future__ import annotations

import argparse
from typing import Any

from tms_client import Commit, CommitResult
from tms_services.cli.client import Client, iso_time, table_name
from tms_services.cli.errors import EXIT_OK, from_tms_error
from tms_services.cli.format import dumps


def _commits(args: argparse.Namespace) -> list[Commit]:
    return [Commit(args.table, cid, args.commit_time, args.files_added, args.bytes_added,
                   args.operation) for cid in args.commit_ids]


def _line(table: str, commit_id: str, duplicate: bool) -> str:
    return f"{table}: commit {commit_id} " + ("already known (duplicate)" if duplicate
                                               else "recorded")


def _one(c: Client, args: argparse.Namespace, commit: Commit) -> int:
    r = c.tms.notify_commit(commit.table_id, commit.commit_id, commit_time=commit.commit_time,
                            files_added=commit.files_added, bytes_added=commit.bytes_added,
                            operation=commit.operation)
    name = table_name(args.table)
    if args.json:
        print(dumps({"table": name, "commit_id": commit.commit_id,
                     "duplicate": r.duplicate}))
    else:
        print(_line(name, commit.commit_id, r.duplicate))
    return EXIT_OK


def _result_doc(r: CommitResult, api: str) -> dict[str, Any]:
    doc: dict[str, Any] = {"commit_id": r.commit.commit_id, "duplicate": r.duplicate}
    if r.error is not None:
        doc["error"] = from_tms_error(r.error, api).line().removeprefix("tms: ")
    return doc


def _notify(c: Client, args: argparse.Namespace) -> int:
    commits = _commits(args)
    if len(commits) == 1:
        return _one(c, args, commits[0])
    results = c.tms.notify_commits(commits)
    name = table_name(args.table)
    if args.json:
        print(dumps({"table": name, "results": [_result_doc(r, c.api) for r in results]}))
    for r in results:
        if not args.json:
            if r.error is None:
                print(_line(name, r.commit.commit_id, r.duplicate))
            else:
                print(f"{name}: commit {r.commit.commit_id} refused: "
                      f"{_result_doc(r, c.api)['error']}")
    refused = [r.error for r in results if r.error is not None]
    return from_tms_error(refused[0]).exit_code if refused else EXIT_OK


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    c = sub.add_parser("commits", parents=[common], help="tell TMS about commits by hand")
    cs = c.add_subparsers(dest="subcommand", metavar="COMMAND", required=True,
                          help="what to do with commits")
    n = cs.add_parser("notify", parents=[common],
                      help="record commits of a table (idempotent: a replay is a duplicate)")
    n.add_argument("table", metavar="TABLE", help="table id or tables/{id}")
    n.add_argument("commit_ids", metavar="COMMIT_ID", nargs="+",
                   help="Iceberg snapshot id, Hudi instant time, ... (several: one batch)")
    n.add_argument("--commit-time", type=iso_time, metavar="TIME",
                   help="when the commit happened: ISO 8601, UTC unless a zone is given "
                        "(default: when TMS receives it)")
    n.add_argument("--files-added", type=int, metavar="N", help="data files the commit added")
    n.add_argument("--bytes-added", type=int, metavar="N", help="bytes the commit added")
    n.add_argument("--operation", default="", help="e.g. append, overwrite, delete")
    n.set_defaults(fn=_notify)


