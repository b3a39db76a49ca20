"""tms: the operator's command line for TMS.

Every command but ``migrate`` talks to ``tms-api`` over gRPC. Output is an aligned table (or a
``key: value`` block for one resource) with times in UTC; ``--json`` prints the API's message
instead, as one JSON document with the proto field names (``tms watch --json``: one JSON line
per refresh), so scripts read the same schema as ``protos/tms/v1/tms.proto``.

Usage::

    export TMS_API=127.0.0.1:50051 TMS_TOKEN=...        # or --api / --token
    tms migrate --database-url postgresql://tms@127.0.0.1:5432/tms
    tms tables list [--state PAUSED] [--owner O] [--queue Q] [--format F] [--limit N | --all]
    tms tables show sales.orders
    tms tables register sales.orders --catalog lake --namespace sales --name orders \\
        --catalog-property type=rest --catalog-property uri=http://catalog:8181 \\
        --policy compaction.min-small-files=50 --owner team-a --queue batch --priority 10
    tms tables update sales.orders --priority 20 --policy compaction.min-small-files=30 \
        --unset-policy expire-snapshots.max-age-s      # only the flags given change
    tms tables pause sales.orders;  tms tables resume sales.orders
    tms tables deregister sales.orders [--yes] [--force]   # asks unless --yes
    tms explain sales.orders          # metrics, last decision per action, active operations
    tms operations list [--table T] [--state failed] [--action A] [--created-after TIME]
    tms operations show tables/sales.orders/operations/42   # or the short sales.orders/42
    tms operations trigger sales.orders compaction --reason "before month-end" [--param k=v]
    tms operations cancel sales.orders/42;  tms operations retry sales.orders/42
    tms commits notify sales.orders 4385830383911 [--files-added 3] [--operation append]
    tms queues list;  tms queues set batch --max-running 2;  tms queues set batch --unlimited
    tms watch [--table T] [--state RUNNING] [--interval-s 2] [--once | --iterations N]
    tms catalogs create lake --type sql --property uri=postgresql+psycopg://tms@pg/lake \
        --secret jdbc.password=env:TMS_SECRET_LAKE_PG --allowed-location s3://lake/warehouse \
        --property warehouse=s3://lake/warehouse --discover --include 'sales.*'
    tms catalogs list;  tms catalogs get lake;  tms catalogs delete lake [--yes]
    tms catalogs update lake --unset-property warehouse --allowed-location s3://lake/more \
        --secret jdbc.password=file:lake-pg --no-discover   # only the flags given change

Operations are always printed by their full name, ``tables/{table}/operations/{id}``; input
may use the short ``{table}/{id}``. Enum flags (``--state``) take any case. Counts print as
integers (``3``, never ``3.0``), in tables and in JSON.

Global options (before or after the command): ``--api HOST:PORT`` (env ``TMS_API``, default
127.0.0.1:50051), ``--token`` (env ``TMS_TOKEN``, sent as ``authorization: Bearer ...``),
``--tls-ca PEM`` (env ``TMS_TLS_CA``) and ``--tls-cert/--tls-key`` for mutual TLS,
``--timeout-s`` (per call, default 10), ``--json``.

Exit codes, stable for scripts: 0 success; 1 server-side failure (UNAVAILABLE, INTERNAL,
DEADLINE_EXCEEDED, ...); 2 usage error or INVALID_ARGUMENT; 3 NOT_FOUND; 4 ALREADY_EXISTS or
FAILED_PRECONDITION (a conflict: the operation is already active, the table is paused, ...);
5 UNAUTHENTICATED or PERMISSION_DENIED; 130 interrupted (``tms watch`` ends with 0 on Ctrl-C).
Errors are one line on stderr naming the status and every field the server refused
(``tms: INVALID_ARGUMENT: table_id: ...``); with ``--json``, a JSON document
``{"error": {"code", "exit_code", "message", "reason", "metadata", "field_violations"}}``.
An API nobody answers for is ``tms: UNAVAILABLE: cannot reach tms-api at HOST:PORT: ...``
(exit 1); ``tms migrate`` with a database that does not answer says so the same way.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn

from tms_client import TmsError
from tms_services import (
    cli_catalogs,
    cli_commits,
    cli_explain,
    cli_operations,
    cli_queues,
    cli_status,
    cli_tables,
    cli_watch,
)
from tms_services.cli_client import add_connection_options, connect
from tms_services.cli_errors import (
    EXIT_CODES_HELP,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SERVER,
    EXIT_USAGE,
    CliError,
    from_tms_error,
    usage_error,
)
from tms_services.common import ENV_DATABASE_URL, Unreachable, check_database

JSON_FLAG = "--json"


class _UsageError(Exception):
    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message


class _Parser(argparse.ArgumentParser):
    """Usage errors come back to :func:`run` instead of exiting here, so they are reported
    like any other error (as JSON with ``--json``) with exit code 2."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(self, message)


def _migrate(args: argparse.Namespace) -> int:
    from tms.storage.migrate import migrate

    if not args.database_url:
        raise usage_error(f"tms migrate: --database-url or {ENV_DATABASE_URL} is required")
    try:
        check_database(args.database_url)
    except Unreachable as e:
        raise CliError("UNAVAILABLE", str(e), EXIT_SERVER) from e
    applied = migrate(args.database_url)
    for m in applied:
        print(f"applied {m.version:04d}_{m.name}")
    if not applied:
        print("schema is up to date")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tms", description="TMS operator command line",
                formatter_class=argparse.RawDescriptionHelpFormatter,
                epilog=EXIT_CODES_HELP + "\n\nexamples and output formats: "
                       "pydoc tms_services.cli")
    add_connection_options(p, defaults=True)
    common = _Parser(add_help=False)
    add_connection_options(common, defaults=False)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True,
                           help="what to do (each has --help)")
    m = sub.add_parser("migrate", help="apply pending schema migrations (talks to PostgreSQL)")
    m.add_argument("--database-url", default=os.environ.get(ENV_DATABASE_URL),
                   help=f"PostgreSQL URL (env {ENV_DATABASE_URL})")
    m.set_defaults(fn=None)
    cli_tables.add_parsers(sub, common)
    cli_explain.add_parsers(sub, common)
    cli_operations.add_parsers(sub, common)
    cli_commits.add_parsers(sub, common)
    cli_queues.add_parsers(sub, common)
    cli_catalogs.add_parsers(sub, common)
    cli_watch.add_parsers(sub, common)
    cli_status.add_parsers(sub, common)
    return p


def run(argv: list[str]) -> int:
    """Parse, dispatch, and turn every failure into its exit code and one report."""
    as_json = JSON_FLAG in argv
    args: argparse.Namespace | None = None
    try:
        args = build_parser().parse_args(argv)
        if args.fn is None:
            return _migrate(args)
        with connect(args) as client:
            code: int = args.fn(client, args)
            return code
    except _UsageError as e:
        if not as_json:
            e.parser.print_usage(sys.stderr)
        usage_error(f"{e.parser.prog}: {e.message}").report(as_json)
        return EXIT_USAGE
    except CliError as e:
        e.report(as_json)
        return e.exit_code
    except TmsError as e:
        err = from_tms_error(e, args.api if args is not None else "")
        err.report(as_json)
        return err.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()  # the reader (`| head`) has what it wanted
        return EXIT_OK


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> None:
    sys.exit(run(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
