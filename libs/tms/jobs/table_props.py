"""The table's own writer properties a rewrite reads, parsed strictly before anything is
written: a table owner sets them, so any value may arrive.

Iceberg reads these with ``PropertyUtil.propertyAsInt`` / ``propertyAsLong`` (Java's
``Integer.parseInt`` / ``Long.parseLong``): a value past the type's range fails there with a
``NumberFormatException`` inside Spark's writer, and the arrow path's pyarrow writer would fail
with an ``OverflowError``; both after the rewrite started. Java's parser also takes a sign,
leading zeros and non-ASCII decimal digits (``'٣'``), which Python's ``str.isdigit`` passes as
well (and ``'²'``, which ``int`` then refuses). Here a value is ASCII digits only, no sign, no
space, no leading zero, within the range Iceberg's type and the writers accept; anything else
fails the operation with ``PropertyRefused`` naming the property and the allowed range, which
the job reports as not retryable (``errors.INVALID_TABLE_PROPERTY``): another attempt reads the
same value.

Standard library only: the job's package (``tms.spark.job_package``) ships it to the driver.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

JAVA_INT_MAX = 2 ** 31 - 1  # Integer.MAX_VALUE: what propertyAsInt accepts
JAVA_LONG_MAX = 2 ** 63 - 1  # Long.MAX_VALUE: what propertyAsLong accepts
_DIGITS_RE = re.compile(r"0|[1-9][0-9]*", re.ASCII)
MAX_DIGITS = 19  # Long.MAX_VALUE has 19: a longer value is refused before int() sees it

# The Parquet writer's integer properties (Iceberg's Parquet.WriteBuilder.Context reads each
# with propertyAsInt), each positive. A delete-file writer reads ``write.delete.parquet.*``
# first and these as its defaults.
PARQUET_INT_KEYS = ("row-group-size-bytes", "page-size-bytes", "page-row-limit",
                    "dict-size-bytes", "row-group-check-min-record-count",
                    "row-group-check-max-record-count")
BLOOM_MAX_BYTES = "write.parquet.bloom-filter-max-bytes"  # data files only
DATA_PREFIX, DELETE_PREFIX = "write.parquet.", "write.delete.parquet."
# propertyAsLong in the planner (BinPackRewriteFilePlanner) and Spark's write conf
DATA_TARGET, DELETE_TARGET = "write.target-file-size-bytes", "write.delete.target-file-size-bytes"
LEVEL_SUFFIX = "compression-level"
# the levels both writers take per codec (pyarrow's range within the codec library's); a codec
# not named here reads no level (Iceberg passes the level to gzip, brotli and zstd only)
LEVELS = {"zstd": (0, 22), "gzip": (1, 9), "brotli": (0, 11)}


class PropertyRefused(ValueError):
    """A table property's value is not what the writers accept; nothing was written."""


def parse_int(key: str, raw: str, minimum: int, maximum: int) -> int:
    """``raw`` as an integer in ``[minimum, maximum]``, strictly (see the module's doc)."""
    if len(raw) > MAX_DIGITS or not _DIGITS_RE.fullmatch(raw) \
            or not minimum <= int(raw) <= maximum:
        raise PropertyRefused(
            f"table property {key}={raw[:40]!r}: expected an integer from {minimum} to "
            f"{maximum} (ASCII digits, no sign, space or leading zero)")
    return int(raw)


def integer_keys(deletes: bool) -> dict[str, tuple[int, int]]:
    """Every integer property the rewrite's writer and planner read, with its range."""
    keys = {DATA_PREFIX + k: (1, JAVA_INT_MAX) for k in PARQUET_INT_KEYS}
    keys[BLOOM_MAX_BYTES] = (1, JAVA_INT_MAX)
    keys[DATA_TARGET] = (1, JAVA_LONG_MAX)
    if deletes:
        keys.update({DELETE_PREFIX + k: (1, JAVA_INT_MAX) for k in PARQUET_INT_KEYS})
        keys[DELETE_TARGET] = (1, JAVA_LONG_MAX)
    return keys


def check(props: Mapping[str, str], codec: str | None, deletes: bool = False
          ) -> dict[str, int]:
    """Every writer property the table sets, parsed (key -> value); ``PropertyRefused`` for
    the first one that is not valid. ``codec`` is the one the rewrite writes with: its
    compression level is checked against that codec's range."""
    out = {key: parse_int(key, props[key], *bounds)
           for key, bounds in integer_keys(deletes).items() if key in props}
    bounds = LEVELS.get((codec or "").lower())
    level_keys = [DATA_PREFIX + LEVEL_SUFFIX] + ([DELETE_PREFIX + LEVEL_SUFFIX] if deletes
                                                 else [])
    for key in level_keys:
        if bounds is not None and key in props:
            out[key] = parse_int(key, props[key], *bounds)
    return out



def check_level(codec: str | None, level: str | None) -> None:
    """The level a rewrite will write with (the policy's ``compaction.compression-level``, else
    the table's), within the chosen codec's range: the policy's key is checked against zstd's
    range when it is set, before the codec is known (the table's may be gzip)."""
    bounds = LEVELS.get((codec or "").lower())
    if bounds is None or level is None:
        return
    if not _DIGITS_RE.fullmatch(level) or not bounds[0] <= int(level) <= bounds[1]:
        raise PropertyRefused(
            f"compression level {level[:40]!r} (the policy's compaction.compression-level or "
            f"the table's write.parquet.compression-level) does not fit the codec {codec}: "
            f"expected an integer from {bounds[0]} to {bounds[1]}")
