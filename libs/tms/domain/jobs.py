"""What an execution engine runs.

Field names match the Postgres columns so rows map onto them without translation code.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

REPORT_TOKEN_BYTES = 32  # secrets.token_urlsafe: 43 characters
ENV_JOB_TOKEN = "TMS_JOB_TOKEN"  # where the job finds its report token (never in argv)


def new_report_token() -> str:
    return secrets.token_urlsafe(REPORT_TOKEN_BYTES)


def report_token_digest(token: str) -> bytes:
    """What the database keeps of an attempt's token: its SHA-256 (a stolen database row
    cannot report a result)."""
    return hashlib.sha256(token.encode()).digest()


@dataclass(frozen=True)
class ApiEndpoint:
    """The TMS API as a job reaches it: ``target`` host:port (the address from the driver's
    side, e.g. a Kubernetes Service), TLS when ``ca_file`` (a path readable by the driver)
    is set, ``server_name`` to verify when the target's host is not in the certificate."""

    target: str
    ca_file: str | None = None
    server_name: str | None = None


@dataclass(frozen=True)
class JobReport:
    """Where and how a job reports its result: the TMS API (``target``, TLS when ``ca_file``
    is set), which attempt (``operation`` name, ``attempt``), the attempt's ``token``, and
    ``fetch``, which reads what the job reported (None: nothing) from the database.

    ``spec_fields`` is what the job's spec carries: no token (the token reaches the job
    through its environment or a private properties file, never the command line)."""

    target: str
    operation: str
    attempt: int
    token: str = field(repr=False)
    fetch: Callable[[], dict[str, Any] | None] = field(repr=False, compare=False)
    ca_file: str | None = None
    server_name: str | None = None  # TLS name to verify when the target's host differs

    def spec_fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"target": self.target, "operation": self.operation,
                               "attempt": self.attempt}
        if self.ca_file:
            out["tls"] = True
            out["ca_file"] = self.ca_file
            if self.server_name:
                out["server_name"] = self.server_name
        return out


@dataclass(frozen=True)
class JobSpec:
    """What an execution engine runs: a PySpark application and its JSON spec, or a JVM main
    class with arguments (Hudi utilities). Formats build it, engines run it: it lives here so
    neither plugin kind depends on the other. ``report``, set by the executor, makes the job
    report its result through the API instead of a local file."""

    kind: str  # "pyspark" or "jvm"
    app: str  # path of the .py application, or the main class
    spec: dict[str, Any] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    report: JobReport | None = None
