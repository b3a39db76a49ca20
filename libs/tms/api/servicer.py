"""The TableManagementService servicer, composed of its catalog, table, commit, operation,
queue and job-result parts.

Every handler runs inside :func:`tms.api.base.rpc`: authentication, authorization by method,
ApiError to status, a lost database to UNAVAILABLE, so a client never sees INTERNAL for
something it or the network did.
"""

from __future__ import annotations

from tms.api.catalogs import CatalogsMixin
from tms.api.commits import CommitsMixin
from tms.api.fleet import FleetMixin
from tms.api.holds import HoldsMixin
from tms.api.job_results import JobResultsMixin
from tms.api.operations import OperationsMixin
from tms.api.queues import QueuesMixin
from tms.api.tables import TablesMixin
from tms.v1 import tms_pb2_grpc


class TableManagementServicer(CatalogsMixin, TablesMixin, CommitsMixin, OperationsMixin,
                              QueuesMixin, JobResultsMixin, HoldsMixin, FleetMixin,
                              tms_pb2_grpc.TableManagementServiceServicer):
    pass
