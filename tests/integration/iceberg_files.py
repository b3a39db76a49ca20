"""What a compaction test reads back from a local Iceberg table through pyiceberg: its data
files, their codecs as pyarrow sees them, and a checksum of its rows (the data, not its files).
Shared by the rewrite tests of both data paths."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pyarrow.parquet as pq


def local_path(uri: str) -> Path:
    return Path(unquote(urlsplit(uri).path))


def data_files(table: Any) -> list[tuple[str, int]]:
    """(path, size) of every data file (not delete files) of the current snapshot."""
    files = table.refresh().inspect.files().to_pydict()
    return [(p, s) for p, s, c in zip(files["file_path"], files["file_size_in_bytes"],
                                      files["content"], strict=True) if c == 0]


def codecs(table: Any) -> set[str]:
    """The codecs of every data file of the current snapshot, as pyarrow reads them."""
    out: set[str] = set()
    for path, _ in data_files(table):
        meta = pq.ParquetFile(local_path(path)).metadata
        out.update(meta.row_group(g).column(c).compression.lower()
                   for g in range(meta.num_row_groups) for c in range(meta.num_columns))
    return out


def checksum(table: Any) -> tuple[int, str]:
    """Rows and a digest of every row, in id order."""
    rows = table.refresh().scan().to_arrow().sort_by("id").to_pylist()
    return len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()
