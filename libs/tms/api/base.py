"""What every RPC handler shares: authentication, error mapping, table lookup with scope checks,
page tokens and request_id idempotency."""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Callable
from typing import Any, TypeVar

import grpc
import psycopg
import psycopg_pool
import structlog
from google.protobuf.message import Message
from opentelemetry.context import attach, detach
from opentelemetry.trace import SpanKind, set_span_in_context

from tms.api import pagination
from tms.api import validate as v
from tms.api.allowlist import RegistrationAllowlist
from tms.api.auth import Authenticator, Principal, permission_denied
from tms.api.batcher import CommitBatcher
from tms.api.commit_ids import CommitIdChecks
from tms.api.errors import ApiError, not_found, unavailable
from tms.domain import TableView
from tms.formats.base import TableFormatPlugin
from tms.observability.metrics import instruments
from tms.observability.tracing import context_from_metadata, quiet, quiet_span, tracer
from tms.storage.roles import ApiStore, TableGone

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
MAX_REQUEST_ID_LEN = 128

log = structlog.get_logger("tms.api")
R = TypeVar("R")


def rpc(fn: Callable[..., R]) -> Callable[..., R]:
    """Authenticate, authorize by method, run, and map every failure to a proper status."""
    return _handler(fn, bearer=True)


def job_rpc(fn: Callable[..., R]) -> Callable[..., R]:
    """As ``rpc`` for a method a Spark job calls: no bearer token (a driver on a cluster has
    none); the handler authenticates the request itself (a per-attempt token) and gets no
    principal."""
    return _handler(fn, bearer=False)


def _handler(fn: Callable[..., R], bearer: bool) -> Callable[..., R]:
    method = fn.__name__

    @functools.wraps(fn)
    def wrapper(self: ServicerBase, request: Any, context: grpc.ServicerContext) -> R:
        start = time.perf_counter()
        code = grpc.StatusCode.OK
        metadata = context.invocation_metadata()
        parent = context_from_metadata(metadata)  # type: ignore[arg-type]
        span = (quiet_span(parent) if quiet()
                else tracer().start_span(method, context=parent, kind=SpanKind.SERVER))
        token = attach(set_span_in_context(span))
        try:
            if not bearer:
                return fn(self, request, context)
            principal = self.auth.authenticate(metadata)  # type: ignore[arg-type]
            self.auth.authorize(principal, method)
            return fn(self, request, context, principal)
        except ApiError as e:
            code = e.code
            context.abort_with_status(e.to_status())
        except TableGone as e:  # deregistered under our feet
            code = grpc.StatusCode.NOT_FOUND
            context.abort_with_status(not_found(f"tables/{e}").to_status())
        except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as e:
            code = grpc.StatusCode.UNAVAILABLE
            log.warning("database unavailable", method=method, error=str(e))
            context.abort_with_status(unavailable("database unavailable, retry").to_status())
        except TimeoutError:  # the database took the whole deadline: retrying is safe
            code = grpc.StatusCode.UNAVAILABLE
            log.warning("database did not answer in time", method=method)
            context.abort_with_status(
                unavailable("the database did not answer in time, retry").to_status())
        except Exception:
            code = grpc.StatusCode.INTERNAL
            raise
        finally:
            m = instruments()
            m.api_requests.add(1, {"method": method, "code": code.name})
            m.api_request_duration.record(time.perf_counter() - start, {"method": method})
            span.set_attribute("rpc.grpc.status_code", code.value[0])
            detach(token)
            span.end()
        raise AssertionError("unreachable")  # abort_with_status always raises

    return wrapper


class ServicerBase:
    def __init__(self, store: ApiStore, formats: dict[str, TableFormatPlugin],
                 auth: Authenticator | None = None,
                 allowlist: RegistrationAllowlist | None = None) -> None:
        self.store = store
        self.formats = formats
        self.auth = auth or Authenticator.disabled()
        self.allowlist = allowlist or RegistrationAllowlist()
        self.batcher = CommitBatcher(store)
        self.commit_ids = CommitIdChecks(formats)

    def close(self) -> None:
        self.batcher.close()

    @staticmethod
    def check_scope(principal: Principal, table_id: str, owner: str | None) -> None:
        if not principal.allows(table_id, owner):
            raise permission_denied(f"token {principal.name!r} may not access "
                                    f"tables/{table_id}", table=f"tables/{table_id}")

    def load_table(self, table_id: str, principal: Principal, resource: str) -> TableView:
        """The table, or NOT_FOUND; PERMISSION_DENIED when outside the token's scope."""
        if principal.scoped and not principal.owner_scoped:
            self.check_scope(principal, table_id, None)  # before the lookup: no existence leak
        view = self.store.table_get(table_id)
        if view is None:
            raise not_found(resource)
        self.check_scope(principal, table_id, view.table.owner)
        return view

    @staticmethod
    def page_token(p: v.Problems, token: str, query: dict[str, Any], key_type: type,
                   default: Any, valid: Callable[[Any], bool]) -> Any:
        v.string(p, "page_token", token, v.MAX_PAGE_TOKEN_LEN)
        if not token or p:
            return default
        try:
            return pagination.decode(token, query, key_type, valid)
        except pagination.BadPageToken as e:
            p.append(("page_token", str(e)))
            return default

    def replay(self, request_id: str, method: str, request: Message) -> str | None:
        """Reserve ``request_id`` for this request. Returns the resource name the first call
        produced when this is a replay; None when the caller should do the work."""
        fingerprint = hashlib.sha256(request.SerializeToString(deterministic=True)).hexdigest()
        earlier = self.store.request_claim(request_id, method, fingerprint)
        if earlier is None:
            return None
        if earlier.method != method or earlier.fingerprint != fingerprint:
            raise ApiError(grpc.StatusCode.INVALID_ARGUMENT,
                           "request_id was already used for a different request",
                           "REQUEST_ID_REUSED", [("request_id", "already used")])
        if not earlier.resource:
            raise ApiError(grpc.StatusCode.ABORTED,
                           "a request with this request_id is still in progress; retry",
                           "REQUEST_IN_PROGRESS")
        return earlier.resource
