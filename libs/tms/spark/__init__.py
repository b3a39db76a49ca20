"""Spark side of TMS: provisioning the Iceberg jars offline and building spark-submit commands.

Kept apart from the job code (``tms.jobs``) because these modules run in the TMS processes, while
the jobs run inside the Spark driver with nothing but pyspark and the standard library.
"""
