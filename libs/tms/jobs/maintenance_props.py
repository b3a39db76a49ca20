"""The table properties Iceberg itself reads while a maintenance action runs (commit retries,
manifest merging, snapshot expiry, metadata log, Spark's read and write conf), parsed strictly
before the action touches anything: a table owner sets them, so any value may arrive.

``table_props`` covers the writer's properties (``write.parquet.*`` sizes, target sizes,
levels); this module covers the rest, per action. Iceberg parses them
with ``Integer.parseInt`` / ``Long.parseLong`` (a sign, leading zeros and non-ASCII digits
pass), ``Boolean.parseBoolean`` (``"true"`` in any case is true, *anything else* silently
false: ``gc.enabled=yes`` disables expiry without a word), ``Enum.valueOf(name.toUpperCase())``
or ``equalsIgnoreCase`` (so Java takes ``"gzıp"`` for ``GZIP``: the dotless i upper-cases to
``I``; and ``"haſh"`` for ``hash``), and a bad metrics mode is ignored with a warning. Here an
integer is ASCII digits within a range that bounds what the table can make a job do
(``table_props.parse_int``), a boolean ASCII ``true``/``false`` in any case (what Iceberg reads
as such), an enum or metrics mode one of Iceberg's own names in ASCII, any case. Anything else
fails the operation, not retried, with ``PropertyRefused`` naming the property and what it may
be.

The bounds matter because the job holds an executor slot until Iceberg returns, and TMS sets no
run-time limit on an attempt: a commit that keeps failing (the owner's own writers can make it)
is retried ``commit.retry.num-retries`` times, sleeping up to ``commit.retry.max-wait-ms``
between attempts, until ``commit.retry.total-timeout-ms`` has passed (Iceberg's ``Tasks``);
an unknown commit outcome is checked the same way (``commit.status-check.*``). A huge
vectorized batch size is an executor's memory; a huge manifest target makes ``manifest_prep``
merge everything in the driver. Iceberg checks snapshot refs' own retention
(``min-snapshots-to-keep``, ``max-snapshot-age-ms``, ``max-ref-age-ms`` in the metadata's refs:
typed JSON, each required > 0) when it loads the table, before this runs.

Which properties each action makes Iceberg read, and what each may be, was found in the
classes of the Iceberg runtime TMS ships (``docs/security.md`` names the class reading each
key); the bounds are TMS's, chosen so that no table can make a job hold an executor, its memory
or its driver for long.

Standard library only: the job's package (``tms.spark.job_package``) ships it to the driver.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tms.jobs.table_props import JAVA_INT_MAX, JAVA_LONG_MAX, PropertyRefused, parse_int

MAX_COMMIT_RETRIES = 20  # Iceberg's default 4; each retry writes a manifest list again
MAX_COMMIT_WAIT_MS = 5 * 60 * 1000  # one sleep between attempts (Iceberg's default max: 60 s)
MAX_COMMIT_TOTAL_MS = 30 * 60 * 1000  # Iceberg's default total: an attempt's commit at most
MAX_STATUS_CHECKS = 20  # Iceberg's default 3
MAX_METADATA_LOG_ENTRIES = 10_000  # Iceberg's default 100; every commit rewrites the log
MAX_SUMMARY_PARTITIONS = 10_000  # Iceberg's default 0: per-partition entries in a summary
MAX_MANIFEST_TARGET_BYTES = 256 * 1024 * 1024  # Iceberg's default 8 MiB; manifest_prep merges
# up to one target's worth in the driver
MAX_BATCH_ROWS = 65_536  # vectorized read batch (Iceberg's default 5000; ORC's 5000 too)
MAX_PLANNING_LOOKBACK = 1000  # open bins while packing splits (Iceberg's default 10)
FILE_FORMATS = ("parquet", "avro", "orc")  # what Spark's writers write (FileFormat.fromString
# also names METADATA and PUFFIN, which no data writer takes)

# Parquet's CompressionCodecName and Iceberg's Avro codecs, which Iceberg looks up with
# valueOf(name.toUpperCase()): the table's codec, when the policy sets none
PARQUET_CODECS = ("uncompressed", "snappy", "gzip", "lzo", "brotli", "lz4", "zstd", "lz4_raw")
AVRO_CODECS = ("uncompressed", "snappy", "gzip", "zstd")
# the levels Avro's codecs take (deflate: java.util.zip.Deflater; zstd); the others take none
AVRO_LEVELS = {"gzip": (0, 9), "zstd": (1, 22)}
MAX_AVRO_LEVEL = 22
METRICS_MODES = ("none", "counts", "full")  # and truncate(N), N > 0 (MetricsModes.fromString)
# ORC's CompressionKind and CompressionStrategy, looked up the same way
ORC_CODECS = ("none", "zlib", "snappy", "lzo", "lz4", "zstd")
ORC_STRATEGIES = ("speed", "compression")
MAX_NAME_LIST_CHARS = 4096  # a list of column names (ORC's bloom filter columns)

Rule = tuple[str, int, int, tuple[str, ...]]  # (kind, low, high, choices)


def integer(low: int, high: int) -> Rule:
    return ("integer", low, high, ())


def choice(*names: str) -> Rule:
    return ("enum", 0, 0, names)


BOOLEAN: Rule = ("boolean", 0, 0, ("true", "false"))
NAMES: Rule = ("names", 0, MAX_NAME_LIST_CHARS, ())  # column names, comma-separated
METRICS_MODE: Rule = ("metrics", 1, JAVA_INT_MAX, METRICS_MODES)  # truncate's length range
FRACTION: Rule = ("fraction", 0, 1, ())  # a probability strictly between 0 and 1
UNSET: Rule = ("unset", 0, 0, ())  # refused whatever its value
POSITIVE_LONG, POSITIVE_INT = integer(1, JAVA_LONG_MAX), integer(1, JAVA_INT_MAX)

# Read by every action: the metadata tables the guards and Iceberg's actions scan through
# Spark (BaseMetadataTableScan, BaseScan). A location provider class (LocationProviders:
# any class with a (String, Map) constructor is instantiated before its type is checked) is
# refused everywhere: TMS runs none but Iceberg's own.
EVERY: dict[str, Rule] = {
    "write.location-provider.impl": UNSET,
    "read.split.metadata-target-size": POSITIVE_LONG,
    "read.split.planning-lookback": integer(1, MAX_PLANNING_LOOKBACK),
    "read.split.open-file-cost": integer(0, JAVA_LONG_MAX),
}
# Read by every commit (SnapshotProducer, RemoveSnapshots, TableMetadata.Builder, the catalog's
# table operations, CatalogUtil).
COMMIT: dict[str, Rule] = {
    "commit.retry.num-retries": integer(0, MAX_COMMIT_RETRIES),
    "commit.retry.min-wait-ms": integer(0, MAX_COMMIT_WAIT_MS),
    "commit.retry.max-wait-ms": integer(0, MAX_COMMIT_WAIT_MS),
    "commit.retry.total-timeout-ms": integer(0, MAX_COMMIT_TOTAL_MS),
    "commit.status-check.num-retries": integer(0, MAX_STATUS_CHECKS),
    "commit.status-check.min-wait-ms": integer(0, MAX_COMMIT_WAIT_MS),
    "commit.status-check.max-wait-ms": integer(0, MAX_COMMIT_WAIT_MS),
    "commit.status-check.total-timeout-ms": integer(0, MAX_COMMIT_TOTAL_MS),
    "commit.manifest.target-size-bytes": integer(1, MAX_MANIFEST_TARGET_BYTES),
    "compatibility.snapshot-id-inheritance.enabled": BOOLEAN,
    "write.metadata.previous-versions-max": integer(1, MAX_METADATA_LOG_ENTRIES),
    "write.metadata.delete-after-commit.enabled": BOOLEAN,
    "write.metadata.compression-codec": choice("none", "gzip"),
}
# Read by a rewrite's commit (MergingSnapshotProducer: RewriteFiles).
MERGE: dict[str, Rule] = {
    "commit.manifest.min-count-to-merge": integer(0, JAVA_INT_MAX),
    "commit.manifest-merge.enabled": BOOLEAN,
    "write.summary.partition-limit": integer(0, MAX_SUMMARY_PARTITIONS),
}
# Read by Spark's reads and writes of a data or delete rewrite (SparkReadConf, SparkWriteConf)
SPARK_REWRITE: dict[str, Rule] = {
    "read.split.target-size": POSITIVE_LONG,
    "read.split.adaptive-size.enabled": BOOLEAN,
    "read.parquet.vectorization.enabled": BOOLEAN,
    "read.parquet.vectorization.batch-size": integer(1, MAX_BATCH_ROWS),
    "read.orc.vectorization.enabled": BOOLEAN,
    "read.orc.vectorization.batch-size": integer(1, MAX_BATCH_ROWS),
    "read.data-planning-mode": choice("auto", "local", "distributed"),
    "read.delete-planning-mode": choice("auto", "local", "distributed"),
    "write.format.default": choice(*FILE_FORMATS),
    "write.delete.format.default": choice(*FILE_FORMATS),
    "write.distribution-mode": choice("none", "hash", "range"),
    "write.delete.granularity": choice("partition", "file"),
    "write.parquet.compression-codec": choice(*PARQUET_CODECS),
    "write.delete.parquet.compression-codec": choice(*PARQUET_CODECS),
    "write.avro.compression-codec": choice(*AVRO_CODECS),
    "write.delete.avro.compression-codec": choice(*AVRO_CODECS),
    # Avro.WriteBuilder's Integer.valueOf; within the codec's own range (AVRO_LEVELS) too
    "write.avro.compression-level": integer(0, MAX_AVRO_LEVEL),
    "write.delete.avro.compression-level": integer(0, MAX_AVRO_LEVEL),
    "write.spark.fanout.enabled": BOOLEAN,
    "write.spark.advisory-partition-size-bytes": POSITIVE_LONG,
    "write.wap.enabled": BOOLEAN,
    "write.object-storage.enabled": BOOLEAN,  # LocationProviders: where new files go
    "write.object-storage.partitioned-paths": BOOLEAN,
    "write.metadata.metrics.default": METRICS_MODE,  # MetricsConfig, of each file written
    "write.metadata.metrics.max-inferred-column-defaults": integer(0, JAVA_INT_MAX),
    # ORC's writers (ORC.WriteBuilder and its delete writers), when write.format.default or
    # write.delete.format.default says orc: sizes as Iceberg reads them (propertyAsLong), the
    # write batch as bounded as a read batch, ORC's own names, column names for bloom filters
    **{f"write.{kind}orc.{key}": rule for kind in ("", "delete.") for key, rule in (
        ("stripe-size-bytes", POSITIVE_LONG), ("block-size-bytes", POSITIVE_LONG),
        ("vectorized.batch-size", integer(1, MAX_BATCH_ROWS)),
        ("compression-codec", choice(*ORC_CODECS)),
        ("compression-strategy", choice(*ORC_STRATEGIES)))},
    "write.orc.bloom.filter.columns": NAMES,
    "write.orc.bloom.filter.fpp": FRACTION,
}
# Per-column keys of the same writers (MetricsConfig, Parquet.WriteBuilder.Context): every key
# with the prefix. Java reads a garbage mode as the default (with a warning), a garbage
# boolean as false, a probability with Double.parseDouble (NaN, hex, 1e-2, spaces).
SPARK_REWRITE_PREFIXES: dict[str, Rule] = {
    "write.metadata.metrics.column.": METRICS_MODE,
    "write.parquet.bloom-filter-enabled.column.": BOOLEAN,
    "write.parquet.bloom-filter-fpp.column.": FRACTION,
    "write.parquet.stats-enabled.column.": BOOLEAN,
}
# Read by snapshot expiry (RemoveSnapshots, ExpireSnapshotsSparkAction) and orphan removal
# (DeleteOrphanFilesSparkAction: gc.enabled only). Iceberg's own ref builder takes only
# values > 0 for the same settings on a ref.
GC_KEY = "gc.enabled"
GC: dict[str, Rule] = {GC_KEY: BOOLEAN}
EXPIRE: dict[str, Rule] = {
    **GC,
    "history.expire.max-snapshot-age-ms": POSITIVE_LONG,
    "history.expire.min-snapshots-to-keep": POSITIVE_INT,
    "history.expire.max-ref-age-ms": POSITIVE_LONG,
}
REWRITE = {**EVERY, **COMMIT, **MERGE, **SPARK_REWRITE}
KEYS_BY_ACTION: dict[str, dict[str, Rule]] = {
    "compaction": REWRITE,
    "clustering": REWRITE,
    "rewrite_position_deletes": REWRITE,
    "rewrite_manifests": {**EVERY, **COMMIT},
    "expire_snapshots": {**EVERY, **COMMIT, **EXPIRE},
    "remove_orphan_files": {**EVERY, **GC},
}
PREFIXES_BY_ACTION: dict[str, dict[str, Rule]] = {
    action: SPARK_REWRITE_PREFIXES for action in ("compaction", "clustering",
                                                  "rewrite_position_deletes")}
MAX_SHOWN_CHARS = 40  # of a refused value
_TRUNCATE_RE = re.compile(r"truncate\(([1-9][0-9]{0,9})\)", re.ASCII)
_FRACTION_RE = re.compile(r"0\.[0-9]{1,18}", re.ASCII)
_NAME = r"[A-Za-z_][A-Za-z0-9_.]{0,127}"
_NAMES_RE = re.compile(rf"{_NAME}( ?, ?{_NAME})*", re.ASCII)


def _refuse(key: str, raw: str, expected: str) -> PropertyRefused:
    return PropertyRefused(f"table property {key}={raw[:MAX_SHOWN_CHARS]!r}: expected {expected}")


def parse(key: str, raw: str, rule: Rule) -> int | bool | str | float:
    """``raw`` parsed by ``rule``: an int, a bool, a probability, or a name in lower case."""
    kind, low, high, choices = rule
    if kind == "integer":
        return parse_int(key, raw, low, high)
    if kind == "unset":
        raise _refuse(key, raw, "it unset (TMS runs Iceberg's own location providers only)")
    if kind == "names":
        if len(raw) <= high and (raw == "" or _NAMES_RE.fullmatch(raw)):
            return raw
        raise _refuse(key, raw, f"column names separated by commas (letters, digits, _ and "
                                f"., at most {high} characters in all)")
    if kind == "fraction":
        if _FRACTION_RE.fullmatch(raw) and 0 < float(raw) < 1:
            return float(raw)
        raise _refuse(key, raw, "a probability written 0.<digits>, above 0 and below 1")
    value = raw.lower() if raw.isascii() else ""
    if value in choices:
        return value == "true" if kind == "boolean" else value
    truncate = _TRUNCATE_RE.fullmatch(value) if kind == "metrics" else None
    if truncate and low <= int(truncate.group(1)) <= high:
        return value
    extra = f", truncate(N) with N from {low} to {high}" if kind == "metrics" else ""
    raise _refuse(key, raw, f"one of {', '.join(choices)}{extra} (ASCII, any case, no space)")


def check(props: Mapping[str, str], action: str) -> dict[str, int | bool | str | float]:
    """Every property ``action`` reads that the table sets, parsed (key -> value);
    ``PropertyRefused`` for the first that is not valid. An action not listed reads none.

    ``gc.enabled=false`` is valid, but Iceberg then refuses to expire snapshots or remove
    orphan files (a ``ValidationException`` TMS would otherwise retry): refused here, named."""
    rules = KEYS_BY_ACTION.get(action, {})
    out = {key: parse(key, str(props[key]), rule) for key, rule in rules.items()
           if key in props}
    for prefix, rule in PREFIXES_BY_ACTION.get(action, {}).items():
        for key in sorted(k for k in props if k.startswith(prefix)):
            out[key] = parse(key, str(props[key]), rule)
    for prefix in ("write.", "write.delete."):
        _avro_level(props, out, prefix)
    if out.get(GC_KEY) is False:
        raise PropertyRefused(f"table property {GC_KEY}=false: Iceberg deletes no file of this "
                              f"table, so {action} cannot run (set it to true, or unset it, to "
                              f"let TMS remove unreferenced files)")
    return out


def _avro_level(props: Mapping[str, str], out: Mapping[str, object], prefix: str) -> None:
    """An Avro level within its codec's range (Iceberg's default codec: gzip; a delete
    writer's codec defaults to the data files')."""
    level = out.get(f"{prefix}avro.compression-level")
    if level is None:
        return
    codec = str(props.get(f"{prefix}avro.compression-codec")
                or props.get("write.avro.compression-codec") or "gzip").lower()
    low, high = AVRO_LEVELS.get(codec, (0, MAX_AVRO_LEVEL))
    if not low <= int(str(level)) <= high:
        raise _refuse(f"{prefix}avro.compression-level", str(level),
                      f"a level from {low} to {high} for the Avro codec {codec}")


def manifest_target_bytes(props: Mapping[str, str], default: int) -> int:
    """``commit.manifest.target-size-bytes`` as Iceberg's commit will use it, strictly."""
    key = "commit.manifest.target-size-bytes"
    raw = props.get(key)
    return default if raw is None else int(parse(key, str(raw), COMMIT[key]))
