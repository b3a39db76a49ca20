"""Spark settings a table policy may carry: its job's resources and a few tuning keys.

Where a job runs (master, deploy mode, jars, catalog) and everything that carries JVM flags,
class names, paths, environment or scripts stays the operator's, per queue. A table may set only
the exact keys below, each with a typed value; ``spark.conf.<key>`` passes ``<key>`` to the job.
The resource keys' ranges here are absolute; the executor further clamps them to the caps the
operator sets on the table's queue (``tms.spark.caps``).
"""

from __future__ import annotations

from tms.policy.schema import PolicyKey, boolean, by_key, choice, decimal, integer, memory

MIB = 1 << 20
GIB = 1 << 30
MIN_JOB_MEMORY_BYTES = 256 * MIB
MAX_DRIVER_MEMORY_BYTES = 64 * GIB
MAX_EXECUTOR_MEMORY_BYTES = 256 * GIB
MAX_JOB_CORES = 64
MAX_NUM_EXECUTORS = 1000
MAX_PARTITIONS = 100_000
MAX_SPLIT_BYTES = 16 * GIB

SPARK_TABLE_KEYS: dict[str, PolicyKey] = by_key((
    memory("spark.driver-memory", MIN_JOB_MEMORY_BYTES, MAX_DRIVER_MEMORY_BYTES,
           "the job's driver memory (at most the queue's cap)"),
    memory("spark.executor-memory", MIN_JOB_MEMORY_BYTES, MAX_EXECUTOR_MEMORY_BYTES,
           "each executor's memory (at most the queue's cap)"),
    integer("spark.driver-cores", None, 1, MAX_JOB_CORES, "cores",
            "the driver's cores (at most the queue's cap)"),
    integer("spark.executor-cores", None, 1, MAX_JOB_CORES, "cores",
            "each executor's cores (at most the queue's cap)"),
    integer("spark.num-executors", None, 1, MAX_NUM_EXECUTORS, "count",
            "static number of executors on YARN / Kubernetes (at most the queue's cap)"),
))

SPARK_CONF_PREFIX = "spark.conf."
CODECS = ("none", "uncompressed", "snappy", "gzip", "lz4", "zstd")
_CONF = (
    integer("spark.sql.shuffle.partitions", None, 1, MAX_PARTITIONS, "count",
            "partitions of each shuffle"),
    integer("spark.default.parallelism", None, 1, MAX_PARTITIONS, "count",
            "default partitions of RDD operations"),
    boolean("spark.sql.adaptive.enabled", None, "adaptive query execution"),
    boolean("spark.sql.adaptive.coalescePartitions.enabled", None,
            "let adaptive execution merge small shuffle partitions"),
    boolean("spark.sql.adaptive.skewJoin.enabled", None, "split skewed join partitions"),
    integer("spark.sql.adaptive.advisoryPartitionSizeInBytes", None, MIB, MAX_SPLIT_BYTES,
            "bytes", "target shuffle partition size for adaptive execution"),
    integer("spark.sql.files.maxPartitionBytes", None, MIB, MAX_SPLIT_BYTES, "bytes",
            "largest input split read by one task"),
    integer("spark.sql.files.openCostInBytes", None, 0, GIB, "bytes",
            "estimated cost of opening a file, in bytes of scan"),
    integer("spark.sql.files.maxRecordsPerFile", None, 0, 1_000_000_000, "count",
            "records per written file (0: no limit)"),
    decimal("spark.memory.fraction", None, 0.1, 0.9,
            "share of the heap for execution and storage"),
    decimal("spark.memory.storageFraction", None, 0.0, 0.9,
            "share of that memory kept for cached data"),
    memory("spark.executor.memoryOverhead", MIN_JOB_MEMORY_BYTES, 64 * GIB,
           "off-heap memory per executor"),
    choice("spark.sql.parquet.compression.codec", CODECS, None,
           "codec of Parquet files Spark writes (Iceberg uses the table's own property)"),
    boolean("spark.speculation", None, "re-launch slow tasks"),
    integer("spark.task.maxFailures", None, 1, 16, "count",
            "failures of one task before the job fails"),
)
SPARK_CONF_KEYS: dict[str, PolicyKey] = by_key(
    PolicyKey(SPARK_CONF_PREFIX + k.key, k.kind, k.default, k.doc, k.unit, k.minimum,
              k.maximum, k.choices, k.pattern, k.what) for k in _CONF)


def conf_refusal(key: str) -> str:
    """Why a ``spark.conf.*`` key outside the allowlist is refused."""
    allowed = ", ".join(k.key.removeprefix(SPARK_CONF_PREFIX) for k in _CONF)
    return ("not a Spark tuning key a table may set (JVM options, class names, paths, "
            f"environment and scripts are the operator's, per queue); allowed: {allowed}")
