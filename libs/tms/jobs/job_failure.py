"""How a failed maintenance job describes and classifies its error: the JVM exception behind a
Py4J error and its causes, and whether another attempt could help (``errors.classify`` plus
the job's own refusals: a bad spec, a refused location, a table property, a secret the driver
cannot read). Split from ``iceberg_maintenance`` so the runner stays readable; the names are
re-exported there.

Standard library only: the job's package (``tms.spark.job_package``) ships it to the driver.
"""

from __future__ import annotations

import re
import traceback
from typing import Any

from tms import failures as errors
from tms import secrets
from tms.jobs import table_guard, table_props
from tms.jobs.job_spec import SpecError

MAX_ERROR_CHARS = 4000
# Spark error classes that mean "the table is not there": no retry helps.
NOT_FOUND_ERROR_CLASSES = frozenset({"TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND"})
MAX_CAUSES = 8  # of a JVM exception, read for classification


def describe_error(exc: BaseException) -> tuple[str, str]:
    """(type, message) for the result file, preferring the JVM exception behind a Py4J error."""
    java_exc = getattr(exc, "java_exception", None)
    if java_exc is not None:
        try:
            return str(java_exc.getClass().getName()), str(java_exc.toString())
        except Exception:  # the JVM may already be gone
            pass
    message = str(exc) or traceback.format_exception_only(type(exc), exc)[-1].strip()
    return type(exc).__name__, message


def java_causes(exc: BaseException) -> list[str]:
    """The causes of the JVM exception behind a Py4J error (a missing class is often two
    levels down), for classification."""
    out: list[str] = []
    java_exc = getattr(exc, "java_exception", None)
    try:
        cause = java_exc.getCause() if java_exc is not None else None
        while cause is not None and len(out) < MAX_CAUSES:
            out.append(str(cause.toString()))
            cause = cause.getCause()
    except Exception:  # the JVM may already be gone
        pass
    return out


_TYPE_RE = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*$")
MAX_WRAPPER_CHARS = 500


def _python_chain_root(exc: BaseException) -> BaseException:
    """The first exception of a Python chain (``raise ... from``, or raised while handling)."""
    seen = {id(exc)}
    while True:
        nxt = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
        if nxt is None or id(nxt) in seen:
            return exc
        seen.add(id(nxt))
        exc = nxt


def _split(line: str) -> tuple[str, str]:
    """``Type: message`` as (type, message); a line without a type prefix: ("", line)."""
    head, sep, rest = line.partition(": ")
    if sep and _TYPE_RE.match(head):
        return head, rest
    if _TYPE_RE.match(line.strip()):
        return line.strip(), ""
    return "", line


def root_error(exc: BaseException, error_type: str, message: str) -> tuple[str, str] | None:
    """(type, message) of what went wrong first, when ``exc`` wraps it: the deepest JVM
    cause, a Python traceback or Java ``Caused by:`` inside Spark's wrapper message (a task's
    failure), or the first exception of a Python chain. None when ``exc`` is its own cause."""
    causes = java_causes(exc)
    text = "\n".join([f"{error_type}: {message}", *causes])
    found = errors.root_cause(text)
    if found is None and causes:
        found = causes[-1]
    if found is None and getattr(exc, "java_exception", None) is None:
        first = _python_chain_root(exc)
        if first is not exc:
            return type(first).__name__, str(first) or type(first).__name__
        return None
    if found is None:
        return None
    kind, text = _split(found.strip())
    if not kind:
        return error_type, found.strip()
    if (kind, text) == (error_type, message):
        return None
    return kind, text


def error_class(exc: BaseException, error_type: str, message: str) -> errors.ErrorClass:
    """What kind of failure this is: refused specs and locations, missing tables, classes,
    permissions and bad catalog configurations cannot pass on another attempt; everything
    else (lost executors, commit conflicts, an unreachable catalog) may."""
    if isinstance(exc, SpecError):
        return errors.ErrorClass(errors.INVALID_SPEC)
    if isinstance(exc, table_guard.LocationRefused):
        return errors.ErrorClass(errors.LOCATION_REFUSED)
    if isinstance(exc, table_props.PropertyRefused):
        return errors.ErrorClass(errors.INVALID_TABLE_PROPERTY)
    if isinstance(exc, secrets.SecretError):
        return errors.ErrorClass(errors.SECRET_UNAVAILABLE)
    get_error_class = getattr(exc, "getErrorClass", None)
    if callable(get_error_class):
        try:
            if get_error_class() in NOT_FOUND_ERROR_CLASSES:
                return errors.ErrorClass(errors.NOT_FOUND)
        except Exception:  # the JVM may already be gone
            pass
    return errors.classify("\n".join([f"{error_type}: {message}", *java_causes(exc)]))


def is_retryable(exc: BaseException, error_type: str, message: str) -> bool:
    return error_class(exc, error_type, message).retryable


def failure_payload(exc: BaseException) -> dict[str, Any]:
    """The result file's content for a failed run: the error is its root cause (the first
    exception of the chain: a task's FileNotFoundError, not Spark's "Job aborted due to stage
    failure" around it), ``wrapped_in`` the first line of the wrapper (its whole text goes to
    the driver log); ``hint`` says what kind of error it is and what to fix (absent for
    errors another attempt may fix)."""
    error_type, message = describe_error(exc)
    kind = error_class(exc, error_type, message)
    root = root_error(exc, error_type, message)
    payload: dict[str, Any] = {"ok": False, "error_type": error_type,
                               "error": message[:MAX_ERROR_CHARS], "retryable": kind.retryable}
    if root is not None:
        wrapper = f"{error_type}: {message}".splitlines()[0]
        payload.update(error_type=root[0], error=root[1][:MAX_ERROR_CHARS],
                       wrapped_in=wrapper[:MAX_WRAPPER_CHARS])
    if kind.kind is not None:
        payload["error_class"] = kind.kind
        payload["hint"] = kind.hint
    return payload


