"""The ``tms`` command: the parser of every subcommand, dispatch, and exit codes.

The usage and output conventions are in the package docstring (``pydoc tms_services.cli``)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn

from tms_client import TmsError
from tms_services.cli import (
    catalogs,
    commits,
    explain,
    operations,
    queues,
    status,
    tables,
    watch,
)
from tms_services.cli.client import add_connection_options, connect
from tms_services.cli.errors import (
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
    tables.add_parsers(sub, common)
    explain.add_parsers(sub, common)
    operations.add_parsers(sub, common)
    commits.add_parsers(sub, common)
    queues.add_parsers(sub, common)
    catalogs.add_parsers(sub, common)
    watch.add_parsers(sub, common)
    status.add_parsers(sub, common)
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
        err = from_tms_error(e, args.api if args is not None else "",
                             bool(args.token) if args is not None else None)
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

