"""Typed reading of per-table policy overrides (string maps, Amoro-style dotted keys)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


@dataclass(frozen=True)
class PolicyKey:
    """One overridable setting: its key, its type and its documented default."""

    key: str
    kind: type
    default: int | bool | str
    minimum: int = 0
    maximum: int | None = None
    pattern: str = ""  # for str keys: a regular expression the whole value must match
    what: str = ""  # for str keys: what the pattern means, for the error message

    def parse(self, raw: str) -> int | bool | str:
        """Parse a string value; ValueError says what was expected."""
        if self.kind is str:
            value = raw.strip()
            if self.pattern and value and not re.fullmatch(self.pattern, value):
                raise ValueError(f"{self.key} must be {self.what or self.pattern}, got {raw!r}")
            return value
        if self.kind is bool:
            low = raw.strip().lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise ValueError(f"{self.key} must be true or false, got {raw!r}")
        try:
            number = int(raw.strip())
        except ValueError:
            raise ValueError(f"{self.key} must be an integer, got {raw!r}") from None
        if number < self.minimum:
            raise ValueError(f"{self.key} must be >= {self.minimum}, got {number}")
        if self.maximum is not None and number > self.maximum:
            raise ValueError(f"{self.key} must be <= {self.maximum}, got {number}")
        return number

    def get(self, overrides: Mapping[str, str]) -> int | bool | str:
        raw = overrides.get(self.key)
        return self.default if raw is None else self.parse(raw)

    def as_int(self, overrides: Mapping[str, str]) -> int:
        return int(self.get(overrides))

    def as_bool(self, overrides: Mapping[str, str]) -> bool:
        return bool(self.get(overrides))

    def as_str(self, overrides: Mapping[str, str]) -> str:
        return str(self.get(overrides))


# Keys every table takes whatever its format: they steer the scheduler, not the format.
DEFAULT_PULL_INTERVAL_S = 600  # inspect a table at least this often, commits or not
MIN_PULL_INTERVAL_S = 1
PULL_INTERVAL_KEY = PolicyKey("scheduler.pull-interval-s", int, DEFAULT_PULL_INTERVAL_S,
                              MIN_PULL_INTERVAL_S)

# Execution keys: how many attempts an operation gets, and the Spark resources its job asks for
# (on top of its queue's profile in the executor's configuration). Where the job runs (master,
# deploy mode, jars) is the operator's choice per queue only: a table owner must not be able to
# send catalog credentials to a cluster of their choosing.
DEFAULT_MAX_ATTEMPTS = 3
MAX_MAX_ATTEMPTS = 100
MAX_ATTEMPTS_KEY = PolicyKey("execution.max-attempts", int, DEFAULT_MAX_ATTEMPTS, 1,
                             MAX_MAX_ATTEMPTS)
_MEMORY = r"[1-9][0-9]{0,6}[kmgtKMGT]?"
SPARK_TABLE_KEYS: dict[str, PolicyKey] = {k.key: k for k in (
    PolicyKey("spark.driver-memory", str, "", pattern=_MEMORY, what="a size like 512m or 2g"),
    PolicyKey("spark.executor-memory", str, "", pattern=_MEMORY, what="a size like 512m or 2g"),
    PolicyKey("spark.driver-cores", int, 0, 1, 64),
    PolicyKey("spark.executor-cores", int, 0, 1, 64),
    PolicyKey("spark.num-executors", int, 0, 1, 1000),
)}
# ``spark.conf.<key>`` passes ``<key>`` to the job, for tuning keys only.
SPARK_CONF_PREFIX = "spark.conf."
SPARK_CONF_ALLOWED = ("spark.sql.", "spark.executor.", "spark.dynamicAllocation.",
                      "spark.memory.", "spark.default.parallelism", "spark.task.cpus",
                      "spark.speculation", "spark.shuffle.", "spark.reducer.")
SPARK_CONF_DENIED = ("spark.sql.catalog", "spark.sql.extensions", "spark.sql.parser.",
                     "spark.sql.warehouse.", "spark.sql.hive.", "spark.sql.catalogImplementation",
                     "spark.executor.extraJavaOptions", "spark.executor.extraClassPath",
                     "spark.executor.extraLibraryPath", "spark.executorEnv.",
                     "spark.executor.plugins", "spark.sql.queryExecutionListeners",
                     "spark.sql.streaming.", "spark.sql.sources.")
_CONF_KEY_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")
_CONF_VALUE_RE = re.compile(r"^[^\x00-\x1f\x7f]{0,1000}$")
COMMON_KEYS: dict[str, PolicyKey] = {PULL_INTERVAL_KEY.key: PULL_INTERVAL_KEY,
                                     MAX_ATTEMPTS_KEY.key: MAX_ATTEMPTS_KEY,
                                     **SPARK_TABLE_KEYS}


def check_spark_conf(key: str, value: str) -> str | None:
    """Why a ``spark.conf.<key>`` table override is refused, or None when it is fine."""
    conf_key = key[len(SPARK_CONF_PREFIX):]
    if not _CONF_KEY_RE.fullmatch(conf_key):
        return "invalid Spark conf key"
    if conf_key.startswith(SPARK_CONF_DENIED) or not conf_key.startswith(SPARK_CONF_ALLOWED):
        return ("not a tuning key a table may set; allowed prefixes: "
                + ", ".join(SPARK_CONF_ALLOWED) + " (catalog, classpath and JVM options are the "
                "operator's, per queue)")
    if not _CONF_VALUE_RE.fullmatch(value):
        return "value must be at most 1000 characters without control characters"
    return None


def validate_policy(keys: Mapping[str, PolicyKey], overrides: Mapping[str, str],
                    field: str = "table.policy") -> list[tuple[str, str]]:
    """Problems with a policy map: unknown keys and unparsable values, each with its field.
    The common scheduler keys are always accepted."""
    keys = {**COMMON_KEYS, **keys}
    problems = []
    for k, v in overrides.items():
        if k.startswith(SPARK_CONF_PREFIX):
            why = check_spark_conf(k, v)
            if why:
                problems.append((f"{field}[{k}]", why))
            continue
        spec = keys.get(k)
        if spec is None:
            known = ", ".join(sorted(keys))
            problems.append((f"{field}[{k}]", f"unknown policy key; known: {known}"))
            continue
        try:
            spec.parse(v)
        except ValueError as e:
            problems.append((f"{field}[{k}]", str(e)))
    return problems


def max_attempts(policy: Mapping[str, str], default: int = DEFAULT_MAX_ATTEMPTS) -> int:
    """The table's ``execution.max-attempts`` if it sets a valid one, else ``default``."""
    if MAX_ATTEMPTS_KEY.key in policy:
        try:
            return MAX_ATTEMPTS_KEY.as_int(policy)
        except ValueError:  # validated at registration; a bad stored value must not stop us
            pass
    return default
