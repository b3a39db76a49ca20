"""tms-api: the stateless gRPC front door."""

from __future__ import annotations

import os

from tms.api.server import ApiServer
from tms.formats.registry import load_formats
from tms.observability import configure_logging
from tms.storage.postgres import PostgresStore
from tms_services.common import base_parser, require, stop_event_on_signals

DEFAULT_LISTEN = "127.0.0.1:50051"


def main(argv: list[str] | None = None) -> None:
    parser = base_parser("TMS API server")
    parser.add_argument("--listen", default=os.environ.get("TMS_API_LISTEN", DEFAULT_LISTEN))
    parser.add_argument("--no-reflection", action="store_true",
                        help="switch server reflection off")
    args = parser.parse_args(argv)
    require(args, parser, "database_url")
    configure_logging("tms-api")
    stop = stop_event_on_signals()
    store = PostgresStore(args.database_url, max_size=20)
    server = ApiServer(store, load_formats(), args.listen,
                       reflection_enabled=not args.no_reflection)
    server.start()
    stop.wait()
    server.stop()
    store.close()


if __name__ == "__main__":
    main()
