"""No stale work for Iceberg tables: the no-op hold and the re-check before a run.

The hold: a compaction (clustering, manifest or position-delete rewrite) whose last identical
run (same action, same parameters) changed nothing, while the table's current snapshot is
still the one that run left, would change nothing again; the scheduler does not queue it
until a writer (or another action) makes a new snapshot. What a run changed comes from the
``outcome`` block its job reported (``tms.jobs.outcome``).

The re-check: a decision is taken from the table as it was; by the time an executor claims
the operation the table may have moved on (a compaction rewrote the manifests a queued
manifest rewrite was for; a writer's own maintenance merged the small files). Right before
the run, the table is inspected again from metadata and the action's rule evaluated again
(without the last run: the interval was honoured when it was queued). When it no longer calls
for the action the operation ends SKIPPED with the rule's reason, never run.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tms.domain import Decision, Operation, Table

if TYPE_CHECKING:
    from tms.catalogs import CatalogAccess
    from tms.formats.base import TableFormatPlugin

# Actions whose no-op is worth holding back: each rewrites files only when there is
# something to merge, so an empty run at an unchanged snapshot would be empty again.
HOLD_ACTIONS = ("compaction", "clustering", "rewrite_manifests", "rewrite_position_deletes")
# A manifest rewrite waits for the rewrites that commit new manifests themselves.
WAITS_FOR: dict[str, tuple[str, ...]] = {
    "rewrite_manifests": ("compaction", "clustering", "rewrite_position_deletes"),
}


WORDS = {"compaction": "compaction", "clustering": "clustering",
         "rewrite_position_deletes": "position-delete rewrite"}


def _params(values: Mapping[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in values.items()}


def _did(action: str, outcome: Mapping[str, Any]) -> str:
    """What a run that changed nothing did, in the action's words."""
    if action in ("compaction", "clustering"):
        return f"rewrote {int(outcome.get('data_files_rewritten') or 0)} data files"
    if action == "rewrite_position_deletes":
        return f"removed {int(outcome.get('delete_files_removed') or 0)} delete files"
    return "changed nothing"


def unchanged_since(metrics: Mapping[str, Any], decision: Decision, last: Operation | None
                    ) -> str | None:
    """The hold's reason, or None when the decision may be queued."""
    if decision.action not in HOLD_ACTIONS or last is None:
        return None
    outcome = (last.outcome.result or {}).get("outcome")
    if not isinstance(outcome, Mapping) or outcome.get("changed_nothing") is not True:
        return None
    snapshot = metrics.get("snapshot_id")
    if snapshot is None or outcome.get("snapshot_after") != str(snapshot):
        return None  # a new snapshot since: the table changed, run again
    if _params(last.work.params) != _params(decision.params):
        return None  # not the same work (another target size, other partitions)
    return (f"last {decision.action} {_did(decision.action, outcome)} at snapshot {snapshot}; "
            "waiting for a new snapshot")


def recheck(plugin: TableFormatPlugin, table: Table, catalog: CatalogAccess, op: Operation,
            now: datetime | None = None) -> str | None:
    """Why ``op`` should not run now (its rule no longer holds), or None."""
    metrics = plugin.inspect(table, catalog)
    found = [d for d in plugin.evaluate(table, metrics, {}, now or datetime.now(UTC))
             if d.action == op.action]
    if not found or found[0].should_run:
        return None
    snapshot = metrics.get("snapshot_id")
    because = found[0].reason
    if op.work.waits_for:
        others = [WORDS.get(a, a) for a in op.work.waits_for]
        either = ", ".join(others[:-1]) + " or " + others[-1] if len(others) > 1 else others[0]
        because = (f"already done since it was queued (a {either} merges manifests as it "
                   f"commits): {because}")
    return f"no longer needed at snapshot {snapshot}: {because}"
