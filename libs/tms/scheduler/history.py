"""Bounded history of the inspections' figures (docs/health.md): how often a point is kept,
and the leader's downsampling.

A point is written at an inspection when the figures changed and the table's last point is
at least ``min_spacing_s`` old, or when the last point is ``keepalive_s`` old whatever the
figures (so an unchanged table costs one point a day). The leader then walks the tables a
slice at a time (through the history's primary key, no other index) and keeps every point
of the last ``raw_s``, the last point of each hour for ``hourly_s``, the last of each UTC day
for ``keep_s``, and deletes what is older. A whole walk over 100,000 tables at 200 tables a
step and one step a minute takes under nine hours: a point waits at most that long past its
window before it is thinned.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog

from tms.storage.roles import MaintenanceStore

HOUR_S = 3600
DAY_S = 86_400
HISTORY_RAW_S = 1 * DAY_S  # every point kept this long
HISTORY_HOURLY_S = 30 * DAY_S  # then the last point per hour, this long
HISTORY_KEEP_S = 365 * DAY_S  # then the last point per UTC day; older points deleted
HISTORY_MIN_SPACING_S = 300.0  # a changed table gets at most one point this often
HISTORY_KEEPALIVE_S = float(DAY_S)  # an unchanged table still gets a point this often
DOWNSAMPLE_TABLES_PER_STEP = 200
DOWNSAMPLE_BUDGET_S = 1.0

log = structlog.get_logger("tms.scheduler.history")


class HistorySettings:
    """The windows and the leader's place in its walk over the tables (the walk starts over
    after the last table, and at any leader change)."""

    def __init__(self, raw_s: float = HISTORY_RAW_S, hourly_s: float = HISTORY_HOURLY_S,
                 keep_s: float = HISTORY_KEEP_S,
                 min_spacing_s: float = HISTORY_MIN_SPACING_S,
                 keepalive_s: float = HISTORY_KEEPALIVE_S,
                 tables_per_step: int = DOWNSAMPLE_TABLES_PER_STEP,
                 budget_s: float = DOWNSAMPLE_BUDGET_S) -> None:
        if not 0 < raw_s <= hourly_s <= keep_s:
            raise ValueError("history windows must satisfy 0 < raw <= hourly <= keep")
        self.raw_s = raw_s
        self.hourly_s = hourly_s
        self.keep_s = keep_s
        self.min_spacing_s = min_spacing_s
        self.keepalive_s = keepalive_s
        self.tables_per_step = tables_per_step
        self.budget_s = budget_s
        self.after_pk = 0

    def downsample(self, store: MaintenanceStore,
                   clock: Callable[[], float] = time.monotonic) -> int:
        """Steps of the walk until the budget is spent or the walk wrapped; rows changed."""
        deadline = clock() + self.budget_s
        changed = 0
        while clock() < deadline:
            last, n = store.history_downsample(self.after_pk, self.tables_per_step,
                                               self.raw_s, self.hourly_s, self.keep_s)
            changed += n
            if last is None:  # past the last table: the next pass starts over
                self.after_pk = 0
                break
            self.after_pk = last
        if changed:
            log.info("history downsampled", rows=changed, at_table_pk=self.after_pk)
        return changed
