"""Domain records shared by the API, the scheduler, the executor and the plugins.

``tables`` (what an owner sets, what TMS observes), ``operations`` (work, lease, outcome and
attempts), ``decisions`` (the scheduler's verdicts), ``jobs`` (what an engine runs). Import
from ``tms.domain``; the modules only keep each part short.
"""

from __future__ import annotations

from tms.domain.catalogs import (
    Catalog,
    CatalogDeleteResult,
    CatalogDiscovery,
    CatalogSpec,
    CatalogType,
    CatalogUpdate,
    DiscoveryStatus,
)
from tms.domain.decisions import (
    Decision,
    Explanation,
)
from tms.domain.jobs import (
    JobReport,
    JobSpec,
)
from tms.domain.operations import (
    Attempt,
    AttemptState,
    LeaseStatus,
    Operation,
    OperationLease,
    OperationResult,
    OperationState,
    OperationWork,
    Outcome,
    QueueInfo,
)
from tms.domain.tables import (
    CommitEvent,
    DueTable,
    Table,
    TableSpec,
    TableState,
    TableStats,
    TableUpdate,
    TableView,
)

__all__ = [
    "Attempt",
    "AttemptState",
    "Catalog",
    "CatalogDeleteResult",
    "CatalogDiscovery",
    "CatalogSpec",
    "CatalogType",
    "CatalogUpdate",
    "CommitEvent",
    "Decision",
    "DiscoveryStatus",
    "DueTable",
    "Explanation",
    "JobReport",
    "JobSpec",
    "LeaseStatus",
    "Operation",
    "OperationLease",
    "OperationResult",
    "OperationState",
    "OperationWork",
    "Outcome",
    "QueueInfo",
    "Table",
    "TableSpec",
    "TableState",
    "TableStats",
    "TableUpdate",
    "TableView",
]
