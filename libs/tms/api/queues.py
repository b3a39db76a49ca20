"""Queue RPCs: per-queue concurrency limits, which every executor's claim obeys."""

from __future__ import annotations

import grpc

from tms.api import convert
from tms.api import validate as v
from tms.api.auth import Principal, permission_denied
from tms.api.base import ServicerBase, rpc
from tms.api.errors import invalid
from tms.domain import QueueInfo
from tms.v1 import tms_pb2

QUEUE_PREFIX = "queues/"
MAX_QUEUE_LIMIT = 10_000


class QueuesMixin(ServicerBase):
    @rpc
    def ListQueues(self, request: tms_pb2.ListQueuesRequest, context: grpc.ServicerContext,
                   principal: Principal) -> tms_pb2.ListQueuesResponse:
        return tms_pb2.ListQueuesResponse(
            queues=[convert.queue_to_pb(q) for q in self.store.queue_list()])

    @rpc
    def UpdateQueue(self, request: tms_pb2.UpdateQueueRequest, context: grpc.ServicerContext,
                    principal: Principal) -> tms_pb2.Queue:
        p: v.Problems = []
        name = ""
        if not request.name.startswith(QUEUE_PREFIX):
            p.append(("name", "must be queues/{queue}"))
        else:
            name = request.name[len(QUEUE_PREFIX):]
            v.pattern(p, "name", name, v.QUEUE_RE, "queues/ and 1-63 of a-z 0-9 _ -")
        limit: int | None = None
        if request.HasField("max_running"):
            limit = request.max_running
            if not 0 <= limit <= MAX_QUEUE_LIMIT:
                p.append(("max_running", f"must be within [0, {MAX_QUEUE_LIMIT}]"))
        if p:
            raise invalid(p)
        if principal.scoped:  # a queue is shared by tables outside any scope
            raise permission_denied(f"token {principal.name!r} is limited to some tables; "
                                    "queues need an unscoped admin token")
        self.store.queue_set_limit(name, limit)
        for q in self.store.queue_list():
            if q.name == name:
                return convert.queue_to_pb(q)
        return convert.queue_to_pb(QueueInfo(name, limit))
