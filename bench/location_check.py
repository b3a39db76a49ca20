"""Benchmark of the location overlap check: what registering a table and the scheduler's
first look at it (``table_set_location``) cost with N tables already registered.

Both compare a table's location with every other table's under one advisory lock, so their
cost per call decides how fast a scheduler can take in a large catalog for the first time.
One run starts a throw-away PostgreSQL on 127.0.0.1, then for this tree (and, with
``--baseline-src DIR``, another source tree such as a ``git worktree`` of an older commit,
in the same run on the same server) registers ``--tables`` tables through the store, then
moves ``--moves`` of them to new locations, and prints milliseconds per call and the ratio.

    .venv/bin/python -m bench.location_check [--tables 20000] [--baseline-src ../base]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUARTERS = 4


def child(dsn: str, tables: int, moves: int) -> dict[str, object]:
    """Runs inside the measured tree (PYTHONPATH points at its libs)."""
    from tms.domain import TableSpec
    from tms.domain.catalogs import CatalogSpec, CatalogType
    from tms.storage.migrate import migrate
    from tms.storage.postgres import PostgresStore

    migrate(dsn)
    store = PostgresStore(dsn)
    store.catalog_create(CatalogSpec("lake", CatalogType.SQL,
                                     properties={"uri": "postgresql://127.0.0.1/none"},
                                     allowed_locations=("file:///w",)))
    per_quarter: list[float] = []
    step = max(1, tables // QUARTERS)
    start = time.perf_counter()
    for i in range(tables):
        store.table_register(TableSpec(f"t{i}", "iceberg", "lake", "ns", f"t{i}"),
                             location=f"file:///w/ns/t{i}")
        if (i + 1) % step == 0:
            per_quarter.append((time.perf_counter() - start) / step * 1000)
            start = time.perf_counter()
    views = [store.table_get(f"t{i}") for i in range(0, tables, max(1, tables // moves))]
    start = time.perf_counter()
    for k, view in enumerate(views):
        assert view is not None
        if store.table_set_location(view.table.pk, f"file:///w/moved/t{k}") is not None:
            raise SystemExit("a move clashed: the check is wrong")
    move_ms = (time.perf_counter() - start) / len(views) * 1000
    store.close()
    return {"register_ms_per_quarter": per_quarter, "set_location_ms": move_ms}


def measure(src: Path, dsn: str, tables: int, moves: int) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=f"{src / 'libs'}:{src / 'services'}:{ROOT}")
    out = subprocess.run([sys.executable, "-m", "bench.location_check", "--child", dsn,
                          "--tables", str(tables), "--moves", str(moves)],
                         env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"measuring {src} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tables", type=int, default=20000)
    p.add_argument("--moves", type=int, default=200)
    p.add_argument("--baseline-src", type=Path)
    p.add_argument("--child", metavar="DSN", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.tables < QUARTERS or args.moves < 1:
        p.error("--tables must be >= 4 and --moves >= 1")
    if args.child:
        print(json.dumps(child(args.child, args.tables, args.moves)))
        return
    from tms.local.postgres import LocalPostgres

    pg = LocalPostgres(Path(tempfile.mkdtemp(prefix="tms-locbench-"))).start()
    try:
        trees = [("this tree", ROOT)]
        if args.baseline_src is not None:
            trees.insert(0, ("baseline", args.baseline_src.resolve()))
        results = {}
        for i, (label, src) in enumerate(trees):
            results[label] = measure(src, pg.create_database(f"bench{i}"), args.tables,
                                     args.moves)
            r = results[label]
            quarters = ", ".join(f"{ms:.2f}" for ms in r["register_ms_per_quarter"])  # type: ignore[attr-defined]
            print(f"{label:10} register ms/call per quarter of {args.tables}: {quarters}; "
                  f"set_location {r['set_location_ms']:.2f} ms/call")
        if "baseline" in results:
            before, after = results["baseline"], results["this tree"]
            moved = float(after["set_location_ms"]) / float(before["set_location_ms"])  # type: ignore[arg-type]
            last = (after["register_ms_per_quarter"][-1]  # type: ignore[index]
                    / before["register_ms_per_quarter"][-1])  # type: ignore[index]
            print(f"set_location after/before: {moved:.3f}; "
                  f"last-quarter register after/before: {last:.3f}")
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
