"""The executor's last look before a run: is the operation's decision still true?

A policy-queued operation was decided against the table as it was; right before its job
starts, the format plugin checks the decision again against the table's current snapshot
(metadata only, see TableFormatPlugin.recheck). An operation asked for by a person (trigger
manual or retry) runs as asked. A re-check that fails (catalog down, a metadata read) does
not stop the run: the job meets the same table and fails or succeeds on its own.
"""

from __future__ import annotations

import structlog

from tms.catalogs import CatalogAccess
from tms.domain import Operation, Table
from tms.formats.base import TableFormatPlugin

RECHECKED_TRIGGERS = ("policy",)

log = structlog.get_logger("tms.executor")


def stale_reason(plugin: TableFormatPlugin, table: Table, catalog: CatalogAccess,
                 op: Operation) -> str | None:
    """Why ``op`` should end SKIPPED instead of running, or None to run it."""
    if op.work.trigger not in RECHECKED_TRIGGERS:
        return None
    try:
        return plugin.recheck(table, catalog, op)
    except Exception as e:  # any failure: run as decided
        log.warning("re-check before the run failed; running as decided", operation=op.id,
                    error=str(e)[:500])
        return None
