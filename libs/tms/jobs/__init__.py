"""Applications that run inside Spark (via spark-submit), not inside the TMS processes.

``tms.jobs`` is imported as a package wherever it runs: spark-submit gets it, with the core
modules it imports, as one zip (``--py-files``, built by ``tms.spark.job_package``), so a driver
on a cluster with nothing but pyspark imports it too. What runs in the driver before Spark is
imported uses only the standard library. Callers pass the application's path, available here.
"""

from pathlib import Path

ICEBERG_MAINTENANCE_APP = Path(__file__).with_name("iceberg_maintenance.py")
# The long-lived driver of the warm engine: runs the maintenance app's specs in one session.
WARM_DRIVER_APP = Path(__file__).with_name("warm_driver.py")
