"""Applications that run inside Spark (via spark-submit), not inside the TMS processes.

Each job is a standalone script using only pyspark and the standard library, so spark-submit can
ship the single file to a cluster; callers pass its path, available here.
"""

from pathlib import Path

ICEBERG_MAINTENANCE_APP = Path(__file__).with_name("iceberg_maintenance.py")
# The long-lived driver of the warm engine: runs the maintenance app's specs in one session.
WARM_DRIVER_APP = Path(__file__).with_name("warm_driver.py")
