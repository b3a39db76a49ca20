"""tms: the operator's command line for TMS.

Every command but ``migrate`` talks to ``tms-api`` over gRPC. Output is an aligned table (or a
``key: value`` block for one resource) with times in UTC; ``--json`` prints the API's message
instead, as one JSON document with the proto field names (``tms watch --json``: one JSON line
per refresh), so scripts read the same schema as ``protos/tms/v1/tms.proto``.

Usage::

    export TMS_API=127.0.0.1:50051 TMS_TOKEN=...        # or --api / --token
    tms migrate --database-url postgresql://tms@127.0.0.1:5432/tms
    tms tables list [--state PAUSED] [--owner O] [--queue Q] [--format F] [--limit N | --all]
    tms tables show sales.orders
    tms tables register sales.orders --catalog lake --namespace sales --name orders \\
        --catalog-property type=rest --catalog-property uri=http://catalog:8181 \\
        --policy compaction.min-small-files=50 --owner team-a --queue batch --priority 10
    tms tables update sales.orders --priority 20 --policy compaction.min-small-files=30 \
        --unset-policy expire-snapshots.max-age-s      # only the flags given change
    tms tables pause sales.orders;  tms tables resume sales.orders   # resume releases holds
    tms tables held [sales.orders]    # actions held after failing too often in a row
    tms tables deregister sales.orders [--yes] [--force]   # asks unless --yes
    tms explain sales.orders [--policy]   # metrics, last decision per action, active operations
    tms operations list [--table T] [--state failed] [--action A] [--created-after "12 hours ago"]
    tms operations show tables/sales.orders/operations/42 [--logs]   # or the short sales.orders/42
    tms operations trigger sales.orders compaction --reason "before month-end" [--param k=v]
    tms operations cancel sales.orders/42;  tms operations retry sales.orders/42
    tms commits notify sales.orders 4385830383911 [--files-added 3] [--operation append]
    tms queues list;  tms queues set batch --max-running 2;  tms queues set batch --unlimited
    tms watch [--table T] [--state RUNNING] [--interval-s 2] [--once | --iterations N]
    tms catalogs create lake --type sql --property uri=postgresql+psycopg://tms@pg/lake \
        --secret jdbc.password=env:TMS_SECRET_LAKE_PG --allowed-location s3://lake/warehouse \
        --property warehouse=s3://lake/warehouse --discover --include 'sales.*'
    tms catalogs list;  tms catalogs get lake;  tms catalogs delete lake [--yes]
    tms catalogs update lake --unset-property warehouse --allowed-location s3://lake/more \
        --secret jdbc.password=file:lake-pg --no-discover   # only the flags given change

Times given (``--created-after``) are ISO 8601 or a span back from now (``12 hours ago``,
``2d``, ``1h30m``). ``operations show`` prints the log tail with ``--logs`` (unasked: the last
30 lines of an operation that did not succeed); ``explain`` prints the policy's table of every
key with ``--policy``. Operations are always printed by their full name,
``tables/{table}/operations/{id}``; input may use the short ``{table}/{id}``. Enum flags
(``--state``) take any case. Counts print as integers (``3``, never ``3.0``), in tables and in
JSON.

Global options (before or after the command): ``--api HOST:PORT``, ``http://HOST:PORT`` or
``https://HOST[:PORT]`` (TLS) (env ``TMS_API``, default 127.0.0.1:50051), ``--token`` (env
``TMS_TOKEN``, sent as ``authorization: Bearer ...``), ``--tls-ca PEM`` (env ``TMS_TLS_CA``)
and ``--tls-cert/--tls-key`` for mutual TLS, ``--timeout-s`` (per call, default 10),
``--json``.

Exit codes, stable for scripts: 0 success; 1 server-side failure (UNAVAILABLE, INTERNAL,
DEADLINE_EXCEEDED, ...); 2 usage error or INVALID_ARGUMENT; 3 NOT_FOUND; 4 ALREADY_EXISTS or
FAILED_PRECONDITION (a conflict: the operation is already active, the table is paused, ...);
5 UNAUTHENTICATED or PERMISSION_DENIED; 130 interrupted (``tms watch`` ends with 0 on Ctrl-C).
Errors are one line on stderr naming the status and every field the server refused
(``tms: INVALID_ARGUMENT: table_id: ...``); with ``--json``, a JSON document
``{"error": {"code", "exit_code", "message", "reason", "metadata", "field_violations"}}``.
An API nobody answers for is ``tms: UNAVAILABLE: cannot reach tms-api at HOST:PORT: ...``
(exit 1); ``tms migrate`` with a database that does not answer says so the same way.
"""

from __future__ import annotations

import os

# gRPC's C core logs to stderr on its own (a TLS handshake against a plaintext server, a
# refused connection); the CLI reports each failure once, as one line. The variable is read
# when grpc is first imported, so it is set before anything in this package imports grpc.
# An operator who wants the core's logs sets GRPC_VERBOSITY themselves.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

from tms_services.cli.entry import build_parser, main, run  # noqa: E402

__all__ = ["build_parser", "main", "run"]
