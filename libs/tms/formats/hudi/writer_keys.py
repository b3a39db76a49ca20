"""The Hudi writer settings TMS accepts, each with its allowed values (the schema).

Every value here ends up in a Hudi job's properties (``--props`` / ``--hoodie-conf``), where
Hudi reads it with its own loose line parser and instantiates classes by name. So the schema
is an allowlist, never a denylist: a key not listed is refused, and so is anything that

- moves the job to other data (``hoodie.base.path``, ``hoodie.table.name``, any
  ``hoodie.datasource.*``): the base path is the one TMS checked against the catalog's
  allowed locations, and nothing else may point the job elsewhere;
- names a class Hudi would load: only the documented lock provider (ZooKeeper, which TMS
  already runs beside; an in-process or file-system lock does not protect a table service in
  another JVM) and the strategies Hudi ships are allowed, so no key can load an arbitrary
  class into the Spark driver (``hoodie.write.commit.callback.class``,
  ``hoodie.metrics.reporter.class`` and their like stay unknown);
- reaches out of the job (commit callbacks' URLs, metrics reporters) or reads more files
  (``include`` lines of a properties file).

Keys are Hudi's own names for the versions named in docs/hudi.md (0.14/0.15 and 1.x); values
use the spelling Hudi documents (enum names in upper case).
"""

from __future__ import annotations

from tms.policy.schema import Kind, PolicyKey, boolean, by_key, choice, integer, text

# TMS's own keys in a writer configuration (never passed to Hudi)
HUDI_VERSION_KEY = "tms.hudi.version"
# the zone of the writers' clocks: Hudi writes instant times in the writer JVM's local time
# unless hoodie.table.timeline.timezone=UTC, and nothing in the table says which zone that is
WRITER_ZONE_KEY = "tms.hudi.writer-timezone"
VERSION_RE = r"(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})"

LOCK_PROVIDER_ZOOKEEPER = "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"
_COMPACTION_STRATEGY = "org.apache.hudi.table.action.compact.strategy."
COMPACTION_STRATEGIES = tuple(_COMPACTION_STRATEGY + name for name in (
    "LogFileSizeBasedCompactionStrategy", "LogFileNumBasedCompactionStrategy",
    "BoundedIOCompactionStrategy", "BoundedPartitionAwareCompactionStrategy",
    "DayBasedCompactionStrategy", "UnBoundedCompactionStrategy",
    "UnBoundedPartitionAwareCompactionStrategy"))
_PLAN = "org.apache.hudi.client.clustering.plan.strategy."
CLUSTERING_PLAN_STRATEGIES = tuple(_PLAN + name for name in (
    "SparkSizeBasedClusteringPlanStrategy", "SparkRecentDaysClusteringPlanStrategy",
    "SparkSingleFileSortPlanStrategy"))
_RUN = "org.apache.hudi.client.clustering.run.strategy."
CLUSTERING_EXECUTION_STRATEGIES = tuple(_RUN + name for name in (
    "SparkSortAndSizeExecutionStrategy", "SparkSingleFileSortExecutionStrategy"))
_UPDATE = "org.apache.hudi.client.clustering.update.strategy."
CLUSTERING_UPDATE_STRATEGIES = tuple(_UPDATE + name for name in (
    "SparkRejectUpdateStrategy", "SparkAllowUpdateStrategy"))
TRIGGER_STRATEGIES = ("NUM_COMMITS", "NUM_COMMITS_AFTER_LAST_REQUEST", "TIME_ELAPSED",
                      "NUM_AND_TIME", "NUM_OR_TIME")
CLEANER_POLICIES = ("KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS", "KEEP_LATEST_BY_HOURS")
BASE_FILE_FORMATS = ("PARQUET", "ORC", "HFILE", "LANCE")
PARTITION_FILTER_MODES = tuple("NONE RECENT_DAYS SELECTED_PARTITIONS DAY_ROLLING".split())

MAX_COUNT = 100_000
MAX_MS = 86_400_000
MAX_BYTES = 1 << 40
_HOST_LIST = r"[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?(,[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?){0,31}"
_ZNODE = r"(/[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}){1,10}"  # no . or .. parts
_LOCK_KEY = r"[A-Za-z0-9_.-]{1,200}"
_COLUMNS = r"[A-Za-z_][A-Za-z0-9_]{0,127}(,[A-Za-z_][A-Za-z0-9_]{0,127}){0,31}"
_REGEX_SAFE = r"[A-Za-z0-9_=/.*+?^$|()\[\]-]{1,200}"
_W = ("hudi",)


def _int(key: str, lo: int, hi: int, unit: str, doc: str) -> PolicyKey:
    return integer(key, None, lo, hi, unit, doc, _W)


def _choice(key: str, choices: tuple[str, ...], doc: str) -> PolicyKey:
    return choice(key, choices, None, doc, _W)


def _bool(key: str, doc: str) -> PolicyKey:
    return boolean(key, None, doc, _W)


def _text(key: str, pattern: str, what: str, doc: str) -> PolicyKey:
    return text(key, None, pattern, what, doc, _W)


WRITER_KEYS: dict[str, PolicyKey] = by_key((
    # cleaning and retention: what readers rely on; TMS never cleans below it
    _choice("hoodie.cleaner.policy", CLEANER_POLICIES, "what the cleaner keeps"),
    _int("hoodie.cleaner.commits.retained", 1, MAX_COUNT, "count",
         "commits whose file versions stay (KEEP_LATEST_COMMITS)"),
    _int("hoodie.cleaner.fileversions.retained", 1, MAX_COUNT, "count",
         "file versions kept per file group (KEEP_LATEST_FILE_VERSIONS)"),
    _int("hoodie.cleaner.hours.retained", 1, MAX_COUNT, "h",
         "hours of file versions kept (KEEP_LATEST_BY_HOURS)"),
    _choice("hoodie.cleaner.policy.failed.writes", ("EAGER", "LAZY", "NEVER"),
            "when failed writes are rolled back (LAZY with several writers)"),
    _bool("hoodie.clean.automatic", "clean after each commit of a table service"),
    _bool("hoodie.cleaner.incremental.mode", "plan cleans incrementally"),
    _int("hoodie.clean.max.commits", 1, MAX_COUNT, "count", "commits between cleans"),
    _int("hoodie.keep.min.commits", 1, MAX_COUNT, "count", "archival: instants kept at least"),
    _int("hoodie.keep.max.commits", 1, MAX_COUNT, "count", "archival: instants kept at most"),
    # concurrency with live writers
    _choice("hoodie.write.concurrency.mode",
            ("SINGLE_WRITER", "OPTIMISTIC_CONCURRENCY_CONTROL",
             "NON_BLOCKING_CONCURRENCY_CONTROL"), "how writers and table services coordinate"),
    _choice("hoodie.write.lock.provider", (LOCK_PROVIDER_ZOOKEEPER,),
            "the lock provider (ZooKeeper only: the lock must hold across processes)"),
    _text("hoodie.write.lock.zookeeper.url", _HOST_LIST, "ZooKeeper hosts host[:port],...",
          "ZooKeeper connect string of the lock"),
    _int("hoodie.write.lock.zookeeper.port", 1, 65535, "port", "ZooKeeper port"),
    _text("hoodie.write.lock.zookeeper.base_path", _ZNODE, "a znode path like /hudi/locks",
          "znode under which the table's lock lives"),
    _text("hoodie.write.lock.zookeeper.lock_key", _LOCK_KEY, "letters, digits, _ . -",
          "the table's lock name (every writer of the table uses the same)"),
    _int("hoodie.write.lock.zookeeper.session_timeout_ms", 1, MAX_MS, "ms",
         "ZooKeeper session timeout"),
    _int("hoodie.write.lock.zookeeper.connection_timeout_ms", 1, MAX_MS, "ms",
         "ZooKeeper connection timeout"),
    _int("hoodie.write.lock.wait_time_ms", 1, MAX_MS, "ms", "how long to wait for the lock"),
    _int("hoodie.write.lock.num_retries", 0, 1000, "count", "lock acquisition retries"),
    _int("hoodie.write.lock.wait_time_ms_between_retry", 1, MAX_MS, "ms",
         "wait between lock retries"),
    _int("hoodie.client.heartbeat.interval_in_ms", 1, MAX_MS, "ms",
         "writers' heartbeat interval (an inflight instant is live while it beats)"),
    _int("hoodie.client.heartbeat.tolerable.misses", 0, 1000, "count",
         "heartbeats missed before an instant counts as failed"),
    _bool("hoodie.metadata.enable", "the metadata table, as the writers keep it"),
    # compaction
    _choice("hoodie.compaction.strategy", COMPACTION_STRATEGIES,
            "which file slices a compaction plan takes"),
    _int("hoodie.compaction.target.io", 1, 1 << 30, "MB", "IO budget of one compaction plan"),
    _int("hoodie.compaction.logfile.size.threshold", 0, MAX_BYTES, "bytes",
         "log size below which a slice is not compacted"),
    _int("hoodie.compaction.logfile.num.threshold", 0, MAX_COUNT, "count",
         "log files below which a slice is not compacted"),
    _choice("hoodie.compact.inline.trigger.strategy", TRIGGER_STRATEGIES,
            "the writers' compaction trigger (TMS passes the one it evaluated)"),
    _int("hoodie.compact.inline.max.delta.commits", 1, MAX_COUNT, "count",
         "the writers' delta-commit trigger"),
    _int("hoodie.compact.inline.max.delta.seconds", 1, 30 * 86_400, "s",
         "the writers' time trigger"),
    # clustering
    _choice("hoodie.clustering.plan.strategy.class", CLUSTERING_PLAN_STRATEGIES,
            "how clustering plans are made"),
    _choice("hoodie.clustering.execution.strategy.class", CLUSTERING_EXECUTION_STRATEGIES,
            "how clustering plans run"),
    _choice("hoodie.clustering.updates.strategy", CLUSTERING_UPDATE_STRATEGIES,
            "what happens to upserts into file groups pending clustering"),
    _text("hoodie.clustering.plan.strategy.sort.columns", _COLUMNS, "column names, comma "
          "separated", "columns clustering sorts by"),
    _bool("hoodie.clustering.plan.strategy.single.group.clustering.enabled",
          "whether one small file alone makes a clustering group"),
    _choice("hoodie.layout.optimize.strategy", ("linear", "z-order", "hilbert"),
            "the curve of clustering's sort"),
    _int("hoodie.clustering.plan.strategy.target.file.max.bytes", 1, MAX_BYTES, "bytes",
         "size of clustered files"),
    _int("hoodie.clustering.plan.strategy.small.file.limit", 1, MAX_BYTES, "bytes",
         "files below this are clustered"),
    _int("hoodie.clustering.plan.strategy.max.bytes.per.group", 1, MAX_BYTES, "bytes",
         "bytes per clustering group"),
    _int("hoodie.clustering.plan.strategy.max.num.groups", 1, MAX_COUNT, "count",
         "clustering groups per plan"),
    _choice("hoodie.clustering.plan.partition.filter.mode", PARTITION_FILTER_MODES,
            "which partitions clustering plans"),
    _int("hoodie.clustering.plan.strategy.daybased.lookback.partitions", 1, MAX_COUNT,
         "count", "partitions looked back (RECENT_DAYS)"),
    _text("hoodie.clustering.plan.strategy.partition.regex.pattern", _REGEX_SAFE,
          "a regular expression of partition paths", "partitions clustering may plan"),
    _int("hoodie.clustering.inline.max.commits", 1, MAX_COUNT, "count",
         "the writers' clustering trigger"),
    _int("hoodie.clustering.async.max.commits", 1, MAX_COUNT, "count",
         "the writers' async clustering trigger"),
    # files
    _choice("hoodie.table.base.file.format", BASE_FILE_FORMATS, "the base file format"),
    _int("hoodie.parquet.max.file.size", 1, MAX_BYTES, "bytes", "target base file size"),
    _int("hoodie.parquet.small.file.limit", 0, MAX_BYTES, "bytes", "small file limit"),
    _choice("hoodie.parquet.compression.codec",
            ("snappy", "gzip", "zstd", "lz4", "uncompressed"), "base file compression"),
    _choice("hoodie.table.timeline.timezone", ("UTC", "LOCAL"),
            "the zone instant times are written in"),
    # TMS's own, never passed to Hudi
    _text(HUDI_VERSION_KEY, VERSION_RE, "a release like 0.15.0 or 1.0.2",
          "the Hudi release the writers run"),
    PolicyKey(WRITER_ZONE_KEY, Kind.ZONE, None, "the IANA zone of the writers' clocks (their "
              "instant times are local time unless the table's timeline is UTC)", formats=_W),
))

# why some keys people try are refused (the rest: "unknown key")
REFUSED_PREFIXES: dict[str, str] = {
    "hoodie.base.path": "the base path is the table's, checked against the catalog",
    "hoodie.table.name": "the table name comes from the table itself",
    "hoodie.datasource.": "datasource options configure writers, not table services",
    "hoodie.write.commit.callback.": "commit callbacks load classes and call out of the job",
    "hoodie.metrics.": "metrics reporters load classes and send data out of the job",
    "include": "a properties file may not include other files",
}


def refusal(key: str) -> str:
    """Why ``key`` is not accepted, for the error message."""
    for prefix, why in REFUSED_PREFIXES.items():
        if key == prefix or (prefix.endswith(".") and key.startswith(prefix)):
            return f"refused: {why}"
    if "class" in key.lower() or "provider" in key.lower():
        return "refused: only the listed class-valued keys, with the classes Hudi ships"
    return "unknown key (not in TMS's schema of Hudi writer settings, see docs/hudi.md)"
