"""tms-console: the web console, a stateless process in front of tms-api.

It reads and acts only through the gRPC API with each signed-in user's own token; it has no
database access and no authority of its own. Run as many as you like behind a load balancer,
with the same ``--session-key-file`` so any replica can open any browser's session cookie.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import structlog
import uvicorn

from tms.console import assets
from tms.console.app import build
from tms.console.gateway import CALL_TIMEOUT_S, Gateway
from tms.console.session import DEFAULT_SESSION_TTL_S, SessionCodec, SessionKeyError, load_key
from tms.console.web import Settings
from tms.observability.logs import configure_logging
from tms.observability.metrics import parse_listen
from tms_client import TlsOptions

DEFAULT_LISTEN = "127.0.0.1:8080"
DEFAULT_API = "127.0.0.1:50051"


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="tms-console", description="TMS web console")
    p.add_argument("--listen", default=_env("TMS_CONSOLE_LISTEN") or DEFAULT_LISTEN,
                   metavar="HOST:PORT", help=f"where browsers connect (default {DEFAULT_LISTEN})")
    p.add_argument("--tls-cert", default=_env("TMS_CONSOLE_TLS_CERT"),
                   help="serve HTTPS with this certificate chain (PEM); cookies become Secure")
    p.add_argument("--tls-key", default=_env("TMS_CONSOLE_TLS_KEY"))
    p.add_argument("--api", default=_env("TMS_API") or DEFAULT_API, metavar="HOST:PORT",
                   help=f"tms-api's address (env TMS_API, default {DEFAULT_API})")
    p.add_argument("--api-tls-ca", default=_env("TMS_API_TLS_CA"), metavar="PEM",
                   help="reach the API over TLS, trusting this CA")
    p.add_argument("--api-tls-cert", default=_env("TMS_API_TLS_CERT"), metavar="PEM",
                   help="client certificate for an API that requires mutual TLS")
    p.add_argument("--api-tls-key", default=_env("TMS_API_TLS_KEY"), metavar="PEM")
    p.add_argument("--api-timeout-s", type=float, default=CALL_TIMEOUT_S,
                   help="deadline of each API call a page makes")
    p.add_argument("--session-key-file", default=_env("TMS_CONSOLE_SESSION_KEY_FILE"),
                   help="32-byte key (raw, hex or base64) sealing session cookies; share it "
                        "between replicas. Unset: a random key per process")
    p.add_argument("--session-ttl-s", type=int, default=DEFAULT_SESSION_TTL_S,
                   help="how long a sign-in lasts")
    args = p.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        p.error("--tls-cert and --tls-key go together")
    if bool(args.api_tls_cert) != bool(args.api_tls_key):
        p.error("--api-tls-cert and --api-tls-key go together")
    if not args.api_timeout_s > 0 or args.session_ttl_s < 60:
        p.error("--api-timeout-s must be positive and --session-ttl-s at least 60")
    try:
        parse_listen(args.listen)
    except ValueError:
        p.error(f"--listen: expected host:port, got {args.listen!r}")
    return args


def _read(path: str | None) -> bytes | None:
    return Path(path).read_bytes() if path else None


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    configure_logging("tms-console")
    log = structlog.get_logger("tms.console")
    problems = assets.check()
    if problems:
        sys.exit("tms-console: vendored assets damaged: " + "; ".join(problems))
    try:
        key = load_key(Path(args.session_key_file) if args.session_key_file else None)
    except (OSError, SessionKeyError) as e:
        sys.exit(f"tms-console: --session-key-file: {e}")
    if not args.session_key_file:
        log.warning("no --session-key-file: sessions end when this process restarts and "
                    "are not shared with other replicas")
    tls = None
    if args.api_tls_ca or args.api_tls_cert:
        tls = TlsOptions(_read(args.api_tls_ca), _read(args.api_tls_cert),
                         _read(args.api_tls_key))
    secure = bool(args.tls_cert)
    settings = Settings(Gateway(args.api, tls, args.api_timeout_s),
                        SessionCodec(key, args.session_ttl_s), secure, args.api)
    host, port = parse_listen(args.listen)
    log.info("console listening", listen=args.listen, api=args.api, tls=secure)
    uvicorn.run(build(settings), host=host, port=port, ssl_certfile=args.tls_cert,
                ssl_keyfile=args.tls_key, log_level="warning", access_log=False,
                server_header=False, proxy_headers=False)


if __name__ == "__main__":
    main()
