"""The compaction benchmark's tables and checks (``bench/compaction_bench.py``).

Tables are written once by pyiceberg, one commit per file, exactly as a streaming writer
leaves them; every method then compacts a *fresh copy*: the base table's metadata file
registered under a new name. Iceberg never changes a file it wrote, so a copy shares the
base's data and manifests and a compaction of the copy leaves the base untouched; what the
method wrote (new data files, manifests, metadata) is its own and is removed after the check.

The checks read the data files a copy's current snapshot lists with pyarrow: rows, an
order-independent checksum of every value of every row, the files' codec and sizes. Only
pyarrow and pyiceberg (no numpy: the project's venv has none).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("kind", pa.string()),
    pa.field("amount", pa.float64()),
    pa.field("user_id", pa.int64()),
    pa.field("ts", pa.timestamp("us", tz="UTC")),
])
KINDS = pa.array(["click", "view", "buy", "cart"])
TS0_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z
DAY_US = 86_400_000_000
USER_BITS = 16  # with random amounts: ~23 bytes a row in zstd parquet, like the table
MIX = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x27D4EB2F165667C5,
       0xFF51AFD7ED558CCD)
U64 = 2 ** 64


def batch(start: int, rows: int) -> pa.Table:
    """``rows`` rows, ids from ``start``: sequential ids, random amounts and users, times
    sorted within the batch (a writer's micro-batch)."""
    def rand() -> Any:
        return pc.random(rows)

    ts = pc.cast(pc.floor(pc.multiply(rand(), float(DAY_US))), pa.int64())
    ts = pc.take(pc.add(ts, TS0_US), pc.sort_indices(ts))
    return pa.table({
        "id": pa.array(range(start, start + rows), pa.int64()),
        "kind": pc.take(KINDS, pc.cast(pc.floor(pc.multiply(rand(), float(len(KINDS)))),
                                       pa.int64())),
        "amount": pc.multiply(rand(), 1000.0),
        "user_id": pc.cast(pc.floor(pc.multiply(rand(), float(2 ** USER_BITS))), pa.int64()),
        "ts": ts.cast(pa.timestamp("us", tz="UTC")),
    }, schema=SCHEMA)


def write_table(catalog: Any, identifier: str, commits: int, rows_per_commit: int) -> Any:
    """A table of ``commits`` pyiceberg appends of one file each (pyiceberg's defaults:
    zstd, no codec property in the table's metadata)."""
    namespace = identifier.rsplit(".", 1)[0]
    catalog.create_namespace_if_not_exists(namespace)
    table = catalog.create_table(identifier, schema=SCHEMA)
    for c in range(commits):
        table.append(batch(c * rows_per_commit, rows_per_commit))
    return table.refresh()


def local_path(uri: str) -> str:
    return urlparse(uri).path if uri.startswith("file:") else uri


@dataclass(frozen=True)
class Snapshot:
    """What a table's current snapshot holds: data file paths and sizes, delete files."""

    files: dict[str, int]  # local path -> bytes
    delete_files: int
    manifests: int
    snapshot_id: int | None


def snapshot_of(table: Any) -> Snapshot:
    table = table.refresh()
    snap = table.current_snapshot()
    if snap is None:
        return Snapshot({}, 0, 0, None)
    tasks = list(table.scan().plan_files())
    files = {local_path(t.file.file_path): t.file.file_size_in_bytes for t in tasks}
    deletes = sum(len(t.delete_files) for t in tasks)
    return Snapshot(files, deletes, len(snap.manifests(table.io)), snap.snapshot_id)


@dataclass(frozen=True)
class Content:
    """Rows, checksum and format of a set of parquet files."""

    rows: int
    checksum: str
    files: int
    bytes: int
    codecs: tuple[str, ...]
    largest: int
    smallest: int


def _u64(arr: Any) -> Any:
    return pc.cast(arr, pa.uint64(), safe=False)


def row_hashes_sum(t: pa.Table) -> int:
    """Sum, mod 2^64, of a per-row mix of every column (amount and ts by their bits, kind by
    its dictionary position): independent of row and file order, changed by any lost,
    duplicated or altered value."""
    kind = pc.index_in(t.column("kind"), value_set=KINDS)
    amount = _u64(t.column("amount").combine_chunks().view(pa.int64()))
    ts = _u64(t.column("ts").combine_chunks().view(pa.int64()))
    cols = [_u64(t.column("id")), _u64(pc.fill_null(kind, 99)), amount,
            _u64(t.column("user_id")), ts]
    h = pc.multiply(cols[0], pa.scalar(MIX[0], pa.uint64()))
    for col, k in zip(cols[1:], MIX[1:], strict=True):
        h = pc.bit_wise_xor(pc.multiply(h, pa.scalar(MIX[4], pa.uint64())),
                            pc.multiply(col, pa.scalar(k, pa.uint64())))
    total = pc.sum(h).as_py()
    return int(total or 0) % U64


def content(paths: Iterable[str]) -> Content:
    rows, total, size, codecs, sizes = 0, 0, 0, set(), []
    for path in paths:
        f = pq.ParquetFile(path)
        meta = f.metadata
        for rg in range(meta.num_row_groups):
            for c in range(meta.num_columns):
                codecs.add(meta.row_group(rg).column(c).compression.lower())
        t = f.read()
        rows += t.num_rows
        total = (total + row_hashes_sum(t)) % U64
        sizes.append(os.path.getsize(path))
    size = sum(sizes)
    return Content(rows, f"{total:016x}", len(sizes), size, tuple(sorted(codecs)),
                   max(sizes, default=0), min(sizes, default=0))


def ideal_files(total_bytes: int, target_bytes: int) -> int:
    """Files a perfect packer writes: the bytes in as few files of at most the target."""
    return max(1, math.ceil(total_bytes / target_bytes))


def remove_outputs(snapshot: Snapshot, base: Snapshot, extra_dirs: Iterable[Path] = ()) -> None:
    """Delete the data files a method wrote (in the copy's snapshot, not in the base's)."""
    for path in set(snapshot.files) - set(base.files):
        try:
            os.unlink(path)
        except OSError:
            pass
    for d in extra_dirs:
        for p in d.glob("*.parquet"):
            p.unlink(missing_ok=True)
