"""The table-format plugin interface (the counterpart of Amoro's ProcessFactory and trigger
strategy): a plugin names its actions, inspects a table from metadata only, turns the metrics
into decisions with reasons, and builds the job an engine runs.

Plugins are found through the ``tms.formats`` entry-point group, so a third party adds a format
by shipping a distribution, without touching TMS.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tms.domain import Decision, JobSpec, Operation, Table, TableSpec


class TableFormatPlugin(abc.ABC):
    """One table format. Instances are shared between threads: keep them stateless."""

    name: str = ""
    actions: tuple[str, ...] = ()

    def validate(self, spec: TableSpec) -> list[tuple[str, str]]:
        """Format-specific checks of a registration: (field path, problem) pairs."""
        return []

    @abc.abstractmethod
    def inspect(self, table: Table) -> dict[str, Any]:
        """Metrics read from the table's metadata only (never a Spark job)."""

    @abc.abstractmethod
    def evaluate(self, table: Table, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, Operation | None], now: datetime
                 ) -> list[Decision]:
        """One decision per action, each with a reason a person can read."""

    @abc.abstractmethod
    def build_job(self, table: Table, operation: Operation) -> JobSpec:
        """The job that carries out ``operation``."""
