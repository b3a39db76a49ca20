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
MISSING_FILE = "missing file"
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
    MISSING_FILE: "the table references a file its storage does not have; restore it or "
                  "remove it from the table",
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


# A file the job opened that storage does not have, and its path: Hadoop's local and S3A
# file systems, Iceberg's FileIO, and Python's (pyarrow's) FileNotFoundError in an arrow task.
_PATH = r"[\'\"]?([A-Za-z][A-Za-z0-9+.-]*:/+[^\s'\"]+|/[^\s'\"]+)"
_MISSING_FILE_RES = (
    re.compile(r"FileNotFoundException: (?:File|Path) " + _PATH + r" does not exist"),
    re.compile(r"FileNotFoundException: No such file or directory: " + _PATH),
    re.compile(r"FileNotFoundException: " + _PATH + r" \(No such file or directory\)"),
    re.compile(r"NotFoundException: (?:File does not exist|Failed to open input stream for "
               r"file|Location does not exist): " + _PATH),
    re.compile(r"FileNotFoundError: \[Errno 2\] Failed to open local file " + _PATH),
    re.compile(r"FileNotFoundError: \[Errno 2\] No such file or directory: " + _PATH),
    re.compile(r"FileNotFoundError: .*?[Pp]ath does not exist " + _PATH),
    re.compile(r"FileNotFoundError: .*?(?:[Kk]ey|[Ff]ile) " + _PATH
               + r" (?:does not exist|not found)"),
)
MAX_PATH_CHARS = 1024


def missing_file(text: str) -> str | None:
    """The path of a file an error says storage does not have, or None."""
    for pattern in _MISSING_FILE_RES:
        m = pattern.search(text)
        if m:
            return m.group(1).rstrip(".,;:)'\"")[:MAX_PATH_CHARS]
    return None


def missing_file_hint(path: str) -> str:
    return f"the table references a missing file: {path}; restore it or remove it from the table"


# Where an exception chain says what went wrong first.
_TRACEBACK = "Traceback (most recent call last):"
_CAUSED_BY_RE = re.compile(r"^\s*Caused by: (.+)$", re.MULTILINE)
_LOST_TASK_RE = re.compile(r"most recent failure: Lost task [^\n]*?\(TID \d+\) \([^)\n]*\): "
                           r"([^\n]+)")
_PY_EXC_LINE_RE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)"
                             r"|[A-Za-z_][\w.]*\.[A-Z]\w*)(?::|$)")


def _python_root(text: str) -> str | None:
    """The exception line of the first traceback in ``text`` (Python prints a chain root
    first: the cause, then "The above exception was the direct cause ...", then the outer
    one), with the lines of its message that follow it."""
    start = text.find(_TRACEBACK)
    if start < 0:
        return None
    lines = text[start:].splitlines()[1:]
    for i, line in enumerate(lines):
        if line.startswith((" ", "\t")) or not line.strip():
            continue  # a frame, its source line, or a blank
        if _PY_EXC_LINE_RE.match(line):
            rest = []
            for more in lines[i + 1:]:  # a message over several lines, up to the next part
                if not more.strip() or more.startswith(("The above exception", "During "
                                                        "handling", _TRACEBACK, "\tat ")):
                    break
                rest.append(more)
            return "\n".join([line, *rest[:5]])
        return line
    return None


def root_cause(text: str) -> str | None:
    """What an exception chain says went wrong first, from its text: the exception of a
    Python traceback in it (an arrow task's worker error inside Spark's wrapper), else the
    last Java ``Caused by:``, else the task failure a Spark stage failure names. None when the
    text names no cause beyond itself."""
    found = _python_root(text)
    if found:
        return found
    causes = _CAUSED_BY_RE.findall(text)
    if causes:
        return str(causes[-1]).strip()
    m = _LOST_TASK_RE.search(text)
    return m.group(1).strip() if m else None


def classify(text: str) -> ErrorClass:
    """The class of an error from its type, message and causes; a missing class of a known
    jar names the jar and how to provide it (``jars.NEEDS``); a file the table references
    but storage lacks names the file."""
    path = missing_file(text)
    if path is not None:
        return ErrorClass(MISSING_FILE, missing_file_hint(path))
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
