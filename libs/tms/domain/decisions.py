"""A scheduler's decisions and how ExplainTable shows them.

Field names match the Postgres columns so rows map onto them without translation code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tms.domain.operations import OperationState


@dataclass(frozen=True)
class Decision:
    """A format plugin's verdict on one action of one table, with its reason in words.

    ``benefit`` is the expected benefit per cost of running it (e.g. data files removed or
    delete files applied per GiB rewritten): among operations of equal priority the queue
    serves the higher benefit first. None: the plugin does not estimate it."""

    action: str
    should_run: bool
    reason: str
    metrics: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    benefit: float | None = None


@dataclass(frozen=True)
class Explanation:
    action: str
    decided_at: datetime | None
    should_run: bool | None
    reason: str | None
    metrics: dict[str, Any] | None
    operation_id: int | None
    scheduler_id: str | None
    active_id: int | None
    active_state: OperationState | None = None
    benefit: float | None = None
    # when the scheduler last looked at the table; decided_at is when this decision last
    # changed (an equal decision is not written again)
    checked_at: datetime | None = None
