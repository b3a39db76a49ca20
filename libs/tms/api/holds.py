"""Held actions in the API: ListHeldActions, and the ``hold`` of ExplainTable's actions.

An action is held by the scheduler after its operations failed too often in a row
(:mod:`tms.scheduler.holds`); ResumeTable releases a table's holds (``tables.py``)."""

from __future__ import annotations

import grpc

from tms.api import pagination
from tms.api import validate as v
from tms.api.auth import Principal
from tms.api.base import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, ServicerBase, rpc
from tms.api.errors import invalid
from tms.domain.holds import RELEASED_BY, ActionHold
from tms.v1 import tms_pb2

ALL_TABLES = "-"
_KEY_SEP = "\n"  # between table id and action in a page token's key (in neither alphabet)


def hold_to_pb(hold: ActionHold) -> tms_pb2.ActionHold:
    out = tms_pb2.ActionHold(
        table=f"tables/{hold.table_id}", action=hold.action, failures=hold.failures,
        holds=hold.holds, reason=hold.reason,
        last_operation=f"tables/{hold.table_id}/operations/{hold.last_operation_id}",
        released_by=list(RELEASED_BY))
    out.hold_time.FromDatetime(hold.held_at)
    out.held_until.FromDatetime(hold.held_until)
    return out


def _valid_key(key: str) -> bool:
    table_id, sep, action = key.partition(_KEY_SEP)
    return bool(sep) and bool(v.TABLE_ID_RE.fullmatch(table_id)) \
        and bool(v.ACTION_RE.fullmatch(action))


class HoldsMixin(ServicerBase):
    @rpc
    def ListHeldActions(self, request: tms_pb2.ListHeldActionsRequest,
                        context: grpc.ServicerContext,
                        principal: Principal) -> tms_pb2.ListHeldActionsResponse:
        p: v.Problems = []
        table_id: str | None = None
        if request.parent != f"tables/{ALL_TABLES}":
            table_id = v.table_name(p, "parent", request.parent) or None
        v.pattern(p, "action", request.action, v.ACTION_RE, "an action name", required=False)
        size = v.page_size(p, request.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        query = {"m": "holds", "parent": request.parent, "action": request.action}
        key = self.page_token(p, request.page_token, query, str, "", _valid_key)
        if p:
            raise invalid(p)
        if table_id is not None:
            self.load_table(table_id, principal, request.parent)
        after_table, _, after_action = key.partition(_KEY_SEP)
        rows = self.store.hold_list(table_id, request.action or None,
                                    (after_table, after_action), size + 1)
        more = len(rows) > size
        rows = rows[:size]
        token = pagination.encode(query, f"{rows[-1].table_id}{_KEY_SEP}{rows[-1].action}") \
            if more else ""
        if principal.scoped and table_id is None:
            owners = self.store.table_owners(sorted({r.table_id for r in rows}))
            rows = [r for r in rows if principal.allows(r.table_id, owners.get(r.table_id))]
        return tms_pb2.ListHeldActionsResponse(holds=[hold_to_pb(h) for h in rows],
                                               next_page_token=token)
