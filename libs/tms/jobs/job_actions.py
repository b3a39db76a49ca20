"""Running one action on a checked table: the procedure call, planned again when a writer's
commit made a manifest rewrite stale (``replanning``); a rewrite with the table's own codec,
its manifests merged first, on the arrow path when eligible; and the read checks of what a
rewrite reads (``READS``, ``guard_reads``: the table's own location only). Split from
``iceberg_maintenance`` (which checks the table and arms the fence around this); the names
are re-exported there.

Imports only pyspark (lazily, through the session) and the standard library.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

from tms import failures as errors
from tms.jobs import (
    arrow_rewrite,
    job_boundary,
    manifest_prep,
    outcome,
    partition_filter,
    procedures,
    read_guard,
    table_guard,
    table_props,
    write_format,
)
from tms.jobs.job_failure import describe_error, java_causes
from tms.jobs.job_spec import MaintenanceRequest, quote_ident
from tms.jobs.procedures import ACTIONS, ProcedureCall

STALE_PLAN_RETRIES = 3  # a manifest rewrite planned again after concurrent commits
T = TypeVar("T")


def replanning(spark: Any, spec: MaintenanceRequest, work: Callable[[], T]) -> tuple[T, int]:
    """``work()``, planned again from the table's new snapshot (at most
    ``STALE_PLAN_RETRIES`` times) when a concurrent commit made its manifest rewrite stale
    (``errors.stale_manifests``): a conflict with a writer, resolved in the job, not an
    attempt of the operation spent. Returns the result and how many times it was planned
    again; any other error, or the last stale one, is raised."""
    for replanned in range(STALE_PLAN_RETRIES + 1):
        try:
            return work(), replanned
        except Exception as exc:
            error_type, message = describe_error(exc)
            text = "\n".join([f"{error_type}: {message}", *java_causes(exc)])
            if replanned == STALE_PLAN_RETRIES or not errors.stale_manifests(text):
                raise
            print(f"[tms-job] a concurrent commit replaced manifests this rewrite planned to "
                  f"replace; planning again ({replanned + 1}/{STALE_PLAN_RETRIES})",
                  file=sys.stderr)
            spark.sql(f"REFRESH TABLE {spec.qualified_table}")
    raise AssertionError("unreachable")  # the loop returns or raises


# What a rewrite reads from the current snapshot besides its manifests: the metadata tables
# ``read_guard.check_current_files`` scans. A compaction's data files are its planned inputs,
# checked whatever path runs (``arrow_rewrite.check_inputs``); its delete files are read on
# Spark's path only, checked there (``spark_path_reads``).
READS: dict[str, tuple[tuple[str, str], ...]] = {
    "compaction": (),
    "clustering": read_guard.CURRENT_FILES,
    "rewrite_position_deletes": read_guard.CURRENT_FILES,
    "rewrite_manifests": read_guard.CURRENT_FILES,
}


def guard_reads(spark: Any, spec: MaintenanceRequest, table: table_guard.CheckedTable,
                tables: tuple[tuple[str, str], ...], refresh: bool = False) -> str | None:
    """The current snapshot's files the action reads checked against the table's own
    location (``read_guard.check_current_files``): another tenant's table may lie inside the
    catalog's allowed locations, and a rewrite would copy its rows into this one. The
    snapshot id. ``refresh``: the table was refreshed for a new plan, the handle is loaded
    again first."""
    if refresh:
        table.handle.refresh()
    return read_guard.check_current_files(spark, spec.qualified_table, table.handle,
                                           table.own, spec.action, tables)


def spark_path_reads(tried: arrow_rewrite.Attempt) -> tuple[tuple[str, str], ...]:
    """What a compaction on Spark's path reads that no check saw: the delete files it applies,
    and the data files too when the arrow attempt stopped before checking its inputs."""
    return read_guard.CURRENT_DELETE_FILES if tried.inputs_checked else \
        read_guard.CURRENT_FILES


def run_action(spark: Any, spec: MaintenanceRequest, table: table_guard.CheckedTable
               ) -> dict[str, Any]:
    """Run the spec's procedure on the checked table; returns its result columns (plus the
    call's own info)."""
    call = ACTIONS[spec.action](spec)
    if call.partitions:
        call = procedures.restrict(call, partition_filter.specs_of(table.handle))
    if call.write is not None:
        return run_rewrite(spark, spec, table, call)

    planned: list[str | None] = []

    def once() -> dict[str, Any]:
        if spec.action in READS:  # rewrite_manifests: the snapshot planned (again) is checked
            planned.append(guard_reads(spark, spec, table, READS[spec.action],
                                       refresh=bool(planned)))
        if spec.action == "remove_orphan_files":  # only the directories the table writes
            candidates = job_boundary.orphan_candidates(spark, spec.catalog_name, call, table)
            return table_guard.remove_orphans(candidates, table,
                                              dry_run=bool(call.info["dry_run"]))
        return call.summarize(spark.sql(call.sql(spec.catalog_name)))

    result, replanned = replanning(spark, spec, once)
    if replanned:
        result["replanned_after_conflict"] = replanned
    return {**result, **call.info}


def run_rewrite(spark: Any, spec: MaintenanceRequest, table: table_guard.CheckedTable,
                call: ProcedureCall) -> dict[str, Any]:
    """A rewrite written with the table's own codec (``write_format``): the session's codec
    set for this call only; the result says what was chosen, why, and what a file the
    rewrite added really holds (``write_format.written_codec``). Many small manifests are
    merged first, so the rewrite's commit does not rewrite each of them (``manifest_prep``)."""
    assert call.write is not None
    deletes = spec.action == "rewrite_position_deletes"
    checked = guard_reads(spark, spec, table, READS[spec.action])  # before manifests merge
    fmt = write_format.plan(table.handle, *call.write, deletes=deletes)
    # the owner's writer properties, before anything is written (manifests included)
    table_props.check({str(k): str(v) for k, v in table.handle.properties().items()},
                      fmt.codec, deletes)
    table_props.check_level(fmt.codec, fmt.level)  # the policy's level for the codec chosen
    manifests, _ = replanning(spark, spec, lambda: manifest_prep.consolidate(
        spark, procedures._table_arg(spec), quote_ident(spec.catalog_name), table.handle,
        enabled=call.manifests_first))
    before = outcome.current_snapshot(table.handle)
    if before != checked:  # manifests merged (or a writer's commit): the new snapshot too
        guard_reads(spark, spec, table, READS[spec.action])
    path: dict[str, Any] = {}
    result = None
    if spec.action == "compaction":  # bin-pack: pyarrow in Spark tasks when eligible
        tried = arrow_rewrite.attempt(spark, table.handle, spec.qualified_table, call.options,
                                      call.where, fmt.codec, fmt.level,
                                      table.own, spec.data_path,
                                      spec.resolved_properties())
        result = tried.result
        path = {"data_path": "arrow"} if result is not None else {
            "data_path": "spark", "arrow_refused": tried.refused}
        if result is None:
            guard_reads(spark, spec, table, spark_path_reads(tried))
    if result is None:
        with write_format.session_conf(spark, fmt.session):
            result = call.summarize(spark.sql(call.sql(spec.catalog_name)))
    info = fmt.info()
    table.handle.refresh()
    if outcome.current_snapshot(table.handle) != before:
        info["codec_written"] = write_format.written_codec(table.handle, deletes)
    return {**result, **call.info, **path, "write_format": info,
            "manifests_first": manifests}


