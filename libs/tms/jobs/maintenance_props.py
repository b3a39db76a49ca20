"""The table properties Iceberg itself reads while a maintenance action runs (commit retries,
manifest merging, snapshot expiry, metadata log, Spark's read and write conf), parsed strictly
before the action touches anything: a table owner sets them, so any value may arrive.

``table_props`` covers the writer's properties (``write.parquet.*``, target sizes, levels);
this module covers the rest, per action (``KEYS_BY_ACTION``), as found in the classes of the
Iceberg runtime TMS ships (``docs/security.md`` lists each with the class that reads it).
Iceberg parses them with ``Integer.parseInt`` / ``Long.parseLong`` (a sign, leading zeros and
non-ASCII digits pass), ``Boolean.parseBoolean`` (``"true"`` in any case is true, *anything
else* silently false: ``gc.enabled=yes`` disables expiry without a word) and
``Enum.valueOf(name.toUpperCase())`` or ``equalsIgnoreCase`` (so Java takes ``"gzıp"`` for
``GZIP``: the dotless i upper-cases to ``I``). Here an integer is ASCII digits within a range
that bounds what the table can make a job do (``table_props.parse_int``), a boolean is ASCII
``true``/``false`` in any case (what Iceberg reads as such), an enum one of Iceberg's own names
in ASCII, any case. Anything else fails the operation, not retried, with
``table_props.PropertyRefused`` naming the property and what it may be.

The bounds matter because the job holds an executor slot until Iceberg returns, and TMS sets no
run-time limit on an attempt: a commit that keeps failing (the owner's own writers can make it)
is retried ``commit.retry.num-retries`` times, sleeping up to ``commit.retry.max-wait-ms``
between attempts, until ``commit.retry.total-timeout-ms`` has passed (Iceberg's ``Tasks``);
an unknown commit outcome is checked the same way (``commit.status-check.*``). A huge
vectorized batch size is an executor's memory; a huge manifest target makes ``manifest_prep``
merge everything in the driver. Iceberg checks snapshot refs' own retention (``min-snapshots-to-
keep``, ``max-snapshot-age-ms``, ``max-ref-age-ms`` in the metadata's refs: typed JSON, each
required > 0) when it loads the table, before this runs.

Standard library only: shipped next to the maintenance job.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

try:
    from tms.jobs.table_props import JAVA_INT_MAX, JAVA_LONG_MAX, PropertyRefused, parse_int
except ImportError:  # shipped alone: the siblings are next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from table_props import (  # type: ignore[no-redef]
        JAVA_INT_MAX,
        JAVA_LONG_MAX,
        PropertyRefused,
        parse_int,
    )

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

Rule = tuple[str, int, int, tuple[str, ...]]  # (kind, low, high, choices)


def integer(low: int, high: int) -> Rule:
    return ("integer", low, high, ())


def choice(*names: str) -> Rule:
    return ("enum", 0, 0, names)


BOOLEAN: Rule = ("boolean", 0, 0, ("true", "false"))
POSITIVE_LONG, POSITIVE_INT = integer(1, JAVA_LONG_MAX), integer(1, JAVA_INT_MAX)

# Read by every action: the metadata tables the guards and Iceberg's actions scan through
# Spark (BaseMetadataTableScan, BaseScan).
EVERY: dict[str, Rule] = {
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
    "write.spark.fanout.enabled": BOOLEAN,
    "write.spark.advisory-partition-size-bytes": POSITIVE_LONG,
    "write.wap.enabled": BOOLEAN,
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
MAX_SHOWN_CHARS = 40  # of a refused value


def parse(key: str, raw: str, rule: Rule) -> int | bool | str:
    """``raw`` parsed by ``rule``: an int, a bool, or an enum's name in lower case."""
    kind, low, high, choices = rule
    if kind == "integer":
        return parse_int(key, raw, low, high)
    if raw.isascii() and raw.lower() in choices:
        value = raw.lower()
        return value == "true" if kind == "boolean" else value
    raise PropertyRefused(f"table property {key}={raw[:MAX_SHOWN_CHARS]!r}: expected one of "
                          f"{', '.join(choices)} (ASCII, any case, no space)")


def check(props: Mapping[str, str], action: str) -> dict[str, int | bool | str]:
    """Every property ``action`` reads that the table sets, parsed (key -> value);
    ``PropertyRefused`` for the first that is not valid. An action not listed reads none.

    ``gc.enabled=false`` is valid, but Iceberg then refuses to expire snapshots or remove
    orphan files (a ``ValidationException`` TMS would otherwise retry): refused here, named."""
    rules = KEYS_BY_ACTION.get(action, {})
    out = {key: parse(key, str(props[key]), rule) for key, rule in rules.items()
           if key in props}
    if out.get(GC_KEY) is False:
        raise PropertyRefused(f"table property {GC_KEY}=false: Iceberg deletes no file of this "
                              f"table, so {action} cannot run (set it to true, or unset it, to "
                              f"let TMS remove unreferenced files)")
    return out


def manifest_target_bytes(props: Mapping[str, str], default: int) -> int:
    """``commit.manifest.target-size-bytes`` as Iceberg's commit will use it, strictly."""
    key = "commit.manifest.target-size-bytes"
    raw = props.get(key)
    return default if raw is None else int(parse(key, str(raw), COMMIT[key]))
