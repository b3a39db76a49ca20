"""The job's side of ReportJobResult: send the outcome to the TMS API, not to a file.

The driver may run on a cluster node (deploy mode ``cluster``), where nothing it writes reaches
the executor's disk. The spec's ``report`` says where (``target``, TLS with ``ca_file``) and
for which attempt; the attempt's token comes from the environment (``TMS_JOB_TOKEN``: the
executor's child environment in client mode, the driver pod's or YARN master's environment in
cluster mode), never from the command line.

This module runs in the job's driver (a cluster has no TMS installed), so it does not use TMS's
generated protobuf code: the request (four scalar fields) is encoded here by hand and sent with
grpcio's raw-bytes calls. grpcio must be importable by the driver's Python (the TMS image and
the executor's virtualenv have it). Standard library otherwise.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import Any

ENV_JOB_TOKEN = "TMS_JOB_TOKEN"
METHOD = "/tms.v1.TableManagementService/ReportJobResult"
MAX_RESULT_JSON_BYTES = 256 * 1024  # the API refuses more
CALL_TIMEOUT_S = 20.0
RETRY_ATTEMPTS = 5  # UNAVAILABLE / DEADLINE_EXCEEDED only; about a minute in all
RETRY_BASE_DELAY_S = 1.0
MAX_TARGET_CHARS = 512


class ReportError(RuntimeError):
    """The result could not be reported (the executor then reads the driver log)."""


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _string_field(number: int, value: str) -> bytes:
    data = value.encode()
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def encode_request(operation: str, attempt: int, token: str, result_json: str) -> bytes:
    """``tms.v1.ReportJobResultRequest`` in protobuf's wire format (fields 1-4)."""
    return (_string_field(1, operation) + _varint(2 << 3) + _varint(attempt)
            + _string_field(3, token) + _string_field(4, result_json))


def parse_report(raw: Any) -> dict[str, Any] | None:
    """The spec's ``report`` section, checked; None when absent (the job writes a file)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError("report must be an object")
    target, operation, attempt = raw.get("target"), raw.get("operation"), raw.get("attempt")
    if not isinstance(target, str) or not 0 < len(target) <= MAX_TARGET_CHARS \
            or any(c.isspace() for c in target):
        raise ValueError("report.target must be a host:port")
    if not isinstance(operation, str) or not operation.startswith("tables/"):
        raise ValueError("report.operation must be tables/{table}/operations/{id}")
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise ValueError("report.attempt must be a positive integer")
    for key in ("ca_file", "server_name"):
        if key in raw and not isinstance(raw[key], str):
            raise ValueError(f"report.{key} must be a string")
    return dict(raw)


def result_json(payload: Mapping[str, Any]) -> str:
    """The payload as JSON within the API's limit: an oversize result is replaced by a
    failure saying so (the API would refuse it, and nothing would be reported at all)."""
    text = json.dumps(payload, default=str, allow_nan=False)
    if len(text.encode()) <= MAX_RESULT_JSON_BYTES:
        return text
    return json.dumps({"ok": False, "error_type": "ResultTooLarge", "retryable": False,
                       "error": f"the job's result is larger than {MAX_RESULT_JSON_BYTES} "
                                f"bytes; its action ran ({payload.get('ok')!r})",
                       "spark_app_id": payload.get("spark_app_id")})


def _channel(report: Mapping[str, Any]) -> Any:
    import grpc

    if not report.get("tls"):
        return grpc.insecure_channel(report["target"])
    with open(report["ca_file"], "rb") as f:
        roots = f.read()
    options = ([("grpc.ssl_target_name_override", report["server_name"])]
               if report.get("server_name") else [])
    return grpc.secure_channel(report["target"], grpc.ssl_channel_credentials(roots), options)


def send(report: Mapping[str, Any], payload: Mapping[str, Any],
         environ: Mapping[str, str] | None = None) -> bool:
    """Report ``payload``; True when the API took it (first time or a replay). ReportError
    when it was refused or the API stayed unreachable."""
    env = os.environ if environ is None else environ
    token = env.get(ENV_JOB_TOKEN, "")
    if not token:
        raise ReportError(f"{ENV_JOB_TOKEN} is not set: the job cannot report its result")
    try:
        import grpc
    except ImportError:
        raise ReportError("grpcio is not installed in the driver's Python: the job cannot "
                          "report its result (use the TMS image or install grpcio)") from None
    body = encode_request(report["operation"], int(report["attempt"]), token,
                          result_json(payload))
    retry_codes = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    with _channel(report) as channel:
        call = channel.unary_unary(METHOD)  # no serializers: bytes in, bytes out
        for attempt in range(1, RETRY_ATTEMPTS + 1):
            try:
                call(body, timeout=CALL_TIMEOUT_S)
                return True
            except grpc.RpcError as e:
                code = e.code() if hasattr(e, "code") else None
                if code not in retry_codes or attempt == RETRY_ATTEMPTS:
                    details = e.details() if hasattr(e, "details") else str(e)
                    raise ReportError(f"ReportJobResult failed: {code}: {details}") from None
                time.sleep(RETRY_BASE_DELAY_S * 2 ** (attempt - 1))
    return False
