"""When an action that keeps failing is held, and when it is released.

After ``execution.hold-after-failures`` operations of one (table, action) failed in a row,
the action is held: no operation is queued for it for ``HOLD_BASE_S`` seconds, doubled for
each hold placed again in a row (``HOLD_MAX_S`` at most). When the hold runs out, or a new
commit arrives (a busy writer's commits must not undo the hold, so a commit allows one try
rather than releasing), one operation may run: if it fails the action is held again, twice as
long; if it succeeds the hold is released. A change of the table's policy in force, or
ResumeTable, releases the hold and the failures so far stop counting.

Pure: the scheduler reads the :class:`~tms.domain.holds.Streak` of every action of a batch in
one query, asks :func:`judge` (with an injected ``now``) and writes what it says, fenced.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from tms.domain.holds import RELEASED_BY, Streak

HOLD_BASE_S = 3600.0  # the first hold
HOLD_MAX_S = 7 * 86400.0  # no hold longer than a week
MAX_REASON_CHARS = 1500

NONE, PLACE, RELEASE, HOLD, TRY = "none", "place", "release", "held", "try"


@dataclass(frozen=True)
class Verdict:
    kind: str  # NONE, PLACE, RELEASE, HOLD, TRY
    reason: str = ""  # for the decision (PLACE, HOLD, TRY) or the hold row (PLACE)
    released_by: str | None = None  # RELEASE: 'policy' or 'success'
    holds: int = 0  # PLACE: the hold's number in a row
    held_until: datetime | None = None  # PLACE, HOLD


def hold_length_s(holds: int) -> float:
    """The ``holds``-th hold in a row lasts ``HOLD_BASE_S * 2**(holds-1)``, capped."""
    exponent = min(max(holds, 1) - 1, 40)
    return float(min(HOLD_MAX_S, HOLD_BASE_S * 2 ** exponent))


def policy_digest(policy: Mapping[str, str]) -> str:
    """A digest of the policy in force: another policy releases a hold."""
    blob = json.dumps(dict(policy), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


def releases() -> str:
    return "; ".join(RELEASED_BY)


def hold_reason(streak: Streak, action: str) -> str:
    error = (streak.last_error or "no error recorded").strip()
    text = (f"{streak.failures} {action} operations failed in a row; the last "
            f"(operation {streak.last_failed_id}): {error}")
    return text[:MAX_REASON_CHARS]


def _held(reason: str, until: datetime) -> str:
    return (f"held until {until.isoformat(timespec='seconds')}: {reason}; released by "
            f"{releases()}")


def judge(streak: Streak | None, threshold: int, digest: str, now: datetime) -> Verdict:
    """What to do about one action's hold at a decision."""
    if streak is None:
        return Verdict(NONE)
    if not streak.held:
        if streak.failures >= threshold:
            reason = hold_reason(streak, streak.action)
            until = now + timedelta(seconds=hold_length_s(1))
            return Verdict(PLACE, reason, holds=1, held_until=until)
        return Verdict(NONE)
    if streak.policy_digest != digest:
        return Verdict(RELEASE, released_by="policy")
    if streak.failures < streak.held_failures:  # an operation succeeded since
        return Verdict(RELEASE, released_by="success")
    if streak.failures > streak.held_failures:  # the try after the hold failed too
        holds = streak.holds + 1
        until = now + timedelta(seconds=hold_length_s(holds))
        return Verdict(PLACE, hold_reason(streak, streak.action), holds=holds, held_until=until)
    assert streak.held_until is not None
    if now >= streak.held_until:
        return Verdict(TRY, "one try after a hold that ran out")
    if streak.commit_seq > streak.held_commit_seq:
        return Verdict(TRY, "one try after a hold: a new commit arrived")
    return Verdict(HOLD, _held(streak.hold_reason, streak.held_until),
                   held_until=streak.held_until)


def held_text(reason: str, until: datetime) -> str:
    """The decision's reason for a held action."""
    return _held(reason, until)
