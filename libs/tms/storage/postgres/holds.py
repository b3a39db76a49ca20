"""Held actions (HoldStore): the failures in a row a scheduler judges, the fenced writes of
a hold, and what the API shows and releases."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tms.domain.holds import ActionHold, Streak
from tms.storage.postgres.db import Db


def _hold(r: dict[str, Any]) -> ActionHold:
    return ActionHold(r["table_id"], r["action"], int(r["failures"]), int(r["holds"]),
                      r["reason"], r["held_at"], r["held_until"], int(r["last_operation_id"]))


class HoldsMixin(Db):
    def hold_streaks(self, table_pks: Sequence[int]) -> dict[int, dict[str, Streak]]:
        out: dict[int, dict[str, Streak]] = {}
        for r in self._all("hold_streaks", {"pks": list(table_pks)}):
            held = r["hold_state"] is not None
            streak = Streak(
                int(r["table_pk"]), r["action"], int(r["failures"]),
                None if r["last_failed_id"] is None else int(r["last_failed_id"]),
                r["last_error"], int(r["commit_seq"]), r["hold_state"],
                int(r["held_failures"]) if held else 0,
                int(r["last_operation_id"]) if held else 0,
                int(r["holds"]) if held else 0, r["hold_reason"] or "", r["held_at"],
                r["held_until"], int(r["held_commit_seq"]) if held else 0,
                r["policy_digest"] or "", int(r["version"]) if held else -1)
            out.setdefault(streak.table_pk, {})[streak.action] = streak
        return out

    def hold_place(self, streak: Streak, holds: int, reason: str, now: datetime,
                   held_until: datetime, policy_digest: str) -> bool:
        return self._one("hold_place", {
            "table_pk": streak.table_pk, "action": streak.action, "failures": streak.failures,
            "last_operation_id": streak.last_failed_id or 0, "holds": holds, "reason": reason,
            "now": now, "held_until": held_until, "commit_seq": streak.commit_seq,
            "policy_digest": policy_digest, "version": streak.version}) is not None

    def hold_release(self, streak: Streak, released_by: str, now: datetime) -> bool:
        after = max(streak.last_failed_id or 0, streak.last_operation_id)
        return self._one("hold_release", {
            "table_pk": streak.table_pk, "action": streak.action, "now": now,
            "released_by": released_by, "after_id": after,
            "version": streak.version}) is not None

    def hold_release_table(self, table_pk: int) -> list[str]:
        return [r["action"] for r in self._all("hold_release_table", {"table_pk": table_pk})]

    def hold_of_table(self, table_pk: int) -> list[ActionHold]:
        return [_hold(r) for r in self._all("hold_of_table", {"table_pk": table_pk})]

    def hold_list(self, table_id: str | None, action: str | None, after: tuple[str, str],
                  limit: int) -> list[ActionHold]:
        return [_hold(r) for r in self._all("hold_list", {
            "table_id": table_id, "action": action, "after_table": after[0],
            "after_action": after[1], "limit": limit})]

    def hold_counts(self) -> dict[str, int]:
        return {r["action"]: int(r["held"]) for r in self._all("hold_counts", {})}
