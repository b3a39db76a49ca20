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
from tms.policy import validate_policy
from tms.policy_types import PolicyKey, check_values


class TableFormatPlugin(abc.ABC):
    """One table format. Instances are shared between threads: keep them stateless.

    ``policy_keys`` are the format's own policy keys and ``action_params`` the parameters an
    operation of each action may carry (what its policies emit and what a trigger may give),
    both declared with the schema's types (``tms.policy_types``): the API refuses anything
    else, and docs/policy.md, the CLI and ExplainTable show them."""

    name: str = ""
    actions: tuple[str, ...] = ()
    policy_keys: Mapping[str, PolicyKey] = {}
    action_params: Mapping[str, Mapping[str, PolicyKey]] = {}

    def check_policy(self, policy: Mapping[str, str], field: str = "table.policy"
                     ) -> list[tuple[str, str]]:
        """Unknown keys and bad values of a table's policy, against the schema."""
        return validate_policy(self.policy_keys, policy, field)

    def check_params(self, action: str, params: Mapping[str, str], field: str = "params"
                     ) -> list[tuple[str, str]]:
        """Unknown and bad parameters of an operation of ``action``."""
        return check_values(self.action_params.get(action, {}), params, field,
                            f"unknown parameter of {action}")

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
