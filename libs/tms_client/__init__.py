"""The writer-side TMS client: tell TMS about commits, look at tables and operations.

Depends on grpcio, protobuf and the generated ``tms.v1`` code only, so writers (Spark jobs,
ingestion services, catalog hooks) can use it without the service's own dependencies.

* :class:`TmsClient` / :class:`AsyncTmsClient` — the API, with safe retries;
* :class:`CommitNotifier` — fire-and-forget ``notify()`` for a writer's commit path;
* :class:`CommitHook` — catalog commit events → NotifyCommits (see also
  ``python -m tms_client.cloudevents_receiver``).
"""

from tms_client.admin import PendingCall
from tms_client.aio import AsyncTmsClient
from tms_client.channel import DEFAULT_DEADLINE_S, ClientOptions, TlsOptions
from tms_client.client import TmsClient
from tms_client.commits import MAX_BATCH_COMMITS, Commit, CommitResult
from tms_client.errors import (
    AlreadyExistsError,
    CancelledError,
    DeadlineExceededError,
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    TmsError,
    UnauthenticatedError,
    UnavailableError,
)
from tms_client.events import EventError, EventMapping
from tms_client.hook import CommitHook, HookResult
from tms_client.notifier import CommitNotifier
from tms_client.retry import NO_RETRY, RetryPolicy, Safety
from tms_client.tally import DROP_REASONS, NotifierStats, OnDrop

__all__ = [
    "DEFAULT_DEADLINE_S", "DROP_REASONS", "MAX_BATCH_COMMITS", "NO_RETRY",
    "AlreadyExistsError", "AsyncTmsClient", "CancelledError", "ClientOptions", "Commit",
    "CommitHook", "CommitNotifier", "CommitResult", "DeadlineExceededError", "EventError",
    "EventMapping", "FailedPreconditionError", "FieldViolation", "HookResult",
    "InvalidArgumentError", "NotFoundError", "NotifierStats", "OnDrop", "PendingCall",
    "PermissionDeniedError", "RetryPolicy", "Safety", "TlsOptions", "TmsClient", "TmsError",
    "UnauthenticatedError", "UnavailableError",
]
