"""CloudEvents-over-HTTP receiver: catalog commit events in, NotifyCommits to TMS out.

    python -m tms_client.cloudevents_receiver --listen 127.0.0.1:8090 --api tms-api:50051

Point a catalog's CloudEvents sink (or a Kafka / NATS → HTTP bridge) at it. It binds
127.0.0.1 unless told otherwise. Tokens come from the environment rather than the command
line, where other users of the machine could read them: ``TMS_TOKEN`` (the API bearer token;
``--token`` also works), ``TMS_RECEIVER_TOKEN`` (a bearer token senders must present).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from pathlib import Path
from types import FrameType

from tms_client.channel import DEFAULT_DEADLINE_S, TlsOptions
from tms_client.client import TmsClient
from tms_client.events import DEFAULT_TABLE_ID_TEMPLATE, DEFAULT_TYPE_MARKERS, EventMapping
from tms_client.hook import CommitHook
from tms_client.receiver_server import ReceiverServer
from tms_client.retry import RetryPolicy

DEFAULT_LISTEN = "127.0.0.1:8090"
# A sender waits for the answer: tell it 503 (deliver again later) well before it gives up.
DEFAULT_RETRY_TOTAL_S = 10.0

log = logging.getLogger("tms_client.receiver")


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` too) → (host, port)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected host:port, got {address!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tms_client.cloudevents_receiver",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", type=split_address, default=split_address(DEFAULT_LISTEN),
                   help=f"address to serve HTTP on (default {DEFAULT_LISTEN})")
    p.add_argument("--api", required=True, help="the TMS API, host:port")
    p.add_argument("--token", default=os.environ.get("TMS_TOKEN"),
                   help="API bearer token (default: $TMS_TOKEN)")
    p.add_argument("--tls-ca", type=Path, help="CA to verify the API with (enables TLS)")
    p.add_argument("--tls-cert", type=Path, help="client certificate (mutual TLS)")
    p.add_argument("--tls-key", type=Path, help="client key (mutual TLS)")
    p.add_argument("--deadline-s", type=float, default=DEFAULT_DEADLINE_S,
                   help="per-attempt deadline of API calls")
    p.add_argument("--retry-total-s", type=float, default=DEFAULT_RETRY_TOTAL_S,
                   help="how long to retry an unreachable API before answering 503 "
                        f"(default {DEFAULT_RETRY_TOTAL_S:g})")
    p.add_argument("--table-id-template", default=DEFAULT_TABLE_ID_TEMPLATE,
                   help="TMS table id from {namespace}, {name}, {warehouse}, {prefix} "
                        f"(default {DEFAULT_TABLE_ID_TEMPLATE})")
    p.add_argument("--commit-types", default=",".join(DEFAULT_TYPE_MARKERS),
                   help="comma-separated parts of event types that mean a commit "
                        "(case-insensitive)")
    p.add_argument("--keep-case", action="store_true",
                   help="do not lower-case table ids")
    p.add_argument("--log-level", default="INFO")
    return p.parse_args(argv)


def build_hook(args: argparse.Namespace) -> CommitHook:
    tls = None
    if args.tls_ca or args.tls_cert:
        tls = TlsOptions.from_files(args.tls_ca, args.tls_cert, args.tls_key)
    client = TmsClient(args.api, token=args.token, tls=tls, deadline_s=args.deadline_s,
                       retry=RetryPolicy(total_timeout_s=args.retry_total_s))
    markers = tuple(m.strip() for m in args.commit_types.split(",") if m.strip())
    mapping = EventMapping(markers, args.table_id_template, lowercase=not args.keep_case)
    return CommitHook(client, mapping, raise_errors=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        hook = build_hook(args)
    except (ValueError, OSError) as e:
        raise SystemExit(f"cloudevents_receiver: {e}") from None
    server = ReceiverServer(args.listen, hook, os.environ.get("TMS_RECEIVER_TOKEN") or None)

    def stop(signum: int, frame: FrameType | None) -> None:
        # shutdown() waits for serve_forever(), which runs on this very thread
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("receiving CloudEvents on http://%s:%d/, forwarding to %s",
             args.listen[0], server.port, args.api)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        if isinstance(hook.sink, TmsClient):
            hook.sink.close()


if __name__ == "__main__":
    main()
