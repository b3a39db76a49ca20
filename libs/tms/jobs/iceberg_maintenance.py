"""PySpark application that runs one Iceberg maintenance action and writes the outcome as JSON.

Actions (``ACTIONS``), each one Iceberg Spark procedure: ``compaction`` and ``clustering``
(``rewrite_data_files`` binpack / sort or zorder), ``expire_snapshots``, ``remove_orphan_files``,
``rewrite_manifests``, ``rewrite_position_deletes`` (``rewrite_position_delete_files``). The result
is the procedure's result columns. A compaction, clustering or position-delete rewrite may carry
a ``partitions`` option: the rewrite is then restricted by a ``where`` built from the table's
own partition specs (``partition_filter.py``), and the result names the partitions and the
filter.

spark-submit runs this file directly (``spark-submit ... iceberg_maintenance.py --spec-b64 B``),
with the job's package on its path (``--py-files``: the zip ``tms.spark.job_package`` builds),
so it imports nothing but that package, pyspark and the standard library (grpcio too, to
report): it must also work on a cluster with no TMS installed, where the driver may run on any
node (deploy mode ``cluster``). The spec therefore travels inline and carries secret
*references* (``catalog_secrets``) that the job resolves in the driver (``tms.secrets``); the
result goes to the TMS API (``report.py``, the attempt's token in ``TMS_JOB_TOKEN``), or to
``--result`` when the spec names no API (local runs and tests). The spec names the catalog
exactly as the TMS side (pyiceberg) names it, because Iceberg's JDBC catalog keys its rows by
catalog name: a different name would see no tables.

Table names and options come from users, so they reach SQL only as validated identifiers or
escaped string literals. The result is always reported, success or not, so the caller never
has to scrape Spark's log output; exit status is 0 on success and 1 on failure. A failure says
whether another attempt could help (``retryable``: false for a bad spec, a missing table, a
missing class, a bad catalog configuration, a permission refusal, a table property out of
range: ``tms.failures``, ``table_props.py``, ``maintenance_props.py``) and gives a hint of what
to fix.

The spec is checked in ``job_spec.py`` and the actions' plans are built in ``procedures.py``,
both before Spark starts; this file runs them. Before any action the table's real location,
read from its metadata, is checked against the spec's ``allowed_locations``, and every other
path the table names against that location (``table_guard.py``); ``remove_orphan_files``
deletes only candidates it checked, ``expire_snapshots`` runs only when every file a
snapshot references lies inside the table, and a rewrite reads only files of the current
snapshot that passed the same check (``READS``, ``guard_reads``, ``read_guard.py``); the
action itself, and what it deletes or renames, is held to the table by the deletion fence
(``fence.py``). Running the action is ``job_actions.py``, describing and classifying a
failure ``job_failure.py``. The catalog's properties, credentials included, reach Spark only
as runtime conf set here: never on a command line.

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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tms.jobs import (
    arrow_eligibility,
    arrow_spark,
    fence,
    job_boundary,
    maintenance_props,
    outcome,
    read_guard,
    report,
    spark_catalogs,
    table_guard,
)
from tms.jobs.job_actions import (  # re-exported: the runner's names, as before the split
    READS,
    STALE_PLAN_RETRIES,
    run_action,
    spark_path_reads,
)
from tms.jobs.job_failure import (
    MAX_ERROR_CHARS,
    describe_error,
    failure_payload,
    is_retryable,
)
from tms.jobs.job_spec import MaintenanceRequest, SpecError
from tms.jobs.procedures import ACTIONS, parse_spec

__all__ = ["ACTIONS", "MAX_ERROR_CHARS", "READS", "STALE_PLAN_RETRIES", "describe_error",
           "failure_payload", "is_retryable", "run_action", "spark_path_reads"]

SPARK_CATALOG_CLASS = spark_catalogs.SPARK_CATALOG_CLASS
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
JDBC_CATALOG_IMPL = spark_catalogs.JDBC_CATALOG_IMPL

MAX_SPEC_BYTES = 64 * 1024  # an inline spec is one argument: Linux allows 128 KiB


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
    table = table_guard.check_table(spark, spec.qualified_table, spec.allowed_locations,
                                    spec.location)
    # the properties Iceberg reads while the action runs (retries, merging, expiry, Spark's
    # read and write conf), before anything is read, written or expired
    maintenance_props.check({str(k): str(v) for k, v in table.handle.properties().items()},
                            spec.action)
    # no further than the table: no warehouse root, and before a delete no other table's
    # files under its location (job_boundary)
    bounded = job_boundary.check(spark, spec.action, spec.catalog_properties, table)
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
        if spec.action in job_boundary.DELETING_ACTIONS:  # what the scan before it read
            result["boundary"] = bounded
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
        # the whole wrapper (Spark's stage failure with its task's trace) stays in the log;
        # the payload's error is its root cause
        error_type, message = describe_error(exc)
        print(f"[tms-job] {error_type}: {message}", file=sys.stderr)
        if payload.get("wrapped_in"):
            print(f"[tms-job] root cause: {payload['error_type']}: {payload['error']}",
                  file=sys.stderr)
    if not deliver(report_to, payload, args.result):
        return 1
    return 0 if payload["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
