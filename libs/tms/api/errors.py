"""API errors as google.rpc.Status with ErrorInfo and BadRequest details (AIP-193).

Handlers raise :class:`ApiError`; the servicer's wrapper turns it into a status. Anything else
that escapes is a bug, except a lost database, which is UNAVAILABLE (clients may retry).
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

ERROR_DOMAIN = "tms.v1"


class ApiError(Exception):
    def __init__(self, code: grpc.StatusCode, message: str, reason: str,
                 violations: Sequence[tuple[str, str]] = (),
                 metadata: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason
        self.violations = list(violations)
        self.metadata = metadata or {}

    def to_status(self) -> grpc.Status:
        details = []
        info = any_pb2.Any()
        info.Pack(error_details_pb2.ErrorInfo(reason=self.reason, domain=ERROR_DOMAIN,
                                              metadata=self.metadata))
        details.append(info)
        if self.violations:
            br = error_details_pb2.BadRequest(field_violations=[
                error_details_pb2.BadRequest.FieldViolation(field=f, description=d)
                for f, d in self.violations
            ])
            packed = any_pb2.Any()
            packed.Pack(br)
            details.append(packed)
        code = getattr(code_pb2, self.code.name)
        return rpc_status.to_status(status_pb2.Status(code=code, message=self.message,
                                                      details=details))


MAX_VIOLATIONS = 20  # the details travel in a header; clients refuse headers over 16 KiB
MAX_VIOLATION_CHARS = 300


ELLIPSIS = "..."


def clip(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, cut after a whole word and marked ``...``
    when it had to be cut (a description cut mid-word reads as a different word)."""
    if len(text) <= limit:
        return text
    head = text[:limit - len(ELLIPSIS)]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip(" ,;") + ELLIPSIS


def invalid(violations: Sequence[tuple[str, str]]) -> ApiError:
    first = "; ".join(f"{f}: {d}" for f, d in violations[:3])
    more = f" (and {len(violations) - 3} more)" if len(violations) > 3 else ""
    kept = [(f[:MAX_VIOLATION_CHARS], clip(d, MAX_VIOLATION_CHARS))
            for f, d in violations[:MAX_VIOLATIONS]]
    return ApiError(grpc.StatusCode.INVALID_ARGUMENT,
                    clip(f"invalid request: {first}{more}", 2 * MAX_VIOLATION_CHARS),
                    "INVALID_ARGUMENT", kept)


def not_found(resource: str) -> ApiError:
    return ApiError(grpc.StatusCode.NOT_FOUND, f"{resource} not found", "NOT_FOUND",
                    metadata={"resource": resource})


def already_exists(resource: str) -> ApiError:
    return ApiError(grpc.StatusCode.ALREADY_EXISTS, f"{resource} already exists",
                    "ALREADY_EXISTS", metadata={"resource": resource})


def unavailable(message: str) -> ApiError:
    return ApiError(grpc.StatusCode.UNAVAILABLE, message, "BACKEND_UNAVAILABLE")
