"""The decisions a scheduler last wrote, so an equal one is not written again.

An unchanged table is checked every pull interval and, with six actions (Iceberg), comes to
six decisions equal to the six it came to last time: writing them again was the largest part
of the scheduler's CPU per unchanged table (encoding six JSON documents) and rewrote six rows
in PostgreSQL for nothing. A decision is written when it differs in anything from the one
this scheduler last wrote for the table and action (reason, metrics, parameters, benefit,
the operation it queued): equality of the whole decision is the test, so a decision that
depends on the clock (a minimum interval "too soon", a snapshot's age) is written when its
reason or metrics change, whether or not the table did. ``decided_at`` is therefore when the
decision last changed; the table's ``checked_at`` (set for every decided table) is when it
was last looked at.

The memory holds only what this scheduler wrote, and is correct only while nobody else
writes those rows: the shards a scheduler holds are exclusively its own, so the memory is
dropped whenever the set of shards held changes (another scheduler may have decided for
them meanwhile). It is updated only after the write succeeded. Used by the loop's thread
alone (one batch at a time): no lock.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from tms.domain import Decision

# Tables remembered; past that the memory starts again (the next decisions are written).
MAX_WRITTEN_TABLES = 200_000

Row = tuple[int, Decision, int | None]  # (table pk, decision, operation queued)


class WrittenDecisions:
    def __init__(self, max_tables: int = MAX_WRITTEN_TABLES) -> None:
        self.max_tables = max_tables
        self._last: dict[int, dict[str, tuple[Decision, int | None]]] = {}
        self._shards: frozenset[int] | None = None
        self.skipped = 0  # decisions not written again (for tests and the bench)

    def __len__(self) -> int:
        return len(self._last)

    def holding(self, shards: Collection[int]) -> None:
        """The shards held for this batch: a change drops the memory."""
        held = frozenset(shards)
        if held != self._shards:
            self._last.clear()
            self._shards = held

    def changed(self, rows: Sequence[Row]) -> list[Row]:
        """The rows that differ from what was last written for their table and action."""
        out: list[Row] = []
        for row in rows:
            pk, decision, op = row
            last = self._last.get(pk)
            if last is not None and last.get(decision.action) == (decision, op):
                continue
            out.append(row)
        self.skipped += len(rows) - len(out)
        return out

    def wrote(self, rows: Sequence[Row]) -> None:
        """Remember rows just written (call only after the write succeeded)."""
        if self.max_tables <= 0:
            return
        for pk, decision, op in rows:
            last = self._last.get(pk)
            if last is None:
                if len(self._last) >= self.max_tables:
                    self._last.clear()
                last = self._last[pk] = {}
            last[decision.action] = (decision, op)

    def forget(self, pks: Collection[int]) -> None:
        for pk in pks:
            self._last.pop(pk, None)
