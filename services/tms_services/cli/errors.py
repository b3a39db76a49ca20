"""Exit codes and error reports of the ``tms`` CLI.

Scripts branch on the exit code, so each kind of failure maps to one of a few stable codes,
and the error itself goes to stderr in one line a person can act on: the status, the server's
message, and every field the server refused (so "which flag was wrong" needs no second look).
With ``--json`` the same facts go to stderr as one JSON document.

Failed calls arrive as :class:`tms_client.TmsError` (the client already unpacked the
google.rpc.Status: reason, metadata, field violations); the exit code follows its class.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from typing import TextIO

import grpc

from tms_client import (
    AlreadyExistsError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    TmsError,
    UnauthenticatedError,
)

EXIT_OK = 0
EXIT_SERVER = 1  # UNAVAILABLE, INTERNAL, DEADLINE_EXCEEDED and anything unclassified
EXIT_USAGE = 2  # argparse usage errors, bad local input, INVALID_ARGUMENT
EXIT_NOT_FOUND = 3
EXIT_CONFLICT = 4  # ALREADY_EXISTS, FAILED_PRECONDITION, ABORTED
EXIT_AUTH = 5  # UNAUTHENTICATED, PERMISSION_DENIED
EXIT_INTERRUPTED = 130  # Ctrl-C outside `tms watch` (128 + SIGINT, as shells report it)

_EXIT_BY_CLASS: tuple[tuple[type[TmsError], int], ...] = (
    (InvalidArgumentError, EXIT_USAGE),
    (NotFoundError, EXIT_NOT_FOUND),
    (AlreadyExistsError, EXIT_CONFLICT),
    (FailedPreconditionError, EXIT_CONFLICT),
    (UnauthenticatedError, EXIT_AUTH),
    (PermissionDeniedError, EXIT_AUTH),
)
# Codes the client has no class for, that still are the caller's doing rather than the server's.
_EXIT_BY_CODE: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.OUT_OF_RANGE: EXIT_USAGE,
    grpc.StatusCode.ABORTED: EXIT_CONFLICT,
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


def exit_code(error: TmsError) -> int:
    for cls, code in _EXIT_BY_CLASS:
        if isinstance(error, cls):
            return code
    return _EXIT_BY_CODE.get(error.code, EXIT_SERVER) if error.code else EXIT_SERVER


@dataclass(eq=False)
class CliError(Exception):
    """Anything the CLI reports instead of a result: a failed call or refused local input."""

    code: str  # a gRPC status name, or USAGE for input refused before any call
    message: str
    exit_code: int
    reason: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    field_violations: list[dict[str, str]] = field(default_factory=list)
    hint: str = ""  # what the person at the terminal can do about it, when the CLI knows

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
        tail = f" ({self.hint})" if self.hint else ""
        return f"tms: {head}: {' '.join(body.split())}{tail}"

    def report(self, as_json: bool, stream: TextIO | None = None) -> None:
        out = stream or sys.stderr
        if as_json:
            print(json.dumps({"error": asdict(self)}, sort_keys=True), file=out)
        else:
            print(self.line(), file=out)


def usage_error(message: str) -> CliError:
    return CliError("USAGE", message, EXIT_USAGE)


ENV_TOKEN = "TMS_TOKEN"
NO_TOKEN_HINT = f"no token was sent: export {ENV_TOKEN}=<token> or pass --token"
BAD_TOKEN_HINT = (f"the token in {ENV_TOKEN} / --token was refused: check it is the whole "
                  "token and that tms-api still lists it")
DENIED_HINT = (f"the token in {ENV_TOKEN} / --token is not allowed to do this: an operator "
               "or admin token, or a table owner's token for its own tables")
# The C core's words for a TLS handshake that failed (TLS to a plaintext port, an untrusted
# CA): "Tls handshake failed (TSI_PROTOCOL_FAILURE): SSL_ERROR_SSL ...". Not "handshake" alone:
# a TCP connect that gave up reads "tcp handshaker shutdown".
TLS_WORDS = ("tls handshake", "ssl_error", "tsi_", "certificate")
TLS_HINT = ("the TLS handshake failed: is the server plaintext (use http:// or drop "
            "--tls-ca), or is its certificate signed by another CA than --tls-ca?")


def hint_of(err: TmsError, token_given: bool | None) -> str:
    """What to do about an authentication or connection failure (empty: nothing known)."""
    if err.code == grpc.StatusCode.UNAUTHENTICATED and token_given is not None:
        return BAD_TOKEN_HINT if token_given else NO_TOKEN_HINT
    if err.code == grpc.StatusCode.PERMISSION_DENIED:
        return DENIED_HINT
    if err.code == grpc.StatusCode.UNAVAILABLE and any(
            w in err.message.lower() for w in TLS_WORDS):
        return TLS_HINT
    return ""


def from_tms_error(err: TmsError, api: str = "", token_given: bool | None = None) -> CliError:
    """The report of a failed call. UNAVAILABLE says which address could not be reached,
    since that is the first thing to check (``--api`` / ``TMS_API``); UNAUTHENTICATED says
    whether a token was sent at all and where it comes from (``TMS_TOKEN``)."""
    name = err.code.name if err.code is not None else "UNKNOWN"
    message = err.message
    if err.code == grpc.StatusCode.UNAVAILABLE and api and not err.reason:
        message = f"cannot reach tms-api at {api}: {message}"
    return CliError(name, message, exit_code(err), err.reason, dict(err.metadata),
                    [{"field": v.field, "description": v.description} for v in err.violations],
                    hint_of(err, token_given))
