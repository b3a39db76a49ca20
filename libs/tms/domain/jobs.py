"""What an execution engine runs.

Field names match the Postgres columns so rows map onto them without translation code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class JobSpec:
    """What an execution engine runs: a PySpark application and its JSON spec, or a JVM main
    class with arguments (Hudi utilities). Formats build it, engines run it: it lives here so
    neither plugin kind depends on the other."""

    kind: str  # "pyspark" or "jvm"
    app: str  # path of the .py application, or the main class
    spec: dict[str, Any] = field(default_factory=dict)
    args: tuple[str, ...] = ()
