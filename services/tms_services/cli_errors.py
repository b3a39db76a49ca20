"""Exit codes and error reports of the ``tms`` CLI.

Scripts branch on the exit code, so each gRPC status maps to one of a few stable codes, and the
error itself goes to stderr in one line a person can act on: the status, the server's message,
and every field the server's ``google.rpc.BadRequest`` names (so "which flag was wrong" needs no
second look). With ``--json`` the same facts go to stderr as one JSON document.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

EXIT_OK = 0
EXIT_SERVER = 1  # UNAVAILABLE, INTERNAL, DEADLINE_EXCEEDED and anything unclassified
EXIT_USAGE = 2  # argparse usage errors, bad local input, INVALID_ARGUMENT
EXIT_NOT_FOUND = 3
EXIT_CONFLICT = 4  # ALREADY_EXISTS, FAILED_PRECONDITION, ABORTED
EXIT_AUTH = 5  # UNAUTHENTICATED, PERMISSION_DENIED
EXIT_INTERRUPTED = 130  # Ctrl-C outside `tms watch` (128 + SIGINT, as shells report it)

_EXIT_BY_STATUS: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.INVALID_ARGUMENT: EXIT_USAGE,
    grpc.StatusCode.OUT_OF_RANGE: EXIT_USAGE,
    grpc.StatusCode.NOT_FOUND: EXIT_NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS: EXIT_CONFLICT,
    grpc.StatusCode.FAILED_PRECONDITION: EXIT_CONFLICT,
    grpc.StatusCode.ABORTED: EXIT_CONFLICT,
    grpc.StatusCode.UNAUTHENTICATED: EXIT_AUTH,
    grpc.StatusCode.PERMISSION_DENIED: EXIT_AUTH,
}

# Codes a live view may outlast: the next refresh can succeed without anyone acting.
TRANSIENT = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                       grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.ABORTED,
                       grpc.StatusCode.INTERNAL})

EXIT_CODES_HELP = """\
exit codes:
  0  success
  1  server-side failure (UNAVAILABLE, INTERNAL, DEADLINE_EXCEEDED, ...)
  2  usage error, or INVALID_ARGUMENT (the fields at fault are named on stderr)
  3  NOT_FOUND
  4  conflict: ALREADY_EXISTS, FAILED_PRECONDITION
  5  UNAUTHENTICATED, PERMISSION_DENIED
  130 interrupted (Ctrl-C), except `tms watch`, which ends with 0"""


def exit_code(code: grpc.StatusCode) -> int:
    return _EXIT_BY_STATUS.get(code, EXIT_SERVER)


@dataclass(eq=False)
class CliError(Exception):
    """Anything the CLI reports instead of a result: a failed call or refused local input."""

    code: str  # a gRPC status name, or USAGE for input refused before any call
    message: str
    exit_code: int
    reason: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    field_violations: list[dict[str, str]] = field(default_factory=list)

    def __str__(self) -> str:
        return self.line()

    def line(self) -> str:
        """One line: status, (reason when it adds something), then the violations if any
        (they say more than the message, which repeats only the first three)."""
        head = self.code
        if self.reason and self.reason != self.code:
            head += f" ({self.reason})"
        if self.field_violations:
            body = "; ".join(f"{v['field']}: {v['description']}" for v in self.field_violations)
        else:
            body = self.message
        return f"tms: {head}: {body}"

    def report(self, as_json: bool, stream: TextIO | None = None) -> None:
        out = stream or sys.stderr
        if as_json:
            print(json.dumps({"error": asdict(self)}, sort_keys=True), file=out)
        else:
            print(self.line(), file=out)


def usage_error(message: str) -> CliError:
    return CliError("USAGE", message, EXIT_USAGE)


def from_rpc_error(err: grpc.RpcError) -> CliError:
    """The status of a failed call with its ErrorInfo and BadRequest details unpacked."""
    code: grpc.StatusCode = err.code()  # type: ignore[attr-defined]
    message: str = err.details() or ""  # type: ignore[attr-defined]
    error = CliError(code.name, message, exit_code(code))
    try:
        status = rpc_status.from_call(err)  # type: ignore[arg-type]
    except ValueError:  # a status whose details disagree with its code: keep code and message
        status = None
    for detail in status.details if status is not None else []:
        _unpack(detail, error)
    return error


def _unpack(detail: Any, error: CliError) -> None:
    if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
        info = error_details_pb2.ErrorInfo()
        detail.Unpack(info)
        error.reason, error.metadata = info.reason, dict(info.metadata)
    elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
        bad = error_details_pb2.BadRequest()
        detail.Unpack(bad)
        error.field_violations += [{"field": v.field, "description": v.description}
                                   for v in bad.field_violations]
