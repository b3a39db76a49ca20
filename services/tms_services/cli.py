"""tms: the operator's command line. For now: schema migration and read-only views."""

from __future__ import annotations

import argparse
import json
import os
import sys

import grpc
from google.protobuf.json_format import MessageToDict

from tms.v1 import tms_pb2, tms_pb2_grpc
from tms_services.common import ENV_DATABASE_URL

ENV_API = "TMS_API"
DEFAULT_API = "127.0.0.1:50051"
CLI_TIMEOUT_S = 10.0


def _migrate(args: argparse.Namespace) -> int:
    from tms.storage.migrate import migrate

    if not args.database_url:
        print(f"tms migrate: --database-url or {ENV_DATABASE_URL} is required", file=sys.stderr)
        return 2
    applied = migrate(args.database_url)
    for m in applied:
        print(f"applied {m.version:04d}_{m.name}")
    if not applied:
        print("schema is up to date")
    return 0


def _stub(args: argparse.Namespace) -> tms_pb2_grpc.TableManagementServiceStub:
    return tms_pb2_grpc.TableManagementServiceStub(grpc.insecure_channel(args.api))


def _print(msg: object) -> None:
    print(json.dumps(MessageToDict(msg), indent=2))  # type: ignore[arg-type]


def _tables(args: argparse.Namespace) -> int:
    _print(_stub(args).ListTables(tms_pb2.ListTablesRequest(page_size=args.page_size),
                                  timeout=CLI_TIMEOUT_S))
    return 0


def _operations(args: argparse.Namespace) -> int:
    parent = f"tables/{args.table}" if args.table else "tables/-"
    _print(_stub(args).ListOperations(
        tms_pb2.ListOperationsRequest(parent=parent, page_size=args.page_size),
        timeout=CLI_TIMEOUT_S))
    return 0


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="tms", description="TMS operator command line")
    p.add_argument("--api", default=os.environ.get(ENV_API, DEFAULT_API))
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("migrate", help="apply pending schema migrations")
    m.add_argument("--database-url", default=os.environ.get(ENV_DATABASE_URL))
    m.set_defaults(fn=_migrate)
    t = sub.add_parser("tables", help="list tables")
    t.add_argument("--page-size", type=int, default=50)
    t.set_defaults(fn=_tables)
    o = sub.add_parser("operations", help="list operations, newest first")
    o.add_argument("--table", default="")
    o.add_argument("--page-size", type=int, default=50)
    o.set_defaults(fn=_operations)
    args = p.parse_args(argv)
    try:
        sys.exit(args.fn(args))
    except grpc.RpcError as e:
        print(f"tms: {e.code().name}: {e.details()}", file=sys.stderr)  # type: ignore[attr-defined]
        sys.exit(1)


if __name__ == "__main__":
    main()
