"""The codec a rewrite writes with: the one the table's data is already in, unless the table's
properties or its TMS policy say otherwise.

Iceberg's Spark writer takes the codec from (first set wins) a write option, the session conf
``spark.sql.iceberg.compression-codec``, the table property ``write.parquet.compression-codec``
and last its own default, gzip. pyiceberg writes zstd without setting that property, so a
rewrite left alone turns every pyiceberg table into gzip: about twice the CPU, larger files,
and a table whose effective settings changed as a side effect. ``rewrite_data_files`` passes
no write option through, so the job sets the session conf for the one call (and restores it
after), and only when neither the table nor the policy names a codec:

1. the policy's ``compression-codec`` / ``compression-level`` (the operation's options);
2. the table's properties (``write.parquet.compression-*``; for delete files
   ``write.delete.parquet.compression-*`` first): the session conf is cleared for the call,
   since a session value would beat the property;
3. the codec of the data (or delete) files the writers added last, read from Parquet footers
   (``parquet_footer``), rewrite outputs only when no writer's file is within reach; with
   pyarrow's default level for that codec when pyarrow wrote them (pyiceberg sets none);
4. Iceberg's default.

Page, row-group and dictionary sizes are table properties both writers read with the same
defaults; the file format comes from ``write.format.default``, which no session conf can
override, so only Parquet tables get a codec. Standard library only; the JVM objects come in.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tms.jobs import parquet_footer

DATA_CODEC, DATA_LEVEL = "write.parquet.compression-codec", "write.parquet.compression-level"
DELETE_CODEC = "write.delete.parquet.compression-codec"
DELETE_LEVEL = "write.delete.parquet.compression-level"
FORMAT_PROPERTY = "write.format.default"
SESSION_CODEC, SESSION_LEVEL = ("spark.sql.iceberg.compression-codec",
                                "spark.sql.iceberg.compression-level")
ICEBERG_DEFAULT_CODEC = "gzip"  # TableProperties.PARQUET_COMPRESSION_DEFAULT
# pyarrow's default level per codec (pa.Codec.default_compression_level; a unit test keeps
# these in step): what pyiceberg writes with when the table sets no level
ARROW_DEFAULT_LEVELS = {"zstd": 1, "gzip": 9, "brotli": 8}
ARROW_WRITER = "parquet-cpp-arrow"
# codecs a policy may ask for: those Iceberg's Parquet writer has without native extras
CODECS = ("zstd", "snappy", "gzip", "lz4", "uncompressed")
# the operation's options that carry a policy's codec and level (not procedure options)
OPTION_CODEC, OPTION_LEVEL = "compression-codec", "compression-level"
MAX_LEVEL = 22  # zstd's highest; gzip's is 9, brotli's 11
MAX_SNAPSHOTS_WALKED = 20
MAX_FILES_SAMPLED = 3
REPLACE = "replace"  # a rewrite's snapshot: its files are not the writers' choice


@dataclass(frozen=True)
class WriteFormat:
    """What a rewrite writes with and why; ``session`` is the conf set for the call (None:
    cleared)."""

    codec: str | None
    level: str | None
    source: str
    session: dict[str, str | None] = field(default_factory=dict)
    sampled: tuple[str, ...] = ()  # what the sampled files' footers said (codec/writer)

    def info(self) -> dict[str, Any]:
        return {"codec": self.codec, "level": self.level, "source": self.source,
                "sampled": list(self.sampled)}


def _first(props: Mapping[str, str], keys: Sequence[str]) -> str | None:
    return next((props[k] for k in keys if props.get(k)), None)


def choose(props: Mapping[str, str], samples: Sequence[parquet_footer.Footer],
           codec: str | None = None, level: str | None = None, deletes: bool = False
           ) -> WriteFormat:
    """The codec and level of a rewrite (see the module's doc for the order)."""
    shown = tuple(f"{s.codec}/{s.created_by}" for s in samples)
    file_format = props.get(FORMAT_PROPERTY, "parquet").lower()
    if file_format != "parquet":
        return WriteFormat(None, None, f"table format {file_format}: its own settings apply",
                           {SESSION_CODEC: None, SESSION_LEVEL: None}, shown)
    codec_keys = (DELETE_CODEC, DATA_CODEC) if deletes else (DATA_CODEC,)
    level_keys = (DELETE_LEVEL, DATA_LEVEL) if deletes else (DATA_LEVEL,)
    prop_codec, prop_level = _first(props, codec_keys), _first(props, level_keys)
    if codec is not None:
        return WriteFormat(codec, level or prop_level, "policy",
                           {SESSION_CODEC: codec, SESSION_LEVEL: level}, shown)
    if prop_codec is not None:
        return WriteFormat(prop_codec.lower(), level or prop_level, "table property",
                           {SESSION_CODEC: None, SESSION_LEVEL: level}, shown)
    found = Counter(s.codec for s in samples if s.codec)
    if not found:
        return WriteFormat(ICEBERG_DEFAULT_CODEC, level or prop_level,
                           "Iceberg's default (no Parquet file to read)",
                           {SESSION_CODEC: None, SESSION_LEVEL: level}, shown)
    data_codec = max(found, key=lambda c: (found[c], -[s.codec for s in samples].index(c)))
    by_arrow = all(s.created_by.startswith(ARROW_WRITER) for s in samples
                   if s.codec == data_codec)
    if level is None and prop_level is None and by_arrow and data_codec in ARROW_DEFAULT_LEVELS:
        level = str(ARROW_DEFAULT_LEVELS[data_codec])
    return WriteFormat(data_codec, level or prop_level, "data files",
                       {SESSION_CODEC: data_codec, SESSION_LEVEL: level}, shown)


# --- reading files through the table's own FileIO (a Py4J Table) -------------------------------

def sample_files(handle: Any, deletes: bool = False, writers_only: bool = True
                 ) -> list[tuple[str, int]]:
    """Up to ``MAX_FILES_SAMPLED`` Parquet files (path, size) the newest snapshots added:
    the writers' own (not a rewrite's) first; a rewrite's when no writer's is within reach."""
    io, snap = handle.io(), handle.currentSnapshot()
    writers: list[tuple[str, int]] = []
    rewrites: list[tuple[str, int]] = []
    walked = 0
    while snap is not None and walked < MAX_SNAPSHOTS_WALKED and len(writers) < \
            MAX_FILES_SAMPLED:
        bucket = rewrites if str(snap.operation()) == REPLACE and writers_only else writers
        if len(bucket) < MAX_FILES_SAMPLED:
            files = snap.addedDeleteFiles(io) if deletes else snap.addedDataFiles(io)
            it = files.iterator()
            while it.hasNext() and len(bucket) < MAX_FILES_SAMPLED:
                f = it.next()
                if str(f.format()) == "PARQUET":
                    bucket.append((str(f.location()), int(f.fileSizeInBytes())))
        parent = snap.parentId()
        snap = handle.snapshot(parent) if parent is not None else None
        walked += 1
    return writers or rewrites


def _read(stream: Any, pos: int, n: int) -> bytes:
    """``n`` bytes at ``pos``: Py4J hands a returned byte[] over by value (one that Python
    creates would be copied into the JVM, and filling it there would not be seen here)."""
    stream.seek(pos)
    out = bytes(stream.readNBytes(n))
    if len(out) != n:
        raise parquet_footer.FooterError(f"read {len(out)} of {n} bytes")
    return out


def read_footer(io: Any, path: str, size: int) -> parquet_footer.Footer:
    stream = io.newInputFile(path, size).newStream()
    try:
        tail = _read(stream, size - parquet_footer.TAIL_BYTES, parquet_footer.TAIL_BYTES)
        n = parquet_footer.footer_length(tail)
        return parquet_footer.parse(_read(stream, size - parquet_footer.TAIL_BYTES - n, n))
    finally:
        stream.close()


def footers(handle: Any, files: Sequence[tuple[str, int]]) -> list[parquet_footer.Footer]:
    """The footers of ``files``; one that cannot be read is left out (and logged)."""
    io, out = handle.io(), []
    for path, size in files:
        try:
            out.append(read_footer(io, path, size))
        except Exception as e:  # an unreadable sample must not fail the rewrite
            print(f"[tms-job] footer of {path} not read: {type(e).__name__}: {e}",
                  file=sys.stderr)
    return out


def plan(handle: Any, codec: str | None, level: str | None,
         deletes: bool = False) -> WriteFormat:
    props = {str(k): str(v) for k, v in handle.properties().items()}
    samples = [] if codec is not None else footers(handle, sample_files(handle, deletes))
    return choose(props, samples, codec, level, deletes)


def written_codec(handle: Any, deletes: bool = False) -> str | None:
    """The codec of a file the last commit added (read back, not assumed)."""
    handle.refresh()
    got = footers(handle, sample_files(handle, deletes, writers_only=False)[:1])
    return got[0].codec if got else None


@contextmanager
def session_conf(spark: Any, conf: Mapping[str, str | None]) -> Iterator[None]:
    """``conf`` set (None: cleared) for the block, the session's own values restored after:
    the warm driver's session serves other tables next."""
    old = {k: spark.conf.get(k, None) for k in conf}
    try:
        _apply(spark, conf)
        yield
    finally:
        _apply(spark, old)


def _apply(spark: Any, conf: Mapping[str, str | None]) -> None:
    for k, v in conf.items():
        if v is None:
            spark.conf.unset(k)
        else:
            spark.conf.set(k, v)
