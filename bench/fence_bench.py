"""What the deletion fence costs per change: deletes and renames through Hadoop's plain local
file system against TMS's fenced one (armed on the table), in one Spark JVM, alternating rounds
on fresh files. Prints microseconds per operation and the ratio; a benchmark, not a test.

    .venv/bin/python -m bench.fence_bench --files 5000 --rounds 3

The files lie in a table directory three levels deep (``t/data/p=N/``), as an expiry deletes
them; the fenced file system resolves each one's parent (symlinks followed) before the change.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tms.spark.settings import SparkSettings

REPO = Path(__file__).resolve().parents[1]
PROBE_TIMEOUT_S = 1800
PARTITIONS = 20

PROBE = r'''
import json, os, sys, time
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
jvm, gw = spark.sparkContext._jvm, spark.sparkContext._gateway
table, files, rounds, parts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
Path = jvm.org.apache.hadoop.fs.Path
conf = jvm.org.apache.hadoop.conf.Configuration(spark.sparkContext._jsc.hadoopConfiguration())
plain = jvm.org.apache.hadoop.fs.LocalFileSystem()
plain.initialize(jvm.java.net.URI("file:///"), conf)
fenced = Path("file:///").getFileSystem(conf)
roots = gw.new_array(gw.jvm.java.lang.String, 1)
roots[0] = "file://" + table


def make():
    paths = []
    for i in range(files):
        d = f"{table}/data/p={i % parts}"
        os.makedirs(d, exist_ok=True)
        p = f"{d}/f{i}.parquet"
        open(p, "wb").close()
        paths.append(p)
    return paths


def timed(fs, op):
    paths = make()
    jpaths = [Path("file://" + p) for p in paths]
    start = time.perf_counter()
    if op == "delete":
        for jp in jpaths:
            fs.delete(jp, False)
    else:
        for jp in jpaths:
            fs.rename(jp, Path(jp.toString() + ".moved"))
        for p in paths:
            os.unlink(p + ".moved")
    took = time.perf_counter() - start
    return took / files * 1e6


out = {"class": fenced.getClass().getName(), "rounds": []}
jvm.tms.fence.Fence.arm(roots)
timed(plain, "delete"); timed(fenced, "delete")  # warm-up: JIT, Py4J
for r in range(rounds):
    row = {}
    for op in ("delete", "rename"):
        row[f"plain_{op}_us"] = timed(plain, op)
        row[f"fenced_{op}_us"] = timed(fenced, op)
    out["rounds"].append(row)
jvm.tms.fence.Fence.disarm()
print("BENCH " + json.dumps(out))
spark.stop()
'''


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    home = Path(os.environ.get("TMS_HOME", REPO / ".tms"))
    settings = SparkSettings.from_env(home)
    with tempfile.TemporaryDirectory(prefix="tms-fence-bench-") as tmp:
        script = Path(tmp) / "probe.py"
        script.write_text(PROBE)
        table = Path(tmp) / "t"
        table.mkdir()
        proc = subprocess.run(settings.submit_argv(str(script), [
            str(table), str(args.files), str(args.rounds), str(PARTITIONS)]),
            env=settings.submit_env(os.environ), capture_output=True, text=True,
            timeout=PROBE_TIMEOUT_S)
    if proc.returncode != 0:
        print(proc.stderr[-4000:], file=sys.stderr)
        return 1
    out = json.loads(next(x for x in proc.stdout.splitlines()
                          if x.startswith("BENCH ")).removeprefix("BENCH "))
    print(f"file system: {out['class']}; {args.files} files per round in {PARTITIONS} "
          f"directories")
    print(f"{'round':>5} {'op':>7} {'plain us':>9} {'fenced us':>10} {'x':>6}")
    for i, row in enumerate(out["rounds"], 1):
        for op in ("delete", "rename"):
            plain, fenced = row[f"plain_{op}_us"], row[f"fenced_{op}_us"]
            print(f"{i:>5} {op:>7} {plain:>9.1f} {fenced:>10.1f} {fenced / plain:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
