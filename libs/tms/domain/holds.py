"""A held action: one (table, action) whose operations failed too often in a row, so the
scheduler queues none until the hold runs out or something releases it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

HELD = "HELD"
RELEASED = "RELEASED"
# what releases a hold, as ExplainTable and the CLI say it
RELEASED_BY = ("a new commit to the table (allows one try)",
               "a change of the table's policy in force",
               "ResumeTable (`tms tables resume <table>`)")


@dataclass(frozen=True)
class ActionHold:
    """A hold in force, as the API shows it."""

    table_id: str
    action: str
    failures: int  # operations failed in a row when held
    holds: int  # holds placed in a row: the n-th lasts base x 2**(n-1)
    reason: str  # the failures and the last one's root cause
    held_at: datetime
    held_until: datetime
    last_operation_id: int


@dataclass(frozen=True)
class Streak:
    """What a scheduler reads for one (table, action) before deciding: the operations failed
    in a row (FAILED after the last SUCCEEDED and after the last release) and the hold row,
    if any, with the version every write of it is fenced by."""

    table_pk: int
    action: str
    failures: int
    last_failed_id: int | None
    last_error: str | None
    commit_seq: int  # the table's latest commit event now
    hold_state: str | None = None
    held_failures: int = 0
    last_operation_id: int = 0
    holds: int = 0
    hold_reason: str = ""
    held_at: datetime | None = None
    held_until: datetime | None = None
    held_commit_seq: int = 0
    policy_digest: str = ""
    version: int = -1  # -1: no row (a hold is inserted, never overwritten blind)

    @property
    def held(self) -> bool:
        return self.hold_state == HELD
