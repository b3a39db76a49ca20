"""The column metrics of an arrow-path file that pyarrow's Parquet footer cannot give Iceberg
the way Iceberg's own writer records them, computed from the rows in the task and laid over
the footer's metrics in the driver (``arrow_commit``).

Iceberg's Parquet writer takes most metrics from the footer (``ParquetUtil.footerMetrics``),
but for float and double columns its own value writers count NaN values and keep bounds
without NaN (``-0.0`` below ``0.0``), and the footer gives only the null counts. pyarrow:

- ignores NaN in a row group's min/max, so a chunk ``[2784.0, NaN]`` gets min = max = 2784.0,
  and pyarrow's own reader then skips that row group for ``is_nan`` (and for ``!= 2784.0``).
  The arrow path therefore writes no Parquet statistics for float and double columns
  (``no_statistics``): no reader can skip a row group on them, and the manifest's metrics,
  computed here (values, nulls, NaN, bounds), prune files as Iceberg's writer's would;
- drops a string or binary chunk's min/max when a value is longer than its statistics limit
  (4 KiB), where parquet-java keeps them: the file's bounds would be missing, or too narrow
  when another row group still has them. String and binary bounds are computed here from
  every value and truncated as Iceberg truncates them (``truncate(n)`` of the metrics mode).

Standard library at import; pyarrow inside the task's functions.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

FLOATS = {"double": "<d", "float": "<f"}  # Iceberg type -> its single-value byte layout
BYTES = ("string", "binary")
MAX_CODE_POINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)
_TRUNCATE = re.compile(r"truncate\((\d+)\)")


def no_statistics(columns: Sequence[Sequence[Any]]) -> list[str]:
    """The columns ``(id, name, type, required)`` pyarrow writes statistics for: all but
    float and double."""
    return [name for _, name, t, _ in columns if t not in FLOATS]


def _key(v: float) -> tuple[float, int]:
    """Java's ``Float.compare`` order for non-NaN values: ``-0.0`` before ``0.0``."""
    return (v, 0 if math.copysign(1.0, v) < 0 else 1)


class Collector:
    """Metrics of the rows a task writes, a part at a time (``add``), per field id."""

    def __init__(self, columns: Sequence[Sequence[Any]]) -> None:
        self.columns = [(int(fid), str(name), str(t)) for fid, name, t, _ in columns
                        if t in FLOATS or t in BYTES]
        self.out: dict[int, dict[str, Any]] = {
            fid: {"nulls": 0, "nans": 0, "lower": None, "upper": None}
            for fid, _, _ in self.columns}

    def add(self, table: Any) -> None:
        import pyarrow.compute as pc

        for fid, name, t in self.columns:
            col, m = table.column(name), self.out[fid]
            m["nulls"] += col.null_count
            if t in FLOATS:
                nan = pc.is_nan(col)
                m["nans"] += int(pc.sum(nan).as_py() or 0)
                col = pc.filter(col, pc.invert(nan))  # drops nulls and NaN
                lo, hi = _float_bounds(col)
                if lo is not None and (m["lower"] is None or _key(lo) < _key(m["lower"])):
                    m["lower"] = lo
                if hi is not None and (m["upper"] is None or _key(hi) > _key(m["upper"])):
                    m["upper"] = hi
            else:
                got = pc.min_max(col)
                lo, hi = got["min"].as_py(), got["max"].as_py()
                if lo is not None and (m["lower"] is None or lo < m["lower"]):
                    m["lower"] = lo
                if hi is not None and (m["upper"] is None or hi > m["upper"]):
                    m["upper"] = hi

    def result(self) -> dict[str, dict[str, Any]]:
        return {str(fid): dict(m) for fid, m in self.out.items()}


def _float_bounds(col: Any) -> tuple[float | None, float | None]:
    """Min and max of NaN-free ``col`` in Java's order (a zero bound signed as Iceberg's
    writer would find it: ``-0.0`` when one is there for the min, ``0.0`` for the max)."""
    import pyarrow.compute as pc

    got = pc.min_max(col)
    lo, hi = got["min"].as_py(), got["max"].as_py()
    if lo is None or hi is None:
        return None, None
    if lo == 0.0 or hi == 0.0:
        zeros = pc.filter(col, pc.equal(col, 0.0))
        signs = pc.divide(pc.cast(1.0, col.type), zeros)  # -inf for -0.0, inf for 0.0
        neg = bool(pc.any(pc.less(signs, 0.0)).as_py())
        pos = bool(pc.any(pc.greater(signs, 0.0)).as_py())
        if lo == 0.0:
            lo = -0.0 if neg else 0.0
        if hi == 0.0:
            hi = 0.0 if pos else -0.0
    return float(lo), float(hi)


# --- the driver: Iceberg's truncation and the overlay on ContentFileParser's JSON -------------

def truncate_string_max(s: str, n: int) -> str | None:
    """Iceberg's ``UnicodeUtil.truncateStringMax``: the first ``n`` code points with the last
    one that can be incremented incremented (skipping surrogates); None when none can."""
    if len(s) <= n:
        return s
    prefix = s[:n]
    for i in range(n - 1, -1, -1):
        cp = ord(prefix[i])
        if cp == MAX_CODE_POINT:
            continue
        cp = SURROGATES[1] + 1 if cp == SURROGATES[0] - 1 else cp + 1
        return prefix[:i] + chr(cp)
    return None


def truncate_binary_max(b: bytes, n: int) -> bytes | None:
    """Iceberg's ``BinaryUtil.truncateBinaryMax``."""
    if len(b) <= n:
        return b
    prefix = b[:n]
    for i in range(n - 1, -1, -1):
        if prefix[i] != 0xFF:
            return prefix[:i] + bytes([prefix[i] + 1])
    return None


def encode(type_name: str, value: Any) -> bytes:
    """Iceberg's single-value serialization of a bound."""
    if type_name in FLOATS:
        return struct.pack(FLOATS[type_name], value)
    return value.encode("utf-8") if type_name == "string" else bytes(value)


def bounds(type_name: str, mode: str, lower: Any, upper: Any) -> tuple[Any, Any]:
    """The bounds a metrics mode keeps (``none``/``counts``: none; ``truncate(n)``: string
    and binary truncated as Iceberg truncates them; ``full``: as they are)."""
    if mode in ("none", "counts") or lower is None:
        return None, None
    found = _TRUNCATE.fullmatch(mode)
    if found is None or type_name not in BYTES:
        return lower, upper
    n = int(found.group(1))
    if type_name == "string":
        return lower[:n], truncate_string_max(upper, n)
    return bytes(lower[:n]), truncate_binary_max(bytes(upper), n)


def _as_map(doc: Mapping[str, Any], key: str) -> dict[int, Any]:
    got = doc.get(key) or {"keys": [], "values": []}
    return dict(zip(got["keys"], got["values"], strict=True))


def _put(doc: dict[str, Any], key: str, values: Mapping[int, Any]) -> None:
    if values:
        ids = sorted(values)
        doc[key] = {"keys": ids, "values": [values[i] for i in ids]}
    else:
        doc.pop(key, None)


def overlay(doc: dict[str, Any], computed: Mapping[str, Mapping[str, Any]],
            types: Mapping[int, str], modes: Mapping[int, str]) -> dict[str, Any]:
    """``doc`` (a data file as ``ContentFileParser`` writes it) with the computed metrics of
    the columns they cover, each kept as its metrics mode says."""
    values = _as_map(doc, "value-counts")
    nulls, nans = _as_map(doc, "null-value-counts"), _as_map(doc, "nan-value-counts")
    lowers, uppers = _as_map(doc, "lower-bounds"), _as_map(doc, "upper-bounds")
    for raw_id, m in computed.items():
        fid = int(raw_id)
        type_name, mode = types[fid], modes[fid]
        for target in (lowers, uppers):
            target.pop(fid, None)
        if mode == "none":
            values.pop(fid, None)
            nulls.pop(fid, None)
            nans.pop(fid, None)
            continue
        nulls[fid] = int(m["nulls"])
        if type_name in FLOATS:  # a column without statistics loses its value count too
            values[fid] = int(doc["record-count"])  # a top-level column: one value a row
            nans[fid] = int(m["nans"])
        lo, hi = bounds(type_name, mode, m["lower"], m["upper"])
        if lo is not None:
            lowers[fid] = encode(type_name, lo).hex().upper()
        if hi is not None:
            uppers[fid] = encode(type_name, hi).hex().upper()
    for key, got in (("value-counts", values), ("null-value-counts", nulls),
                     ("nan-value-counts", nans), ("lower-bounds", lowers),
                     ("upper-bounds", uppers)):
        _put(doc, key, got)
    return doc


def modes(jvm: Any, handle: Any, ids: Iterable[int]) -> dict[int, str]:
    """Each column's metrics mode as Iceberg names it (``none``, ``counts``, ``truncate(16)``,
    ``full``), from the table's ``MetricsConfig``."""
    config = jvm.org.apache.iceberg.MetricsConfig.forTable(handle)
    schema, util = handle.schema(), jvm.org.apache.iceberg.MetricsUtil
    return {i: str(util.metricsMode(schema, config, i)) for i in ids}


def apply(jvm: Any, handle: Any, data_file: Any, computed: Mapping[str, Mapping[str, Any]]
          ) -> Any:
    """``data_file`` with ``computed`` laid over its footer's metrics (a JSON round trip
    through Iceberg's own ``ContentFileParser``, which keeps every count a Java long)."""
    import json

    if not computed:
        return data_file
    ids = [int(i) for i in computed]
    types = {int(f.fieldId()): str(f.type()) for f in handle.schema().columns()}
    spec, parser = handle.spec(), jvm.org.apache.iceberg.ContentFileParser
    doc = overlay(json.loads(str(parser.toJson(data_file, spec))), computed, types,
                  modes(jvm, handle, ids))
    node = jvm.org.apache.iceberg.util.JsonUtil.mapper().readTree(json.dumps(doc))
    return parser.fromJson(node, spec)
