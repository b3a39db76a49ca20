"""ReportJobResult: the Spark job of a running attempt reports its outcome through the API.

The driver may run on a cluster node (deploy mode ``cluster``), so its result cannot come back
as a file on the executor's disk. The caller is a job, not a user: it has no bearer token but
the token its executor made for this one attempt (only its SHA-256 is stored). The token is
checked before anything about the attempt is said, the write is fenced (operation, attempt,
RUNNING, token digest, nothing reported yet), and the result is parsed strictly: a JSON object
within ``MAX_RESULT_JSON_BYTES``, no NaN or NUL (PostgreSQL's jsonb refuses both), nesting at
most ``MAX_RESULT_DEPTH`` deep, ``ok`` a boolean.
"""

from __future__ import annotations

import hmac
import json
import re
from typing import Any

import grpc

from tms.api import validate as v
from tms.api.auth import permission_denied
from tms.api.base import ServicerBase, job_rpc, log
from tms.api.errors import ApiError, invalid, not_found
from tms.domain.jobs import report_token_digest
from tms.v1 import tms_pb2

MAX_RESULT_JSON_BYTES = 256 * 1024
MAX_RESULT_DEPTH = 16
MAX_ATTEMPT = 2**31 - 1
_TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{16,128}$")


def _not_json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _depth(value: Any, limit: int) -> bool:
    """Whether ``value`` nests at most ``limit`` levels (checked iteratively)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((x, depth + 1) for x in item.values())
        elif isinstance(item, list):
            stack.extend((x, depth + 1) for x in item)
    return True


def parse_result(p: v.Problems, raw: str) -> dict[str, Any]:
    """The reported result, or {} with a problem naming ``result_json``."""
    field = "result_json"
    if not raw:
        p.append((field, "required"))
        return {}
    if len(raw.encode()) > MAX_RESULT_JSON_BYTES:
        p.append((field, f"larger than {MAX_RESULT_JSON_BYTES} bytes"))
        return {}
    if "\\u0000" in raw or "\x00" in raw:
        p.append((field, "must not contain NUL characters"))
        return {}
    try:
        data = json.loads(raw, parse_constant=_not_json_constant)
    except (ValueError, RecursionError) as e:
        p.append((field, f"not a JSON object: {str(e)[:100]}"))
        return {}
    if not isinstance(data, dict):
        p.append((field, "must be a JSON object"))
    elif not _depth(data, MAX_RESULT_DEPTH):
        p.append((field, f"nested deeper than {MAX_RESULT_DEPTH} levels"))
    elif not isinstance(data.get("ok"), bool):
        p.append((field, "must have a boolean 'ok'"))
    else:
        return data
    return {}


def _precondition(message: str) -> ApiError:
    return ApiError(grpc.StatusCode.FAILED_PRECONDITION, message, "ATTEMPT_NOT_RUNNING")


class JobResultsMixin(ServicerBase):
    @job_rpc
    def ReportJobResult(self, request: tms_pb2.ReportJobResultRequest,
                        context: grpc.ServicerContext) -> tms_pb2.ReportJobResultResponse:
        p: v.Problems = []
        table_id, op_id = v.operation_name(p, "operation", request.operation)
        if not 1 <= request.attempt <= MAX_ATTEMPT:
            p.append(("attempt", "must be 1 or more"))
        if not request.token:
            p.append(("token", "required"))
        elif not _TOKEN_RE.fullmatch(request.token):
            p.append(("token", "malformed"))
        result = parse_result(p, request.result_json)
        if p:
            raise invalid(p)
        name = f"{request.operation} attempt {request.attempt}"
        target = self.store.attempt_report_lookup(table_id, op_id, request.attempt)
        if target is None:
            raise not_found(name)
        digest = report_token_digest(request.token)
        if target.token_sha256 is None or not hmac.compare_digest(target.token_sha256, digest):
            log.warning("job result refused: wrong token", operation=request.operation,
                        attempt=request.attempt)
            raise permission_denied(f"the token is not the one of {name}")
        if not target.running:
            raise _precondition(f"{name} has ended; its result can no longer be reported")
        if target.reported is not None:
            return self._replayed(name, target.reported, result)
        if self.store.attempt_report_result(op_id, request.attempt, digest, result):
            log.info("job result reported", operation=request.operation,
                     attempt=request.attempt, ok=result["ok"])
            return tms_pb2.ReportJobResultResponse(first=True)
        again = self.store.attempt_report_lookup(table_id, op_id, request.attempt)
        if again is not None and again.running and again.reported is not None:
            return self._replayed(name, again.reported, result)
        raise _precondition(f"{name} ended while its result was reported")

    @staticmethod
    def _replayed(name: str, earlier: dict[str, Any], result: dict[str, Any]
                  ) -> tms_pb2.ReportJobResultResponse:
        """A report repeated after a lost answer is acknowledged; another result is not."""
        if earlier != result:
            raise _precondition(f"{name} has reported a different result already")
        return tms_pb2.ReportJobResultResponse(first=False)
