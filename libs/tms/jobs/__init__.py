"""Applications that run inside Spark (via spark-submit), not inside the TMS processes.

Each job is a standalone script using only pyspark and the standard library, so spark-submit can
ship it to a cluster with its sibling modules (``JOB_SUPPORT_FILES``, given to ``--py-files``);
callers pass its path, available here.
"""

from pathlib import Path

ICEBERG_MAINTENANCE_APP = Path(__file__).with_name("iceberg_maintenance.py")
# The long-lived driver of the warm engine: runs the maintenance app's specs in one session.
WARM_DRIVER_APP = Path(__file__).with_name("warm_driver.py")
# Standard-library modules the jobs import: shipped next to them when TMS is not installed.
JOB_SUPPORT_FILES = tuple(Path(__file__).with_name(name)
                          for name in ("locations.py", "errors.py", "table_guard.py",
                                       "read_guard.py", "spark_catalogs.py", "jars.py",
                                       "secret_refs.py", "report.py", "partition_filter.py",
                                       "outcome.py", "parquet_footer.py", "write_format.py",
                                       "manifest_prep.py", "warmup.py", "arrow_task.py",
                                       "arrow_store.py", "arrow_eligibility.py", "arrow_commit.py",
                                       "arrow_rewrite.py", "arrow_s3.py", "table_props.py",
                                       "arrow_progress.py", "arrow_spark.py", "job_spec.py",
                                       "procedures.py", "arrow_readahead.py",
                                       "maintenance_props.py", "fence.py", "job_actions.py",
                                       "job_failure.py", "boundary.py", "job_boundary.py"))
