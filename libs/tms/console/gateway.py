"""The console's only way to TMS: gRPC calls to tms-api carrying the signed-in user's token.

One channel per console process, shared by every request; the token travels per call, so the
console holds no authority of its own. Failures come back as :class:`tms_client.TmsError`
subclasses (the API's message, reason and field violations), so a page can show them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message

from tms.v1 import tms_pb2_grpc
from tms_client import TlsOptions, TmsError, UnavailableError
from tms_client.channel import ClientOptions
from tms_client.errors import DeadlineExceededError, from_rpc_error

CALL_TIMEOUT_S = 5.0  # a page waits this long for one answer before it says the API is lost


class ApiLost(Exception):
    """The API did not answer (not listening, TLS failure, deadline): every page shows a
    banner instead of its data."""

    def __init__(self, target: str, error: TmsError) -> None:
        super().__init__(f"{target}: {error}")
        self.target = target
        self.error = error


@dataclass
class Gateway:
    target: str
    tls: TlsOptions | None = None
    timeout_s: float = CALL_TIMEOUT_S

    def __post_init__(self) -> None:
        options = ClientOptions(self.target, None, self.tls)
        self._channel = options.sync_channel()
        self._stub = tms_pb2_grpc.TableManagementServiceStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def call(self, token: str, method: str, request: Message) -> Any:
        """One attempt of ``method`` with ``token``; raises :class:`ApiLost` when the API
        cannot be reached, else the API's own error as a ``TmsError``."""
        metadata = (("authorization", f"Bearer {token}"),) if token else ()
        try:
            return getattr(self._stub, method)(request, timeout=self.timeout_s,
                                               metadata=metadata)
        except grpc.RpcError as e:
            error = from_rpc_error(e)
            if isinstance(error, UnavailableError | DeadlineExceededError) \
                    and not _database_unavailable(error):
                raise ApiLost(self.target, error) from e
            raise error from e


def _database_unavailable(error: TmsError) -> bool:
    """The API answered, but its database is gone: that is the API's own error to show."""
    return "database" in error.message
