"""How a maintenance job's result (reported through the API, from a result file, or absent)
becomes an EngineResult: shared by the cold, cluster-mode and warm engines, so an operation
reads the same whichever engine ran it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tms.engines.base import EngineResult
from tms.failures import classify_log, fatal_part

ERROR_MAX_CHARS = 4000


def read_result(path: Path) -> dict[str, Any] | None:
    """The job's result file, or None when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def result_from_payload(result: dict[str, Any] | None, tail: str, code: int | None,
                        handle: str | None, error_if_missing: Callable[[], str]
                        ) -> EngineResult:
    """Map a maintenance job's result (reported or from a file) onto an EngineResult (shared
    with the warm engine, so an operation reads the same whichever engine ran it): the error is
    prefixed with the job's hint and its type and bounded, and ``retryable`` passes through (a
    missing flag means retryable). Without a result (the job died first: a class missing at
    session start, a JVM main that threw) the driver log is classified the way the job
    classifies exceptions."""
    if code == 0 and result and result.get("ok"):
        handle = result.get("spark_app_id") or handle
        return EngineResult(True, result.get("result") or {}, None, tail, code, handle)
    if not result:
        kind = classify_log(tail)
        return EngineResult(False, None, kind.describe(error_if_missing())[:ERROR_MAX_CHARS],
                            tail, code, handle, retryable=kind.retryable)
    error = result.get("error") or error_if_missing()
    if result.get("error_type"):
        error = f"{result['error_type']}: {error}"
    if isinstance(result.get("hint"), str):
        error = f"{result['hint']}: {error}"
    return EngineResult(False, result.get("result"), error[:ERROR_MAX_CHARS], tail, code,
                        handle, retryable=result.get("retryable", True) is not False)


def error_from_log(tail: str, code: int | None) -> str:
    lines = [ln for ln in fatal_part(tail).splitlines() if "Exception" in ln or "Error" in ln]
    last = lines[-1].strip() if lines else "no error line in the driver log"
    return f"spark-submit exited with code {code}: {last}"
