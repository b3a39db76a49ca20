"""The report intake's cost per report, measured: the API's CPU time to parse a batch of
engines' Iceberg scan reports and fold it into read statistics on a real PostgreSQL, beside
the floor of just decoding the same batch's JSON, in the same run (docs/reads.md).

Starts a throw-away PostgreSQL, migrates it, registers ``--tables`` tables, then takes
``--batches`` batches of ``--batch`` scan reports (each naming one of the tables, with a
filter of two to four predicates, as Iceberg 1.10 writes them) through ``ReportIntake.take``
and reports this process's CPU time per report (``time.process_time``: the statements'
server time is PostgreSQL's, not the API's).

    python bench/report_intake_bench.py [--tables 100] [--batch 200] [--batches 50]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

import psycopg

from tms.api.auth import ANONYMOUS_ADMIN
from tms.api.report_intake import ReportIntake
from tms.local.postgres import LocalPostgres
from tms.reads.reports import parse_batch
from tms.storage.migrate import migrate
from tms.storage.postgres import PostgresStore

# bulk rows of the bench's own scratch database, not the service's queries
CATALOG_SQL = "INSERT INTO tms_catalogs (catalog_id, type) VALUES ('lake', 'sql')"
TABLES_SQL = """
INSERT INTO tms_tables (table_id, format, catalog, namespace, table_name)
SELECT 't' || i, 'iceberg', 'lake', 'db', 't' || i FROM generate_series(1, %(n)s) i;
"""
COLUMNS = ("event_time", "user_id", "kind", "country", "amount", "session")
OPS = ("eq", "lt", "gt-eq", "in", "is-null")


def scan(rng: random.Random, tables: int) -> dict[str, object]:
    node: object = {"type": "true"}
    for column in rng.sample(COLUMNS, rng.randint(2, 4)):
        op = rng.choice(OPS)
        pred: dict[str, object] = {"type": op, "term": column}
        if op == "in":
            pred["values"] = ["(hash-1a2b3c4d)", "(hash-5e6f7a8b)"]
        elif op != "is-null":
            pred["value"] = "(hash-1a2b3c4d)"
        node = {"type": "and", "left": node, "right": pred}
    total = rng.randint(10, 500)
    kept = rng.randint(1, total)
    return {"report-type": "scan-report", "table-name": f"spark.db.t{rng.randint(1, tables)}",
            "snapshot-id": rng.getrandbits(62), "filter": node, "schema-id": 0,
            "projected-field-ids": [1, 2, 3], "projected-field-names": list(COLUMNS[:3]),
            "metrics": {"result-data-files": {"unit": "count", "value": kept},
                        "skipped-data-files": {"unit": "count", "value": total - kept},
                        "total-file-size-in-bytes": {"unit": "bytes", "value": kept << 20},
                        "total-data-manifests": {"unit": "count", "value": 4},
                        "skipped-data-manifests": {"unit": "count", "value": 1}},
            "metadata": {"engine-name": "spark", "engine-version": "3.5.9"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--batches", type=int, default=50)
    args = parser.parse_args()
    rng = random.Random(7)
    bodies = [json.dumps({"catalog": "lake", "reports": [
        scan(rng, args.tables) for _ in range(args.batch)]}).encode()
        for _ in range(args.batches)]
    root = Path(tempfile.mkdtemp(prefix="tms-report-bench-"))
    root.chmod(0o755)
    server = LocalPostgres(root / "pg").start()
    try:
        dsn = server.create_database("reports")
        migrate(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(CATALOG_SQL)
            conn.execute(TABLES_SQL, {"n": args.tables})
        store = PostgresStore(dsn)
        intake = ReportIntake(store)
        intake.take(ANONYMOUS_ADMIN, parse_batch(bodies[0]))  # warm: pool, statements
        floor_cpu = time.process_time()
        for body in bodies:
            json.loads(body)
        floor_cpu = time.process_time() - floor_cpu
        cpu, wall = time.process_time(), time.perf_counter()
        taken = 0
        for body in bodies:
            taken += intake.take(ANONYMOUS_ADMIN, parse_batch(body)).scans
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        store.close()
    finally:
        server.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
    n = args.batch * args.batches
    print(f"reports              {n:,} in {args.batches} batches of {args.batch} "
          f"({args.tables} tables); taken {taken:,}")
    print(f"API CPU per report   {cpu / n * 1e3:.3f} ms (wall {wall / n * 1e3:.3f} ms)")
    print(f"JSON decode floor    {floor_cpu / n * 1e3:.3f} ms per report; intake / floor "
          f"{cpu / floor_cpu:.1f}x")


if __name__ == "__main__":
    main()
