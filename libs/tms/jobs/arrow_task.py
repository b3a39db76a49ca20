"""One Spark task of the arrow data path (``arrow_rewrite.py``): read slices of a file group's
Parquet files with pyarrow and write one output file, in a PySpark worker.

Why pyarrow in the task: Spark's rewrite spends about 3x pyarrow's CPU on the same bytes
(Parquet dictionary decode, column-to-row conversion, Iceberg's row-wise Parquet writer; issue
17, docs/figures.md). The task keeps Spark's scheduling (one task per output file, the cores
the executor owns) and leaves planning and commit to Iceberg in the driver.

The task trusts nothing it was not given by the driver, and checks again what it opens:
every input path is resolved (symlinks followed) and must lie inside ``allowed`` before it
is opened, and it is opened by its resolved path walked from ``/`` with ``O_NOFOLLOW`` on
every component (a directory swapped for a symlink after the check fails the open); the
output path likewise, created with ``O_EXCL`` (never overwrites). Files on S3 are reached
with the catalog's own endpoint and keys (``arrow_s3``, given by the driver only when they
map faithfully), after the same check on their literal URI. Before it writes a byte it
checks that every input file carries exactly the table's field ids, names and types
(``schema_refusal``); a mismatch is returned as a refusal (the driver falls back to Spark's
path), not written around. Rows written must equal rows read; a task that fails deletes the
file it wrote.

Standard library at import; pyarrow is imported inside the functions (workers have it when the
driver's eligibility check found it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tms.jobs import arrow_metrics, arrow_readahead, arrow_store

# where the task's files are opened (re-exported: the rewrite's callers and tests use them)
TaskRefused, Store = arrow_store.TaskRefused, arrow_store.Store
open_checked, open_no_follow = arrow_store.open_checked, arrow_store.open_no_follow
unlink_no_follow, native = arrow_store.unlink_no_follow, arrow_store.native

FIELD_ID_KEY = b"PARQUET:field_id"
UTC_ZONES = frozenset({"UTC", "+00:00", "Etc/UTC", "Z", "GMT"})
# Iceberg's codec names -> pyarrow's (only those both write the same way)
ARROW_CODECS = {"zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "uncompressed": "none"}
# parquet-java's level when Iceberg's writer is given none (what Spark's path writes)
JAVA_DEFAULT_LEVELS = {"zstd": 3, "gzip": 6}
MAX_ROWS_PER_GROUP = 16 * 1024 * 1024  # however small the rows, a row group is bounded
# Iceberg's writer measures a row group's size first after this many rows (table property
# write.parquet.row-group-check-min-record-count): its smallest group under a tiny target
DEFAULT_MIN_ROWS_PER_GROUP = 100


def arrow_type(type_name: str) -> Any:
    """The Arrow type a column of Iceberg type ``type_name`` (``Type.toString()``) is written as."""
    import pyarrow as pa

    simple = {"long": pa.int64(), "int": pa.int32(), "string": pa.string(),
              "double": pa.float64(), "float": pa.float32(), "boolean": pa.bool_(),
              "date": pa.date32(), "binary": pa.binary(),
              "timestamp": pa.timestamp("us"), "timestamptz": pa.timestamp("us", tz="UTC")}
    if type_name in simple:
        return simple[type_name]
    if type_name.startswith("decimal(") and type_name.endswith(")"):
        precision, scale = (int(x) for x in type_name[8:-1].split(","))
        return pa.decimal128(precision, scale)
    raise TaskRefused("ineligible", f"column type {type_name} is not handled by the arrow path")


def _same_type(got: Any, want: Any) -> bool:
    import pyarrow as pa

    if got == want:
        return True
    if pa.types.is_timestamp(want) and pa.types.is_timestamp(got) and got.unit == want.unit:
        return (got.tz is None) == (want.tz is None) and (got.tz is None or got.tz in UTC_ZONES)
    return (want == pa.string() and got == pa.large_string()) or \
        (want == pa.binary() and got == pa.large_binary())


def output_schema(columns: Sequence[Sequence[Any]]) -> Any:
    """The output's Arrow schema from the table's columns ``(id, name, type, required)``."""
    import pyarrow as pa

    return pa.schema([pa.field(name, arrow_type(t), nullable=not required,
                               metadata={FIELD_ID_KEY: str(fid).encode()})
                      for fid, name, t, required in columns])


def schema_refusal(file_schema: Any, want: Any) -> str | None:
    """Why a file's schema is not exactly the table's (ids, names, types), or None."""
    got = {}
    for f in file_schema:
        fid = (f.metadata or {}).get(FIELD_ID_KEY)
        if fid is None:
            return f"column {f.name!r} carries no Iceberg field id"
        got[int(fid)] = f
    ids = {int(f.metadata[FIELD_ID_KEY]): f for f in want}
    if set(got) != set(ids):
        return f"field ids {sorted(got)} differ from the table's {sorted(ids)} (schema evolved)"
    for fid, f in ids.items():
        if got[fid].name != f.name or not _same_type(got[fid].type, f.type):
            return (f"field {fid}: {got[fid].name} {got[fid].type} in the file, "
                    f"{f.name} {f.type} in the table")
    return None


def adopt_variants(want: Any, file_schema: Any) -> Any:
    """``want`` with the string and binary variants (large or not) of ``file_schema``: the
    same Parquet type either way, and keeping the reader's saves a copy of every value."""
    import pyarrow as pa

    by_id = {(f.metadata or {}).get(FIELD_ID_KEY): f.type for f in file_schema}
    fields = []
    for f in want:
        got = by_id.get(f.metadata[FIELD_ID_KEY])
        if got is not None and got in (pa.large_string(), pa.large_binary()):
            f = f.with_type(got)
        fields.append(f)
    return pa.schema(fields)


def _slices(pf: Any, skip: int, take: int) -> Iterator[Any]:
    """The rows ``[skip, skip + take)`` of an open ParquetFile, one row group at a time."""
    start = 0
    for i in range(pf.metadata.num_row_groups):
        n = pf.metadata.row_group(i).num_rows
        lo, hi = max(skip, start), min(skip + take, start + n)
        if lo < hi:
            group = pf.read_row_group(i, use_threads=False)
            yield group.slice(lo - start, hi - lo)
        start += n


def writer_options(fmt: Mapping[str, Any], columns: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """pyarrow writer options from the driver's format (codec, level, page/dictionary sizes)
    and the table's ``columns``: statistics for every column but float and double ones
    (``arrow_metrics``), decimals in the physical type Iceberg's writer uses for their
    precision (INT32 up to 9 digits, INT64 up to 18, fixed-length bytes above)."""
    codec = fmt["codec"]
    level = fmt.get("level")
    if level is None:
        level = JAVA_DEFAULT_LEVELS.get(codec)
    out: dict[str, Any] = {"compression": ARROW_CODECS[codec],
                           "write_statistics": arrow_metrics.no_statistics(columns),
                           "store_decimal_as_integer": True,
                           "data_page_size": int(fmt["page_size_bytes"]),
                           "dictionary_pagesize_limit": int(fmt["dict_size_bytes"]),
                           "max_rows_per_page": int(fmt["page_row_limit"]),
                           "use_deprecated_int96_timestamps": False, "coerce_timestamps": "us"}
    if level is not None and codec in JAVA_DEFAULT_LEVELS:
        out["compression_level"] = int(level)
    return out


def rows_per_group(files: Sequence[Any], target_bytes: int,
                   min_rows: int = DEFAULT_MIN_ROWS_PER_GROUP) -> int:
    """Rows per output row group: the table's row-group size over the inputs' uncompressed
    bytes per row (what parquet-java's writer measures against the same property), at least
    ``min_rows`` (where Iceberg's writer first measures)."""
    rows = sum(pf.metadata.num_rows for pf in files)
    raw = sum(pf.metadata.row_group(i).total_byte_size for pf in files
              for i in range(pf.metadata.num_row_groups))
    per_row = raw / rows if rows and raw else 1.0
    return int(min(MAX_ROWS_PER_GROUP, max(1, min_rows, target_bytes / per_row)))


def run(task: Mapping[str, Any], s3: Any = None) -> dict[str, Any]:
    """Rewrite one task's slices into ``task["output"]``; what it wrote, or a refusal. ``s3``:
    the catalog's ``arrow_s3.S3Options`` (bound by the driver, never in the descriptor)."""
    import time

    started = time.process_time()
    try:
        return {**_run(task, s3), "cpu_s": time.process_time() - started}
    except TaskRefused as e:
        return {"refused": e.kind, "reason": e.reason, "output": task["output"]}


def prestart(_: int) -> int:
    """A task that only imports what ``run`` needs: the Python worker it ran in is ready
    (``arrow_spark.prestart_workers``)."""
    import pyarrow.parquet  # noqa: F401

    return os.getpid()


def check_input(pf: Any, path: str, rows: int, want: Any) -> None:
    """An open input is exactly the table's schema (else refused) with the manifest's rows."""
    why = schema_refusal(pf.schema_arrow, want)
    if why is not None:
        raise TaskRefused("ineligible", f"{path[:300]}: {why}")
    if pf.metadata.num_rows != rows:
        raise ValueError(f"{path[:300]}: {pf.metadata.num_rows} rows in the file, "
                         f"{rows} in the table's manifest")


def probe(task: Mapping[str, Any], s3: Any = None) -> dict[str, Any]:
    """The checks ``run`` makes before it writes (location, schema, rows), alone: run over
    every input before the first group is committed when groups commit on their own
    (``arrow_progress``), so no group is refused after another landed. Empty when all pass;
    ``s3`` as for ``run``."""
    import pyarrow.parquet as pq

    store = Store(s3)
    try:
        want = output_schema(task["columns"])
        for path, _, _, rows in task["inputs"]:
            handle = store.open_input(path, task["allowed"])
            try:
                check_input(pq.ParquetFile(handle), path, rows, want)
            finally:
                handle.close()
    except TaskRefused as e:
        return {"refused": e.kind, "reason": e.reason, "output": ""}
    return {}


def _run(task: Mapping[str, Any], s3: Any) -> dict[str, Any]:
    from concurrent.futures import ThreadPoolExecutor

    threads = max(1, min(int(task.get("read_threads", 1)), arrow_readahead.MAX_READ_THREADS))
    with ThreadPoolExecutor(threads, thread_name_prefix="tms-read") as pool:
        return _rewrite(task, s3, pool if threads > 1 else None)


def _rewrite(task: Mapping[str, Any], s3: Any, pool: Any) -> dict[str, Any]:
    """The task's rewrite; ``pool``: threads that open and read its inputs ahead of the
    writer (``arrow_readahead``), None to read them in this thread."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    allowed, want = task["allowed"], output_schema(task["columns"])
    handles: list[Any] = []
    store = Store(s3)

    def open_one(item: Sequence[Any]) -> tuple[Any, int, int]:
        path, skip, take, rows = item
        handle = store.open_input(path, allowed)
        handles.append(handle)
        pf = pq.ParquetFile(handle)
        check_input(pf, path, rows, want)
        return pf, skip, take

    try:
        if pool is None:
            opened = [open_one(item) for item in task["inputs"]]
            parts: Iterator[Any] = (part for pf, skip, take in opened
                                    for part in _slices(pf, skip, take))
        else:
            opened = arrow_readahead.ordered_map(pool, open_one, task["inputs"])
            parts = arrow_readahead.slices(pool, opened)
        if opened:
            want = adopt_variants(want, opened[0][0].schema_arrow)
        fmt = task["format"]
        per_group = rows_per_group([pf for pf, _, _ in opened], int(fmt["row_group_bytes"]),
                                   int(fmt.get("row_group_min_rows",
                                               DEFAULT_MIN_ROWS_PER_GROUP)))
        metrics = arrow_metrics.Collector(task["columns"])
        output = task["output"]
        sink_file = store.open_output(output, allowed)
        written = 0
        try:
            with sink_file as sink, \
                    pq.ParquetWriter(sink, want,
                                     **writer_options(fmt, task["columns"])) as writer:
                pending: list[Any] = []
                buffered = 0
                names = [f.name for f in want]
                for part in parts:
                    pending.append(part.select(names).cast(want))
                    metrics.add(pending[-1])
                    buffered += part.num_rows
                    if buffered >= per_group:
                        written += _flush(writer, pa.concat_tables(pending), per_group)
                        pending, buffered = [], 0
                if pending:
                    written += _flush(writer, pa.concat_tables(pending), per_group)
            expected = sum(take for _, _, take in opened)
            if written != expected:
                raise ValueError(f"wrote {written} rows, read {expected}")
            meta, size = store.written(output, allowed)
        except BaseException:
            store.remove(output, allowed)
            raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)  # no read still using a handle
        for handle in handles:
            handle.close()
    offsets = [_start(meta.row_group(i)) for i in range(meta.num_row_groups)]
    return {"output": output, "rows": written, "group": task["group"], "size": size,
            "offsets": offsets, "metrics": metrics.result()}


def _flush(writer: Any, table: Any, per_group: int) -> int:
    for start in range(0, table.num_rows, per_group):
        writer.write_table(table.slice(start, per_group), row_group_size=per_group)
    return int(table.num_rows)


def _start(group: Any) -> int:
    """A row group's first byte, as Iceberg's split offsets record it."""
    col = group.column(0)
    dictionary = col.dictionary_page_offset
    return int(dictionary if dictionary is not None and dictionary > 0 else
               col.data_page_offset)
