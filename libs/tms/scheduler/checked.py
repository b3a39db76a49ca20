"""Locations already checked, reused while the table's state they were read from is the same.

The scheduler checks a table's location (parsed, symlinks resolved, against the catalog's
allowed locations and every other table's) before it queues anything for it. For an
unchanged Iceberg table (its catalog names the metadata file last inspected) that check
came to the same answer at every decision and cost a fifth of the scheduler's CPU per
unchanged table (``realpath`` walks every segment of a local path with ``lstat``). It is
reused when the plugin names the state the location was read from (``located_state``), that
state, the raw location and the catalog's allowed locations are all the same as when it was
checked, and the table still stores the location the check gave.

Why that is safe: a location is never used on the strength of this check. Where it is used
it is checked again, symlinks resolved: ``build_job`` checks the stored location against the
allowed locations before a job is built, and the job (``jobs/table_guard.py``) checks the
location it reads from the catalog itself and refuses a local location reached through a
symlink. So a symlink swapped after the check makes the job refuse, and the next decision
that sees a changed state (a new metadata file) checks anew. What reuse gives up is only
that an operation may be queued (and then refused) for a location swapped since.
"""

from __future__ import annotations

from collections.abc import Sequence

# Tables remembered; past that the memory starts again (the next decisions check anew).
MAX_CHECKED_TABLES = 200_000

Entry = tuple[str, str, tuple[str, ...], str]  # (state, raw, allowed, checked location)


class CheckedLocations:
    """Thread-safe enough for the decision threads: single dict reads and writes (the GIL
    makes each atomic), each table decided by one thread at a time."""

    def __init__(self, max_tables: int = MAX_CHECKED_TABLES) -> None:
        self.max_tables = max_tables
        self._checked: dict[int, Entry] = {}
        self.reused = 0  # checks not repeated (for tests and the bench)

    def get(self, pk: int, state: str | None, raw: str, allowed: Sequence[str],
            stored: str) -> str | None:
        """The checked location if it may be reused, else None (check it)."""
        if state is None:
            return None
        entry = self._checked.get(pk)
        if entry is None or entry != (state, raw, tuple(allowed), stored):
            return None
        self.reused += 1
        return entry[3]

    def put(self, pk: int, state: str | None, raw: str, allowed: Sequence[str],
            where: str) -> None:
        if state is None or self.max_tables <= 0:
            return
        if len(self._checked) >= self.max_tables and pk not in self._checked:
            self._checked.clear()
        self._checked[pk] = (state, raw, tuple(allowed), where)

    def forget(self, pk: int) -> None:
        self._checked.pop(pk, None)
