"""Which failures another attempt cannot fix: the one classification of job errors.

The maintenance job classifies the exception it caught (``iceberg_maintenance.failure_payload``)
and the spark-submit engine classifies the driver log when the job died before writing a result
(a class missing at session start, a JVM main that threw). Both use ``classify`` so an operation
reads the same whichever way it failed.

A missing jar or class, a bad catalog configuration, a permission refusal and a missing table
fail the same way on every attempt: they are reported at once (not retried three times over
hours), with a short hint saying what to fix. Everything else (lost executors, commit
conflicts, an unreachable catalog, timeouts) stays retryable.

Standard library only: the job's package (``tms.spark.job_package``) ships it to the driver.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tms.spark import jars

MISSING_CLASS = "missing jar or class"
BAD_CONFIGURATION = "bad catalog configuration"
PERMISSION_DENIED = "permission denied"
NOT_FOUND = "table not found"
INVALID_SPEC = "invalid job spec"
LOCATION_REFUSED = "location refused"
INVALID_TABLE_PROPERTY = "invalid table property"
SECRET_UNAVAILABLE = "secret not available to the driver"
CANNOT_REPORT = "job cannot report its result"
# Lines of a driver log before the last fatal block that classification ignores (WARN lines
# may mention a ClassNotFoundException Spark recovered from).
_LOG_LEVEL_RE = re.compile(r"^\S+ \S+ (TRACE|DEBUG|INFO|WARN) ")
_FATAL_START_RE = re.compile(
    r"^(Exception in thread |Error: |Traceback \(most recent call last\)|\[tms-job\] )")

# (kind, pattern), first match wins: a missing class often also reads as a configuration
# error ("Cannot initialize Catalog implementation X ... ClassNotFoundException: X").
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (SECRET_UNAVAILABLE, re.compile(
        r"secret (env|file):\S+ (is not set|cannot be read|resolves outside|is larger|is not "
        r"UTF-8)")),
    (CANNOT_REPORT, re.compile(r"the job cannot report its result")),
    (LOCATION_REFUSED, re.compile(r"TMS fence: \S+( to)? of .+ refused")),  # tms-fence.jar
    (MISSING_CLASS, re.compile(
        r"ClassNotFoundException|NoClassDefFoundError|Cannot find catalog plugin class"
        r"|CATALOG_PLUGIN_CLASS_NOT_FOUND|Failed to load class|Failed to find data source"
        r"|No FileSystem for scheme|UnsupportedFileSystemException|No suitable driver")),
    (PERMISSION_DENIED, re.compile(
        r"AccessDeniedException|Permission denied|permission denied for"
        r"|password authentication failed|ForbiddenException|NotAuthorizedException"
        r"|\bAccess ?Denied\b|AuthorizationPermissionMismatch|AuthorizationFailure"
        r"|\b403 Forbidden\b|[Ss]tatus [Cc]ode:? 403\b|\bHTTP 403\b", re.IGNORECASE)),
    (BAD_CONFIGURATION, re.compile(
        r"warehousePath must not be null or empty|Unknown catalog type"
        r"|both type and catalog-impl are set|does not implement (Catalog|FileIO)"
        r"|Cannot initialize (custom )?Catalog|Cannot initialize FileIO implementation"
        r"|Invalid (catalog|warehouse)|warehouse location is required|Missing.*\bwarehouse\b")),
    (NOT_FOUND, re.compile(
        r"\b(NoSuchTableException|NoSuchNamespaceException|TABLE_OR_VIEW_NOT_FOUND"
        r"|SCHEMA_NOT_FOUND)\b|Table or view not found")),
)
HINTS = {
    MISSING_CLASS: "check the catalog's catalog-impl / io-impl and the executor's "
                   "TMS_SPARK_JARS / TMS_SPARK_PACKAGES",
    PERMISSION_DENIED: "check the credentials and storage permissions of the catalog",
    BAD_CONFIGURATION: "check the catalog's type, uri and warehouse",
    NOT_FOUND: "check the table's catalog, namespace and name",
    INVALID_SPEC: "check the operation's options and the table's registration",
    LOCATION_REFUSED: "the table's files must stay inside its own location, and that inside "
                      "the catalog's allowed locations",
    INVALID_TABLE_PROPERTY: "the table's owner must fix or unset the named property; nothing "
                            "was written",
    SECRET_UNAVAILABLE: "the driver resolves the catalog's secret references itself: give it "
                        "the TMS_SECRET_* variables and TMS_SECRET_DIR (cluster mode: "
                        "TMS_SPARK_K8S_SECRET mounts the secret into the driver pod)",
    CANNOT_REPORT: "the driver needs grpcio and the TMS_JOB_TOKEN its executor gives it",
}


@dataclass(frozen=True)
class ErrorClass:
    """``kind`` is None for an error another attempt may fix; ``detail`` replaces the kind's
    generic hint when more is known (the jar a missing class is in)."""

    kind: str | None
    detail: str | None = None

    @property
    def retryable(self) -> bool:
        return self.kind is None

    @property
    def hint(self) -> str | None:
        """What kind of error it is and what to fix, e.g. ``permission denied (check ...)``."""
        if self.kind is None:
            return None
        return f"{self.kind} ({self.detail or HINTS[self.kind]})"

    def describe(self, error: str) -> str:
        """``error`` prefixed with the hint."""
        return error if self.hint is None else f"{self.hint}: {error}"


RETRYABLE = ErrorClass(None)


def classify(text: str) -> ErrorClass:
    """The class of an error from its type, message and causes; a missing class of a known
    jar names the jar and how to provide it (``jars.NEEDS``)."""
    for kind, pattern in _RULES:
        if pattern.search(text):
            if kind == MISSING_CLASS:
                need = jars.need_for_error(text)
                return ErrorClass(kind, need.describe() if need else None)
            return ErrorClass(kind)
    return RETRYABLE


# A manifest rewrite whose plan a concurrent commit made stale: a writer's commit (Spark's
# row-level DELETE drops aged-out delete files and rewrites their manifests, a merging append
# merges manifests) replaced a manifest the rewrite meant to replace. Iceberg does not retry it
# (the plan itself is stale); planning again from the new snapshot does.
_STALE_MANIFESTS_RE = re.compile(
    r"ValidationException\b.*\bDeleted manifest \S+ could not be found in the latest snapshot")


def stale_manifests(text: str) -> bool:
    """Whether an error says a manifest rewrite lost a race with a concurrent commit: a
    conflict that planning again resolves, not a failure of the table or the job."""
    return bool(_STALE_MANIFESTS_RE.search(text))


def fatal_part(log_tail: str) -> str:
    """The part of a driver log that says why it died: from the last fatal block (an uncaught
    exception, spark-submit's ``Error:``, a Python traceback) to the end, else every line that
    is not a TRACE/DEBUG/INFO/WARN log line."""
    lines = log_tail.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if _FATAL_START_RE.match(lines[i]):
            return "\n".join(lines[i:])
    return "\n".join(ln for ln in lines if not _LOG_LEVEL_RE.match(ln))


def classify_log(log_tail: str) -> ErrorClass:
    """The class of a failure known only from its driver log."""
    return classify(fatal_part(log_tail))
