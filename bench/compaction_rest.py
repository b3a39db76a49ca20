"""A minimal Iceberg REST catalog in front of the benchmark's SQL catalog, for
``iceberg-compaction``, whose Python bindings reach only REST, Glue, Hive, S3 Tables or an
in-memory catalog.

Only what a compaction needs: config, namespace and table loads, and table commits, each
handed to pyiceberg's ``SqlCatalog`` on the same PostgreSQL database the other methods use,
so a commit through here is the same catalog row update as any other. 127.0.0.1 only; run
by ``bench/compaction_bench.py`` as its own process (its CPU is counted with the method's)::

    python -m bench.compaction_rest CATALOG_NAME PROPERTIES_JSON_FILE

It prints ``READY <port>`` once it serves, and stops on SIGTERM.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.table import CommitTableRequest

CATALOG: Any = None


def _table_json(location: str, metadata: Any) -> bytes:
    return (f'{{"metadata-location": {json.dumps(location)}, '
            f'"metadata": {metadata.model_dump_json(by_alias=True, exclude_none=True)}, '
            f'"config": {{}}}}').encode()


def _error(code: int, kind: str, message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": code}}).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, code: int, body: bytes = b"") -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _parts(self) -> list[str]:
        path = self.path.split("?", 1)[0]
        return [unquote(p) for p in path.strip("/").split("/")]

    def _ident(self, parts: list[str]) -> str | None:
        # v1[/prefix]/namespaces/NS/tables/T
        if "namespaces" in parts and "tables" in parts:
            i = parts.index("namespaces")
            if len(parts) == i + 4 and parts[i + 2] == "tables":
                return f"{parts[i + 1].replace(chr(0x1f), '.')}.{parts[i + 3]}"
        return None

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        parts = self._parts()
        if parts[-1] == "config":
            return self._send(200, b'{"defaults": {}, "overrides": {}}')
        ident = self._ident(parts)
        if ident is None and "namespaces" in parts:
            ns = parts[parts.index("namespaces") + 1:]
            if len(ns) == 1:
                return self._send(200, json.dumps({"namespace": ns[0].split("\x1f"),
                                                   "properties": {}}).encode())
            return self._send(200, b'{"namespaces": []}')
        if ident is None:
            return self._send(404, _error(404, "NotFoundException", self.path))
        try:
            table = CATALOG.load_table(ident)
        except NoSuchTableError as e:
            return self._send(404, _error(404, "NoSuchTableException", str(e)))
        self._send(200, _table_json(table.metadata_location, table.metadata))

    def do_POST(self) -> None:
        ident = self._ident(self._parts())
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if ident is None:
            return self._send(404, _error(404, "NotFoundException", self.path))
        try:
            request = CommitTableRequest.model_validate_json(body)
            table = CATALOG.load_table(ident)
            response = CATALOG.commit_table(table, request.requirements, request.updates)
        except NoSuchTableError as e:
            return self._send(404, _error(404, "NoSuchTableException", str(e)))
        except CommitFailedException as e:
            return self._send(409, _error(409, "CommitFailedException", str(e)))
        except Exception as e:  # what the client cannot fix: say it, as a server error
            return self._send(500, _error(500, type(e).__name__, str(e)))
        self._send(200, _table_json(response.metadata_location, response.metadata))


def main(argv: list[str]) -> int:
    global CATALOG
    name, props_file = argv
    CATALOG = load_catalog(name, **json.loads(Path(props_file).read_text()))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"READY {server.server_address[1]}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
