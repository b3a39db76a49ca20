"""Errors the client raises: one class per gRPC code a caller may want to handle differently.

Every error carries the gRPC code, the server's message, the ``ErrorInfo`` reason and the
``BadRequest`` field violations the API attaches (google.rpc.Status in the trailers), so a
caller can tell *which* field was wrong without parsing the message.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status


@dataclass(frozen=True)
class FieldViolation:
    """One field the server refused and why (google.rpc.BadRequest.FieldViolation)."""

    field: str
    description: str


class TmsError(Exception):
    """Base of every error the client raises for a failed call."""

    def __init__(self, code: grpc.StatusCode | None, message: str, reason: str = "",
                 violations: tuple[FieldViolation, ...] = (),
                 metadata: dict[str, str] | None = None) -> None:
        name = code.name if code is not None else "UNKNOWN"
        super().__init__(f"{name}: {message}")
        self.code = code
        self.message = message
        self.reason = reason
        self.violations = violations
        self.metadata = metadata or {}


class InvalidArgumentError(TmsError):
    """The request was refused as malformed; ``violations`` names the fields. Never retried."""


class NotFoundError(TmsError):
    """The table or operation does not exist."""


class AlreadyExistsError(TmsError):
    """The table id is taken, or an active operation exists for the action."""


class PermissionDeniedError(TmsError):
    """The token may not call this method or touch this table."""


class UnauthenticatedError(TmsError):
    """No token, or one the server does not know."""


class FailedPreconditionError(TmsError):
    """The resource is in a state that forbids the call (e.g. deregistering while running)."""


class UnavailableError(TmsError):
    """TMS could not be reached (or its database was lost) within the retry budget."""


class DeadlineExceededError(TmsError):
    """The call did not finish within its deadline (after any retries)."""


class CancelledError(TmsError):
    """The call was cancelled on this side (:meth:`PendingCall.cancel`, a closed channel)."""


_BY_CODE: dict[grpc.StatusCode, type[TmsError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.CANCELLED: CancelledError,
}
_BY_NUMBER: dict[int, grpc.StatusCode] = {c.value[0]: c for c in grpc.StatusCode}


def code_of(number: int) -> grpc.StatusCode | None:
    """The grpc.StatusCode for a google.rpc code number (None if unknown)."""
    return _BY_NUMBER.get(number)


def from_status(status: status_pb2.Status) -> TmsError:
    """An error from a google.rpc.Status (a call's trailers or a per-entry batch result)."""
    reason = ""
    metadata: dict[str, str] = {}
    violations: list[FieldViolation] = []
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason, metadata = info.reason, dict(info.metadata)
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            br = error_details_pb2.BadRequest()
            detail.Unpack(br)
            violations += [FieldViolation(v.field, v.description) for v in br.field_violations]
    code = code_of(status.code)
    cls = _BY_CODE.get(code, TmsError) if code is not None else TmsError
    return cls(code, status.message, reason, tuple(violations), metadata)


def from_rpc_error(error: grpc.RpcError) -> TmsError:
    """An error from a failed call, with the details the server put in its trailers.

    Works for sync (grpc.Call) and grpc.aio errors alike: both offer code(), details() and
    trailing_metadata() synchronously once the call has failed.
    """
    code: grpc.StatusCode | None = error.code()  # type: ignore[attr-defined]
    message = error.details() or ""  # type: ignore[attr-defined]
    try:
        status = rpc_status.from_call(error)  # type: ignore[arg-type]
    except ValueError:  # trailers disagreeing with the call's code: keep the call's view
        status = None
    if status is not None:
        return from_status(status)
    cls = _BY_CODE.get(code, TmsError) if code is not None else TmsError
    return cls(code, message)
