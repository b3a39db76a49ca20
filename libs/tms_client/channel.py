"""Connection settings shared by the sync and asyncio clients: target, token, TLS, deadlines.

The channel reconnects quickly after TMS comes back (short reconnect backoff): a client whose
server restarted should not sit out gRPC's default backoff of up to two minutes while its own
retry budget runs out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import grpc

from tms_client.retry import RetryPolicy

DEFAULT_DEADLINE_S = 10.0
INITIAL_RECONNECT_BACKOFF_MS = 100
MIN_RECONNECT_BACKOFF_MS = 100
MAX_RECONNECT_BACKOFF_MS = 2_000
KEEPALIVE_TIME_MS = 30_000
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # the API's own receive limit

CHANNEL_OPTIONS: list[tuple[str, int]] = [
    ("grpc.initial_reconnect_backoff_ms", INITIAL_RECONNECT_BACKOFF_MS),
    ("grpc.min_reconnect_backoff_ms", MIN_RECONNECT_BACKOFF_MS),
    ("grpc.max_reconnect_backoff_ms", MAX_RECONNECT_BACKOFF_MS),
    ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
]


@dataclass(frozen=True)
class TlsOptions:
    """Server verification (``root_certs``; None = the system roots) and, for mutual TLS,
    the client's own certificate chain and key (PEM bytes)."""

    root_certs: bytes | None = None
    client_cert: bytes | None = None
    client_key: bytes | None = None
    server_name_override: str | None = None  # e.g. a test certificate's host name

    def __post_init__(self) -> None:
        if (self.client_cert is None) != (self.client_key is None):
            raise ValueError("give both client_cert and client_key, or neither")

    @classmethod
    def from_files(cls, root_certs: Path | None = None, client_cert: Path | None = None,
                   client_key: Path | None = None) -> TlsOptions:
        def read(p: Path | None) -> bytes | None:
            return p.read_bytes() if p is not None else None

        return cls(read(root_certs), read(client_cert), read(client_key))

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(self.root_certs, self.client_key, self.client_cert)


@dataclass(frozen=True)
class ClientOptions:
    """Everything a client needs to reach TMS. ``deadline_s`` is per attempt; the retry
    policy's ``total_timeout_s`` bounds the call including retries."""

    target: str
    token: str | None = None
    tls: TlsOptions | None = None
    deadline_s: float = DEFAULT_DEADLINE_S
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def __post_init__(self) -> None:
        if not self.target:
            raise ValueError("target is required (host:port)")
        if self.deadline_s <= 0:
            raise ValueError("deadline_s must be positive")
        if self.token is not None and ("\n" in self.token or "\r" in self.token):
            raise ValueError("token must be a single line")

    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()

    def _options(self) -> list[tuple[str, int | str]]:
        opts: list[tuple[str, int | str]] = list(CHANNEL_OPTIONS)
        if self.tls is not None and self.tls.server_name_override:
            opts.append(("grpc.ssl_target_name_override", self.tls.server_name_override))
        return opts

    def sync_channel(self) -> grpc.Channel:
        if self.tls is None:
            return grpc.insecure_channel(self.target, options=self._options())
        return grpc.secure_channel(self.target, self.tls.credentials(), options=self._options())

    def aio_channel(self) -> grpc.aio.Channel:
        if self.tls is None:
            return grpc.aio.insecure_channel(self.target, options=self._options())
        return grpc.aio.secure_channel(self.target, self.tls.credentials(),
                                       options=self._options())
