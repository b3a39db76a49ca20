"""Before a rewrite commits: merge a writer's many small manifests first, so the commit's cost
does not grow with the writer's history.

A rewrite's commit rewrites every manifest that lists a file it replaces (the file is kept
there as a DELETED entry), then merges manifests once there are
``commit.manifest.min-count-to-merge`` of them. A table written by many small appends (one
manifest per commit, pyiceberg's default) thus made the compaction's commit write one manifest
per writer commit, 402 of them for 400 commits (measured; ``docs/figures.md``), and merge
them again before committing. Rewriting the manifests first (Iceberg's ``rewrite_manifests``,
its own commit) reads them once and writes a few; the rewrite's commit then rewrites only
those.

Only small manifests count: a table whose manifests are near Iceberg's target size
(``commit.manifest.target-size-bytes``, 8 MiB) is not rewritten for a small compaction.

When the manifests together fit in one manifest of the target size, the merge runs in the
driver through Iceberg's core API (``Table.rewriteManifests()`` with one constant cluster key:
every live entry of a spec into one rolling manifest, exactly what the Spark procedure writes
then), not as the ``rewrite_manifests`` procedure's Spark job (a shuffle and two stages for a
few hundred small files): measured on 400 tiny commits (issue 17, docs/figures.md). The
constant key is a ``java.util.function.Function`` made by the Guava that Hadoop ships shaded
(``CONSTANT_FUNCTIONS``); where the classpath has none, or the merge is larger, the procedure
runs as before. The target is the table owner's, parsed strictly (``maintenance_props``).
Standard library only; the JVM objects come in.
"""

from __future__ import annotations

from typing import Any

from tms.jobs import maintenance_props

TARGET_PROPERTY = "commit.manifest.target-size-bytes"
TARGET_DEFAULT_BYTES = 8 * 1024 * 1024  # Iceberg's MANIFEST_TARGET_SIZE_BYTES_DEFAULT
SMALL_RATIO = 0.25  # a manifest below this share of the target is small
# small manifests from which they are merged before a rewrite: Iceberg's own
# commit.manifest.min-count-to-merge default. The merge costs a few seconds of its own
# (measured with bench/rewrite_commit_bench.py: slower than the commit it saves at 40
# manifests, 0.57 x the time at 400)
MIN_SMALL_MANIFESTS = 100
# Guava's Functions, as shaded by Hadoop (hadoop-shaded-guava, in Spark's own jars): its
# Function extends java.util.function.Function, which Table.rewriteManifests().clusterBy takes
CONSTANT_FUNCTIONS = "org.apache.hadoop.thirdparty.com.google.common.base.Functions"
CLUSTER_KEY = "tms-merge"
# the new snapshot's summary (Iceberg's SnapshotSummary keys of a manifest rewrite)
REPLACED_KEY, CREATED_KEY = "manifests-replaced", "manifests-created"


def target_bytes(props: Any) -> int:
    """The table's manifest target, parsed as strictly as the job checked it first
    (``maintenance_props``): a value Iceberg's commit would read differently, or refuse, is
    ``PropertyRefused`` here too, never quietly the default."""
    return maintenance_props.manifest_target_bytes(props, TARGET_DEFAULT_BYTES)


def count(handle: Any) -> tuple[int, int]:
    """(manifests, small manifests) of the table's current snapshot, from its manifest list."""
    return sizes(handle)[:2]


def sizes(handle: Any) -> tuple[int, int, int]:
    """(manifests, small manifests, bytes of all manifests) of the current snapshot."""
    snap = handle.currentSnapshot()
    if snap is None:
        return 0, 0, 0
    limit = target_bytes(handle.properties()) * SMALL_RATIO
    total = small = size = 0
    for manifest in snap.allManifests(handle.io()):
        total += 1
        size += int(manifest.length())
        if manifest.length() < limit:
            small += 1
    return total, small, size


def constant_key(jvm: Any) -> Any | None:
    """A JVM ``Function`` that maps every file to ``CLUSTER_KEY``, or None when the classpath
    has no Guava to make one (a Py4J package that does not exist is not callable)."""
    try:
        functions = jvm
        for part in CONSTANT_FUNCTIONS.split("."):
            functions = getattr(functions, part)
        return functions.constant(CLUSTER_KEY)
    except Exception:
        return None


def merge_in_driver(handle: Any, key: Any) -> dict[str, Any]:
    """Merge the current snapshot's data manifests with Iceberg's core API, in this process:
    one commit, what it rewrote and wrote read back from its snapshot's summary."""
    handle.rewriteManifests().clusterBy(key).commit()
    handle.refresh()
    summary = handle.currentSnapshot().summary()
    return {"rewritten": int(summary.get(REPLACED_KEY) or 0),
            "added": int(summary.get(CREATED_KEY) or 0), "merged_in": "driver"}


def needed(small: int, minimum: int = MIN_SMALL_MANIFESTS) -> bool:
    return small >= minimum


def consolidate(spark: Any, table_arg: str, catalog: str, handle: Any, enabled: bool = True
                ) -> dict[str, Any]:
    """Merge the current snapshot's manifests when many are small (and ``enabled``: the
    operation's ``manifests-first``); what it found and did (``rewritten``/``added`` are
    absent when nothing was rewritten)."""
    total, small, size = sizes(handle)
    info: dict[str, Any] = {"manifests": total, "small_manifests": small}
    if not enabled or not needed(small):
        return info
    key = constant_key(spark.sparkContext._jvm) if size <= target_bytes(
        handle.properties()) else None
    if key is not None:
        info.update(merge_in_driver(handle, key))
        return info
    rows = spark.sql(f"CALL {catalog}.system.rewrite_manifests({table_arg})").collect()
    if rows:
        row = rows[0].asDict()
        info.update(rewritten=int(row.get("rewritten_manifests_count") or 0),
                    added=int(row.get("added_manifests_count") or 0), merged_in="spark")
    handle.refresh()
    return info
