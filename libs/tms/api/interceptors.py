"""A request that cannot be decoded (truncated bytes, invalid UTF-8 in a string field) is the
client's fault, but grpc answers it with INTERNAL before any handler runs. This interceptor
decodes requests itself and answers INVALID_ARGUMENT instead."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from tms.api.errors import invalid

SERVICE_PREFIX = "/tms.v1."
MAX_DECODE_ERROR_CHARS = 200


class _Undecodable:
    __slots__ = ("error",)

    def __init__(self, error: str) -> None:
        self.error = error


class DecodeErrorInterceptor(grpc.ServerInterceptor):
    def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], Any],
                          handler_call_details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(handler_call_details)
        method = handler_call_details.method  # type: ignore[attr-defined]
        if (handler is None or not method.startswith(SERVICE_PREFIX)
                or handler.unary_unary is None or handler.request_deserializer is None):
            return handler
        decode = handler.request_deserializer
        behavior = handler.unary_unary

        def safe_decode(data: bytes) -> Any:
            try:
                return decode(data)
            except Exception as e:  # protobuf raises DecodeError; be broad: it is input
                return _Undecodable(f"{type(e).__name__}: {e}"[:MAX_DECODE_ERROR_CHARS])

        def checked(request: Any, context: grpc.ServicerContext) -> Any:
            if isinstance(request, _Undecodable):
                context.abort_with_status(invalid([
                    ("request", f"not a valid {method} message: {request.error}")]).to_status())
            return behavior(request, context)

        return grpc.unary_unary_rpc_method_handler(
            checked, request_deserializer=safe_decode,
            response_serializer=handler.response_serializer)
