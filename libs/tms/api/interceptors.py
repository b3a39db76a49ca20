"""A request that cannot be decoded (truncated bytes, invalid UTF-8 in a string field) is the
client's fault, but grpc answers it with INTERNAL before any handler runs. The service's
handlers are therefore registered guarded (:func:`add_guarded`): each decodes its request
itself and answers INVALID_ARGUMENT instead.

The guard is built once, at registration. A ``grpc.ServerInterceptor`` doing the same ran on
every call (a lookup, two closures and a new method handler per call) and, being an
interceptor, also kept grpc from its direct lookup of registered methods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from tms.api.errors import invalid

MAX_DECODE_ERROR_CHARS = 200


class _Undecodable:
    __slots__ = ("error",)

    def __init__(self, error: str) -> None:
        self.error = error


def guard(method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """``handler`` (of the full ``method`` path) answering undecodable requests with
    INVALID_ARGUMENT; a handler that is not unary-unary is returned as it is."""
    if handler.unary_unary is None or handler.request_deserializer is None:
        return handler
    decode = handler.request_deserializer
    behavior = handler.unary_unary

    def safe_decode(data: bytes) -> Any:
        try:
            return decode(data)
        except Exception as e:  # protobuf raises DecodeError; be broad: it is input
            return _Undecodable(f"{type(e).__name__}: {e}"[:MAX_DECODE_ERROR_CHARS])

    def checked(request: Any, context: grpc.ServicerContext) -> Any:
        if request.__class__ is _Undecodable:
            context.abort_with_status(invalid([
                ("request", f"not a valid {method} message: {request.error}")]).to_status())
        return behavior(request, context)

    return grpc.unary_unary_rpc_method_handler(
        checked, request_deserializer=safe_decode,
        response_serializer=handler.response_serializer)


class _Recorder:
    """Stands in for the server while generated code registers a servicer."""

    def __init__(self) -> None:
        self.services: dict[str, dict[str, grpc.RpcMethodHandler]] = {}

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        pass  # the same handlers arrive by add_registered_method_handlers

    def add_registered_method_handlers(self, service: str,
                                       handlers: dict[str, grpc.RpcMethodHandler]) -> None:
        self.services[service] = dict(handlers)


def add_guarded(server: grpc.Server, add: Callable[[Any, Any], None], servicer: Any) -> None:
    """Register ``servicer`` as generated ``add_..._to_server`` would, every unary method
    guarded against undecodable requests."""
    recorder = _Recorder()
    add(servicer, recorder)
    if not recorder.services:
        raise RuntimeError("the generated code registered no service")
    for service, handlers in recorder.services.items():
        guarded = {name: guard(f"/{service}/{name}", h) for name, h in handlers.items()}
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, guarded),))
        server.add_registered_method_handlers(service, guarded)
