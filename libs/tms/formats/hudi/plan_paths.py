"""What a pending Hudi plan may name: every path inside the table, every class one of Hudi's own.

The rules :mod:`tms.formats.hudi.plan_guard` applies to each pending plan, and
:mod:`tms.formats.hudi.markers`, :mod:`tms.formats.hudi.clean_guard` and
:mod:`tms.formats.hudi.props_guard` to the paths they read: a path field (by its Avro field
name, wherever it is nested), and any other value that is an absolute path or URI, must resolve
inside the table's base path (a relative value joined as Hudi joins it, with no ``.`` / ``..``
segment; both normalised by the one location normaliser, local paths with every symlink
followed); a class name must be one of Hudi's own strategy classes (``ALLOWED_CLASSES``) or
empty.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tms import locations
from tms.formats.hudi.plans import PendingPlan, PlanRefused
from tms.locations import Location, LocationError

MAX_SHOWN = 3  # offending values named in a refusal
MAX_VALUES = 1_000_000  # strings looked at per plan: a bound on a hostile plan's cost
# fields whose values are paths or partition paths (Hudi's plan and commit-metadata models)
PATH_FIELDS = frozenset({
    "partitionPath", "partitionPaths", "partitionsToBeDeleted", "metadataPartitionPath",
    "dataFilePath", "deltaFilePaths", "bootstrapFilePath", "filePath", "filesToBeDeleted",
    "path", "tempPath", "baseFile", "logFiles", "prevBaseFile", "savepointedDataFiles",
    "successDeleteFiles", "failedDeleteFiles", "deletePathPatterns"})
# maps keyed by a path (a partition, a log file)
PATH_KEYED_MAPS = frozenset({
    "filesToBeDeletedPerPartition", "filePathsToBeDeletedPerPartition", "logBlocksToBeDeleted",
    "partitionToWriteStats", "partitionToReplaceFileIds", "cdcStats", "partitionMetadata"})
# maps whose keys are partitions, and whose values are then relative to them
PARTITION_KEYED_MAPS = frozenset({"filesToBeDeletedPerPartition",
                                  "filePathsToBeDeletedPerPartition"})
# free-form maps: their values are not paths (schemas, checkpoints, numbers)
OPAQUE_MAPS = frozenset({"extraMetadata", "metrics", "strategyParams"})
_STRATEGY = "org.apache.hudi.client.clustering.run.strategy."
# the compaction executors and clustering execution strategies Hudi ships (0.14 - 1.x)
ALLOWED_CLASSES = frozenset({
    "org.apache.hudi.table.action.compact.CompactionExecutionHelper",
    "org.apache.hudi.table.action.compact.LogCompactionExecutionHelper",
    _STRATEGY + "SparkSortAndSizeExecutionStrategy",
    _STRATEGY + "SparkSingleFileSortExecutionStrategy",
    _STRATEGY + "SparkConsistentBucketClusteringExecutionStrategy",
    _STRATEGY + "SingleSparkJobConsistentHashingExecutionStrategy",
    _STRATEGY + "SparkStreamCopyClusteringExecutionStrategy",
    _STRATEGY + "SparkBinaryCopyClusteringExecutionStrategy",
    _STRATEGY + "JavaSortAndSizeExecutionStrategy",
})
_ABSOLUTE_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:|/")



def shown(found: list[str]) -> str:
    """The first ``MAX_SHOWN`` offending values of a refusal, and how many more there are."""
    more = f" (and {len(found) - MAX_SHOWN} more)" if len(found) > MAX_SHOWN else ""
    return "; ".join(found[:MAX_SHOWN]) + more


def problems(plan: PendingPlan, table: Location) -> list[str]:
    """What in ``plan`` lies outside ``table`` (its resolved base) or names a class Hudi does
    not ship; empty when nothing does."""
    out: list[str] = []
    try:
        _look(plan.record, str(table), table, out)
    except PlanRefused as e:  # a value that cannot be read as Hudi would
        out.append(str(e))
    return out


def _look(record: Any, base: str, table: Location, out: list[str]) -> None:
    for kind, field, value, partition in _values(record):
        if kind == "class":
            if value and value not in ALLOWED_CLASSES:
                out.append(f"{field} names class {value[:200]!r}, not one of Hudi's own "
                           "strategy classes")
            continue
        if kind == "any" and not _ABSOLUTE_RE.match(value):
            continue  # a value of no path field that is no absolute path either
        why = path_problem(value, base, partition, table)
        if why:
            out.append(f"{field} {value[:200]!r} {why}")


def relative_shape_problem(value: str) -> str | None:
    """Why ``value``, joined to a directory as Hadoop's and Hudi's ``Path(parent, child)``
    join it, would not stay a path below that directory by its shape alone (absolute, a
    scheme, an empty, '.' or '..' segment); None when it would."""
    if value.startswith("/"):
        return "is an absolute path (Path(parent, it) takes it as it is)"
    if ":" in value.split("/", 1)[0]:
        return "has a ':' before its first '/' (Hadoop's Path reads a scheme there)"
    if any(s in ("", ".", "..") for s in value.split("/")):
        return "has an empty, '.' or '..' segment"
    return None


def path_problem(value: str, base: str, partition: str | None, table: Location) -> str | None:
    """Why ``value`` (a path in a plan; relative ones to ``partition`` under ``base``) is
    refused, or None when it resolves inside ``table``."""
    if not value:
        return None  # Hudi's "no partition" / "no bootstrap file"
    if _ABSOLUTE_RE.match(value):
        raw = value
    else:
        if any(seg in (".", "..") for seg in value.split("/")):
            return "has a '.' or '..' segment"
        parent = base  # as Hudi joins it: an absolute partition wins (checked on its own)
        if partition and (_ABSOLUTE_RE.match(partition) or ".." not in partition.split("/")):
            parent = partition if _ABSOLUTE_RE.match(partition) else f"{base}/{partition}"
        raw = f"{parent}/{value}"
    try:
        where = locations.resolve(locations.parse(raw, literal=True))
    except LocationError as e:
        return f"is refused: {e}"
    if not where.is_under(table):
        return f"resolves to {str(where)[:300]!r}, outside the table at {str(table)[:300]!r}"
    return None


def _values(record: Any) -> Iterator[tuple[str, str, str, str | None]]:
    """(kind: path / class / any, field name, value, the enclosing record's partitionPath) for
    every string in ``record``; bytes are read as UTF-8 (Avro lets a writer's ``bytes`` fill a
    reader's ``string``), and a value that is not UTF-8 is refused."""
    count = 0
    stack: list[tuple[Any, str, str | None, str]] = [(record, "", None, "")]
    while stack:
        node, field, partition, container = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise PlanRefused(f"a plan with more than {MAX_VALUES} values is not checked")
        if isinstance(node, bytes):
            try:
                node = node.decode("utf-8")
            except UnicodeDecodeError:
                raise PlanRefused(f"field {field} holds bytes that are not UTF-8") from None
        if isinstance(node, str):
            if field.lower().endswith("classname") or (
                    container == "strategyParams" and field.endswith(".class")):
                yield "class", field, node, partition
            elif field in PATH_FIELDS or field == f"{container}[]":  # a path-keyed map's value
                yield "path", field, node, partition
            elif container not in OPAQUE_MAPS:
                yield "any", field, node, partition
        elif isinstance(node, dict):
            own = node.get("partitionPath")
            if isinstance(own, bytes):
                own = own.decode("utf-8", errors="replace")
            here = own if isinstance(own, str) else partition
            if field == "partitionToWriteStats[]":
                here = None  # a write stat's paths are relative to the base path
            for key, value in node.items():
                if field in PATH_KEYED_MAPS and container != field:
                    yield "path", f"{field} key", str(key), None
                    inner = str(key) if field in PARTITION_KEYED_MAPS else here
                    stack.append((value, f"{field}[]", inner, field))
                elif field in OPAQUE_MAPS and container != field:
                    stack.append((value, str(key), here, field))
                else:
                    stack.append((value, str(key), here, container))
        elif isinstance(node, list):
            for item in node:
                stack.append((item, field, partition, container))


__all__ = ["ALLOWED_CLASSES", "path_problem", "problems", "relative_shape_problem", "shown"]
