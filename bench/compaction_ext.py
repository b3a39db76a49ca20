"""The other compactors of the compaction benchmark, each run by the Python of its own
virtualenv (``bench/compaction_venvs.py``), never the project's: this file imports nothing
but the standard library until it knows which package to use.

    VENV/bin/python bench/compaction_ext.py iceberg-compaction REQUEST_JSON_FILE
    VENV/bin/python bench/compaction_ext.py iceberg-zamboni REQUEST_JSON_FILE

The request names the catalog (``name``, pyiceberg ``properties``; ``rest_uri`` for
iceberg-compaction, which reaches a REST catalog only), the table, the target file size and
the threads. Prints one JSON line: what the package says it did.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def iceberg_compaction(req: dict[str, Any]) -> dict[str, Any]:
    import iceberg_compaction as ic

    catalog = ic.RestCatalog(req["name"], uri=req["rest_uri"])
    config = ic.CompactionConfig(strategy="full", target_file_size_bytes=req["target_bytes"],
                                 max_input_parallelism=req["threads"],
                                 max_output_parallelism=req["threads"])
    result = ic.Compaction(catalog, req["table"], config).run()
    if result is None:
        return {"noop": True}
    return {"input_files": result.input_files_count, "output_files": result.output_files_count,
            "output_bytes": result.output_bytes_total}


def iceberg_zamboni(req: dict[str, Any]) -> dict[str, Any]:
    from pyiceberg.catalog import load_catalog
    from zamboni.compactor import TableCompactor
    from zamboni.config import CompactionConfig
    from zamboni.session import CatalogSession

    session = CatalogSession.from_catalog(load_catalog(req["name"], **req["properties"]),
                                          threads=req["threads"])
    config = CompactionConfig(target_file_size_bytes=req["target_bytes"],
                              skip_partitions_newer_than_windows=None)
    result = TableCompactor(session, req["table"], config).execute()
    return {"result": repr(result)[:500]}


METHODS = {"iceberg-compaction": iceberg_compaction, "iceberg-zamboni": iceberg_zamboni}


def main(argv: list[str]) -> int:
    method, request = argv
    with open(request) as f:
        req = json.load(f)
    print(json.dumps(METHODS[method](req)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
