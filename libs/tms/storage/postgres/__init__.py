"""PostgreSQL implementation of every storage role (psycopg 3 + a connection pool).

All SQL is in ``sql/queries/<entity>.sql``; these modules bind parameters and map rows.
"""

from __future__ import annotations

from tms.storage.postgres.catalogs import CatalogsMixin
from tms.storage.postgres.db import KEEPALIVES, POOL_MAX_SIZE, POOL_MIN_SIZE, POOL_TIMEOUT_S
from tms.storage.postgres.discovery import DiscoveryMixin
from tms.storage.postgres.execution import CLAIM_LOCK_KEY, ExecutionMixin
from tms.storage.postgres.health import HealthMixin
from tms.storage.postgres.holds import HoldsMixin
from tms.storage.postgres.maintenance import MaintenanceMixin
from tms.storage.postgres.operations import OperationsMixin
from tms.storage.postgres.reads import ReadsMixin
from tms.storage.postgres.reports import ReportsMixin
from tms.storage.postgres.tables import TablesMixin


class PostgresStore(CatalogsMixin, TablesMixin, OperationsMixin, ExecutionMixin, MaintenanceMixin,
                    DiscoveryMixin, ReportsMixin, HoldsMixin, HealthMixin, ReadsMixin):
    """Every role of :mod:`tms.storage.roles` over one pool. Thread-safe."""


__all__ = ["CLAIM_LOCK_KEY", "KEEPALIVES", "POOL_MAX_SIZE", "POOL_MIN_SIZE", "POOL_TIMEOUT_S",
           "PostgresStore"]
