"""PySpark application that runs one Iceberg maintenance action and writes the outcome as JSON.

Actions (``ACTIONS``), each one Iceberg Spark procedure: ``compaction`` and ``clustering``
(``rewrite_data_files`` binpack / sort or zorder), ``expire_snapshots``, ``remove_orphan_files``,
``rewrite_manifests``, ``rewrite_position_deletes`` (``rewrite_position_delete_files``). The result
is the procedure's result columns. A compaction, clustering or position-delete rewrite may carry
a ``partitions`` option: the rewrite is then restricted by a ``where`` built from the table's
own partition specs (``partition_filter.py``), and the result names the partitions and the
filter.

spark-submit runs this file directly (``spark-submit ... iceberg_maintenance.py --spec-b64 B``),
so it imports nothing but pyspark and the standard library (grpcio too, to report): it must
also work when shipped alone to a cluster, where the driver may run on any node (deploy mode
``cluster``). The spec therefore travels inline and carries secret *references*
(``catalog_secrets``) that the job resolves in the driver (``secret_refs.py``); the result goes
to the TMS API (``report.py``, the attempt's token in ``TMS_JOB_TOKEN``), or to ``--result``
when the spec names no API (local runs and tests). The spec names the catalog exactly as the
TMS side (pyiceberg) names it, because Iceberg's JDBC catalog keys its rows by catalog name: a
different name would see no tables.

Table names and options come from users, so they reach SQL only as validated identifiers or
escaped string literals. The result is always reported, success or not, so the caller never
has to scrape Spark's log output; exit status is 0 on success and 1 on failure. A failure says
whether another attempt could help (``retryable``: false for a bad spec, a missing table, a
missing class, a bad catalog configuration, a permission refusal, a table property out of
range: ``errors.py``, ``table_props.py``, ``maintenance_props.py``) and gives a hint of what
to fix.

The spec is checked in ``job_spec.py`` and the actions' plans are built in ``procedures.py``,
both before Spark starts; this file runs them. Before any action the table's real location,
read from its metadata, is checked against the spec's ``allowed_locations``, and every other
path the table names against that location (``table_guard.py``); ``remove_orphan_files``
deletes only candidates it checked, ``expire_snapshots`` runs only when every file a
snapshot references lies inside the table, and a rewrite reads only files of the current
snapshot that passed the same check (``READS``, ``guard_reads``, ``read_guard.py``). The
catalog's properties, credentials included, reach Spark only as runtime conf set here: never
on a command line.

The warm driver (``warm_driver.py``) runs the same specs through ``run_in_session`` in one
long-lived session. Sibling modules (``locations``, ``errors``, ``table_guard``) come from the
``tms.jobs`` package when installed, else from this file's directory (spark-submit ships them
with ``--py-files``).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

try:
    from tms.jobs import (
        arrow_eligibility,
        arrow_rewrite,
        arrow_spark,
        errors,
        fence,
        maintenance_props,
        manifest_prep,
        outcome,
        partition_filter,
        procedures,
        read_guard,
        report,
        secret_refs,
        spark_catalogs,
        table_guard,
        table_props,
        write_format,
    )
    from tms.jobs.job_spec import MaintenanceRequest, SpecError, quote_ident
    from tms.jobs.procedures import ACTIONS, ProcedureCall, parse_spec
except ImportError:  # shipped alone: the siblings are next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import arrow_eligibility  # type: ignore[no-redef]
    import arrow_rewrite  # type: ignore[no-redef]
    import arrow_spark  # type: ignore[no-redef]
    import errors  # type: ignore[no-redef]
    import fence  # type: ignore[no-redef]
    import maintenance_props  # type: ignore[no-redef]
    import manifest_prep  # type: ignore[no-redef]
    import outcome  # type: ignore[no-redef]
    import partition_filter  # type: ignore[no-redef]
    import procedures  # type: ignore[no-redef]
    import read_guard  # type: ignore[no-redef]
    import report  # type: ignore[no-redef]
    import secret_refs  # type: ignore[no-redef]
    import spark_catalogs  # type: ignore[no-redef]
    import table_guard  # type: ignore[no-redef]
    import table_props  # type: ignore[no-redef]
    import write_format  # type: ignore[no-redef]
    from job_spec import MaintenanceRequest, SpecError, quote_ident  # type: ignore[no-redef]
    from procedures import ACTIONS, ProcedureCall, parse_spec  # type: ignore[no-redef]

MAX_ERROR_CHARS = 4000
STALE_PLAN_RETRIES = 3  # a manifest rewrite planned again after concurrent commits
T = TypeVar("T")
SPARK_CATALOG_CLASS = spark_catalogs.SPARK_CATALOG_CLASS
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
JDBC_CATALOG_IMPL = spark_catalogs.JDBC_CATALOG_IMPL

# Spark error classes that mean "the table is not there": no retry helps.
NOT_FOUND_ERROR_CLASSES = frozenset({"TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND"})
MAX_SPEC_BYTES = 64 * 1024  # an inline spec is one argument: Linux allows 128 KiB
MAX_CAUSES = 8  # of a JVM exception, read for classification


def catalog_conf(name: str, props: Mapping[str, str]) -> dict[str, str]:
    """Spark conf registering catalog ``name`` with the spec's (pyiceberg-style) catalog
    properties: Iceberg's catalog properties for its type and the storage's Hadoop conf, per
    catalog (``spark_catalogs``)."""
    try:
        return spark_catalogs.catalog_conf(name, props)
    except spark_catalogs.CatalogConfError as e:
        raise SpecError(str(e)) from None


def session_hadoop_conf(props: Mapping[str, str]) -> dict[str, str]:
    """The catalog's Hadoop conf for the whole session (``spark.hadoop.*``), set by the
    one-shot job, which serves one catalog: what Spark itself lists or opens outside the
    catalog's FileIO (``remove_orphan_files`` lists the table's directory) reaches the same
    store with the same keys. The warm driver, serving many catalogs, keeps them per catalog."""
    try:
        return {f"spark.hadoop.{k}": v for k, v in spark_catalogs.hadoop_conf(props).items()}
    except spark_catalogs.CatalogConfError as e:
        raise SpecError(str(e)) from None


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
        df = spark.sql(call.sql(spec.catalog_name))
        if spec.action == "remove_orphan_files":
            return table_guard.remove_orphans(df, table, dry_run=bool(call.info["dry_run"]))
        return call.summarize(df)

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


def session_builder(app_name: str) -> Any:
    """A SparkSession builder with Iceberg's SQL extensions and the string-literal mode that
    ``sql_string`` relies on; shared by the one-shot job and the warm driver."""
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.appName(app_name)
        .config("spark.sql.extensions", ICEBERG_EXTENSIONS)
        .config("spark.sql.parser.escapedStringLiterals", "false")
    )


def build_session(spec: MaintenanceRequest) -> Any:
    builder = session_builder(f"tms-{spec.action}-{'.'.join(spec.table)}")
    props = spec.resolved_properties()  # references resolved here, in the driver
    conf = {**session_hadoop_conf(props), **catalog_conf(spec.catalog_name, props)}
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def run_in_session(spark: Any, spec: MaintenanceRequest) -> dict[str, Any]:
    """Run one spec in a session whose catalog is already registered; the success payload.

    ``REFRESH TABLE`` first: the catalog caches loaded tables, and a session that outlives one
    operation (the warm driver) would otherwise plan against a snapshot writers have moved past.
    Then the table's real locations are checked, before any action touches its files.
    """
    spark.sql(f"REFRESH TABLE {spec.qualified_table}")
    table = table_guard.check_table(spark, spec.qualified_table, spec.allowed_locations)
    # the properties Iceberg reads while the action runs (retries, merging, expiry, Spark's
    # read and write conf), before anything is read, written or expired
    maintenance_props.check({str(k): str(v) for k, v in table.handle.properties().items()},
                            spec.action)
    if spec.action == "expire_snapshots":  # it deletes what only expired snapshots name
        read_guard.check_referenced_files(spark, spec.qualified_table, table.own)
    with fence.armed(spark, table) as fenced:  # deletes and renames held to the table
        before = outcome.current_snapshot(table.handle)
        result = run_action(spark, spec, table)
        try:  # what it did, in one shape for every action (the scheduler's no-op hold reads it)
            result["outcome"] = outcome.measure(table.handle, spec.action, result, before)
            if "write_format" in result:  # which codec the rewrite wrote
                result["outcome"]["codec_written"] = result["write_format"].get("codec_written")
        except Exception as e:  # the work is done: a failed reading must not fail it
            print(f"[tms-job] outcome not measured: {type(e).__name__}: {e}", file=sys.stderr)
        result["fence"] = fenced
    return {"ok": True, "action": spec.action, "result": result,
            "spark_app_id": spark.sparkContext.applicationId}


def run(spec: MaintenanceRequest) -> dict[str, Any]:
    spark = build_session(spec)
    if spec.action == "compaction" and arrow_eligibility.switched_off(spec.data_path) is None:
        arrow_spark.prestart_workers(spark)  # a one-shot job: the arrow tasks' workers
    try:
        return run_in_session(spark, spec)
    finally:
        spark.stop()


def describe_error(exc: BaseException) -> tuple[str, str]:
    """(type, message) for the result file, preferring the JVM exception behind a Py4J error."""
    java_exc = getattr(exc, "java_exception", None)
    if java_exc is not None:
        try:
            return str(java_exc.getClass().getName()), str(java_exc.toString())
        except Exception:  # the JVM may already be gone
            pass
    message = str(exc) or traceback.format_exception_only(type(exc), exc)[-1].strip()
    return type(exc).__name__, message


def java_causes(exc: BaseException) -> list[str]:
    """The causes of the JVM exception behind a Py4J error (a missing class is often two
    levels down), for classification."""
    out: list[str] = []
    java_exc = getattr(exc, "java_exception", None)
    try:
        cause = java_exc.getCause() if java_exc is not None else None
        while cause is not None and len(out) < MAX_CAUSES:
            out.append(str(cause.toString()))
            cause = cause.getCause()
    except Exception:  # the JVM may already be gone
        pass
    return out


def error_class(exc: BaseException, error_type: str, message: str) -> errors.ErrorClass:
    """What kind of failure this is: refused specs and locations, missing tables, classes,
    permissions and bad catalog configurations cannot pass on another attempt; everything
    else (lost executors, commit conflicts, an unreachable catalog) may."""
    if isinstance(exc, SpecError):
        return errors.ErrorClass(errors.INVALID_SPEC)
    if isinstance(exc, table_guard.LocationRefused):
        return errors.ErrorClass(errors.LOCATION_REFUSED)
    if isinstance(exc, table_props.PropertyRefused):
        return errors.ErrorClass(errors.INVALID_TABLE_PROPERTY)
    if isinstance(exc, secret_refs.SecretError):
        return errors.ErrorClass(errors.SECRET_UNAVAILABLE)
    get_error_class = getattr(exc, "getErrorClass", None)
    if callable(get_error_class):
        try:
            if get_error_class() in NOT_FOUND_ERROR_CLASSES:
                return errors.ErrorClass(errors.NOT_FOUND)
        except Exception:  # the JVM may already be gone
            pass
    return errors.classify("\n".join([f"{error_type}: {message}", *java_causes(exc)]))


def is_retryable(exc: BaseException, error_type: str, message: str) -> bool:
    return error_class(exc, error_type, message).retryable


def failure_payload(exc: BaseException) -> dict[str, Any]:
    """The result file's content for a failed run; ``hint`` says what kind of error it is and
    what to fix (absent for errors another attempt may fix)."""
    error_type, message = describe_error(exc)
    kind = error_class(exc, error_type, message)
    payload = {"ok": False, "error_type": error_type, "error": message[:MAX_ERROR_CHARS],
               "retryable": kind.retryable}
    if kind.kind is not None:
        payload["error_class"] = kind.kind
        payload["hint"] = kind.hint
    return payload


def write_result(path: Path, payload: dict[str, Any]) -> None:
    """Write atomically so a reader never sees half a result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(payload, f, default=str)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def read_spec(args: argparse.Namespace) -> Any:
    """The spec from ``--spec-b64`` (inline: no file on the executor's disk, so the driver may
    run anywhere) or ``--spec`` (a file, for local runs and tests)."""
    if args.spec_b64 is not None:
        raw = args.spec_b64.encode()
        if len(raw) > MAX_SPEC_BYTES * 2:
            raise SpecError(f"the inline spec is larger than {MAX_SPEC_BYTES} bytes")
        try:
            return json.loads(base64.b64decode(raw, validate=True))
        except (ValueError, binascii.Error) as e:
            raise SpecError(f"--spec-b64 is not base64 of a JSON object: {e}") from None
    return json.loads(args.spec.read_text())


def report_of(raw: Any) -> dict[str, Any] | None:
    """The spec's report target even when the rest of the spec is refused, so a bad spec is
    reported like any other failure; None when absent or itself malformed."""
    try:
        return report.parse_report(raw.get("report")) if isinstance(raw, dict) else None
    except ValueError:
        return None


def deliver(report_to: dict[str, Any] | None, payload: dict[str, Any],
            result_path: Path | None) -> bool:
    """Report through the API when the spec says where, else write the result file. False
    when the result could not be delivered (the log then says why)."""
    if report_to is not None:
        try:
            return report.send(report_to, payload)
        except (report.ReportError, OSError) as e:
            print(f"[tms-job] ReportError: {e}", file=sys.stderr)
            return False
    if result_path is None:
        print("[tms-job] ReportError: no --result file and no report target: the job "
              "cannot report its result", file=sys.stderr)
        return False
    write_result(result_path, payload)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run one Iceberg maintenance action.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--spec", type=Path, help="job spec JSON file")
    source.add_argument("--spec-b64", help="job spec JSON, base64 (references, no secrets)")
    parser.add_argument("--result", type=Path,
                        help="where to write result JSON when the spec has no report target")
    args = parser.parse_args(argv)
    report_to = None
    try:
        raw = read_spec(args)
        report_to = report_of(raw)
        payload = run(parse_spec(raw))
    except Exception as exc:
        payload = failure_payload(exc)
        print(f"[tms-job] {payload['error_type']}: {payload['error']}", file=sys.stderr)
    if not deliver(report_to, payload, args.result):
        return 1
    return 0 if payload["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
