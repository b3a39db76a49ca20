"""Commit ids checked per table format at the door (NotifyCommit, NotifyCommits).

The API does not know a table's format before the store answers, and looking it up first
would cost every notification a round trip. So each event carries the formats whose plugin
refuses its commit id (``CommitEvent.refused``, asked of every plugin: a regex each); the
store records the event only when its table's format is not among them, and answers the
others with that format, in the same statement. The plugin then says what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping

from tms.formats.base import TableFormatPlugin


class CommitIdChecks:
    """The formats' commit-id checks; formats that check nothing (the plugin interface's
    default) are not asked."""

    def __init__(self, formats: Mapping[str, TableFormatPlugin]) -> None:
        self._formats = dict(formats)
        self._checks = [(name, plugin.check_commit_id) for name, plugin in sorted(
            formats.items())
            if type(plugin).check_commit_id is not TableFormatPlugin.check_commit_id]

    def refused(self, commit_id: str) -> tuple[str, ...]:
        """The formats a table of which may not have ``commit_id`` as a commit."""
        return tuple([name for name, check in self._checks if check(commit_id) is not None])

    def problem(self, fmt: str, commit_id: str) -> str:
        """What the plugin of ``fmt`` finds wrong with ``commit_id``."""
        plugin = self._formats.get(fmt)
        found = plugin.check_commit_id(commit_id) if plugin is not None else None
        return found or f"not a commit id of a {fmt} table"
