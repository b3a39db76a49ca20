"""What a Parquet file's footer says about how it was written: its compression codec and the
library that wrote it (``created_by``).

A rewrite must keep the codec the data is already in, and the footer is the only place that
records it (Iceberg's manifests do not; pyiceberg does not write the table property). The
footer is Thrift's compact protocol (``FileMetaData``); this reads it generically into
``{field id: value}`` dicts, enough for the few fields needed, without a Thrift or Parquet
library: the job ships alone and imports only the standard library.

Layout: ``<data> <footer> <footer length: 4 bytes LE> PAR1``. In ``FileMetaData`` field 4 is
``row_groups``, field 6 ``created_by``; a ``RowGroup``'s field 1 is ``columns``; a
``ColumnChunk``'s field 3 is ``meta_data``, whose field 4 is the codec.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass
from typing import Any

MAGIC = b"PAR1"
TAIL_BYTES = 8  # footer length + magic
MAX_FOOTER_BYTES = 16 * 1024 * 1024  # a footer larger than this is not read
MAX_DEPTH = 32  # nesting a footer needs is 4-5 levels; a deeper one is malformed
# parquet.thrift's CompressionCodec, as Iceberg's write.parquet.compression-codec names them
CODECS = {0: "uncompressed", 1: "snappy", 2: "gzip", 3: "lzo", 4: "brotli", 5: "lz4",
          6: "zstd", 7: "lz4_raw"}
_FILE_ROW_GROUPS, _FILE_CREATED_BY = 4, 6
_GROUP_COLUMNS, _CHUNK_META, _META_CODEC = 1, 3, 4


class FooterError(ValueError):
    """Not a Parquet footer this reader understands."""


@dataclass(frozen=True)
class Footer:
    codec: str | None  # the codec of most column chunks; None: no row group
    created_by: str


def footer_length(tail: bytes) -> int:
    """The footer's length from a file's last 8 bytes."""
    if len(tail) != TAIL_BYTES or tail[4:] != MAGIC:
        raise FooterError("not a Parquet file (no PAR1 at its end)")
    (length,) = struct.unpack("<I", tail[:4])
    if length > MAX_FOOTER_BYTES:
        raise FooterError(f"footer of {length} bytes (more than {MAX_FOOTER_BYTES})")
    return int(length)


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos = buf, 0

    def byte(self) -> int:
        if self.pos >= len(self.buf):
            raise FooterError("footer ends early")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise FooterError("footer ends early")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def varint(self) -> int:
        out = shift = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 70:
                raise FooterError("varint too long")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, ttype: int, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise FooterError("footer nested too deeply")
        if ttype in (1, 2):  # booleans inside a struct: the type is the value
            return ttype == 1
        if ttype == 3:
            return self.byte()
        if ttype in (4, 5, 6):
            return self.zigzag()
        if ttype == 7:
            return struct.unpack("<d", self.take(8))[0]
        if ttype == 8:
            return self.take(self.varint())
        if ttype in (9, 10):
            head = self.byte()
            size, elem = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            if elem in (1, 2):  # booleans inside a list: one byte each
                return [self.byte() == 1 for _ in range(size)]
            return [self.value(elem, depth + 1) for _ in range(size)]
        if ttype == 11:
            size = self.varint()
            if not size:
                return {}
            kinds = self.byte()
            return {self.value(kinds >> 4, depth + 1): self.value(kinds & 0x0F, depth + 1)
                    for _ in range(size)}
        if ttype == 12:
            return self.struct(depth + 1)
        raise FooterError(f"unknown Thrift type {ttype}")

    def struct(self, depth: int = 0) -> dict[int, Any]:
        fields: dict[int, Any] = {}
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            delta, ttype = head >> 4, head & 0x0F
            last = last + delta if delta else self.zigzag()
            fields[last] = self.value(ttype, depth)


def parse(footer: bytes) -> Footer:
    """The codec and writer of a file from its footer bytes (``FileMetaData``)."""
    meta = _Reader(footer).struct()
    codecs: Counter[str] = Counter()
    for group in meta.get(_FILE_ROW_GROUPS, [])[:1]:
        for chunk in group.get(_GROUP_COLUMNS, []):
            code = chunk.get(_CHUNK_META, {}).get(_META_CODEC)
            if code is not None:
                codecs[CODECS.get(code, f"codec-{code}")] += 1
    raw = meta.get(_FILE_CREATED_BY, b"")
    created_by = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else ""
    return Footer(codecs.most_common(1)[0][0] if codecs else None, created_by)
