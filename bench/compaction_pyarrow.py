"""The floor of the compaction benchmark: read the input files with pyarrow and write them
again as target-size files with the input's codec, nothing else (no catalog, no commit).

Run by ``bench/compaction_bench.py`` as its own process so that its thread count and CPU
are its own::

    python -m bench.compaction_pyarrow --threads 1 --target-bytes N --out DIR LIST_FILE

``LIST_FILE`` names one input file per line. The rows are split evenly over
``ceil(input bytes / target)`` files (with the same codec the output is about as large as
the input), written one row group per 1 Mi rows, pyarrow's default.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def codec_of(path: str) -> str:
    return str(pq.ParquetFile(path).metadata.row_group(0).column(0).compression).lower()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--target-bytes", type=int, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("list_file", type=Path)
    args = p.parse_args(argv)
    pa.set_cpu_count(args.threads)
    pa.set_io_thread_count(args.threads)
    inputs = [line for line in args.list_file.read_text().splitlines() if line]
    size = sum(Path(f).stat().st_size for f in inputs)
    codec = codec_of(inputs[0])
    table = pq.read_table(inputs, use_threads=args.threads > 1)
    count = max(1, math.ceil(size / args.target_bytes))
    per_file = math.ceil(table.num_rows / count)
    args.out.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        part = table.slice(i * per_file, per_file)
        pq.write_table(part, args.out / f"part-{i:05d}.parquet", compression=codec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
