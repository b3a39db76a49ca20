"""The metaserver hook: a catalog calls it on each commit and TMS hears about it.

It goes through the API's commit intake (NotifyCommits) like any writer, so there is a single
path into the database. Give it a :class:`CommitNotifier` to keep the catalog's commit path
free of any wait on TMS, or a :class:`TmsClient` to forward synchronously and see the outcome
(the CloudEvents receiver does that, so its HTTP answer says whether TMS took the events)::

    hook = CommitHook(CommitNotifier(TmsClient("tms-api:50051", token=TOKEN),
                                     on_drop=report_lost_commits))
    catalog.on_commit(hook)         # hook(event) for each event dict

With a notifier, a commit the hook hands over is never lost quietly either: the notifier's
``on_drop`` callback and its stats report every commit it could not deliver (queue full, TMS
down past its time budget, refused), exactly as for a writer calling ``notify()``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tms_client.client import TmsClient
from tms_client.commits import Commit, CommitResult
from tms_client.errors import TmsError
from tms_client.events import EventError, EventMapping
from tms_client.notifier import CommitNotifier

log = logging.getLogger("tms_client.hook")


@dataclass
class HookResult:
    """What became of a list of events."""

    commits: list[Commit] = field(default_factory=list)
    event_of: list[int] = field(default_factory=list)  # the event each commit came from
    ignored: list[tuple[int, str]] = field(default_factory=list)  # (event, why)
    results: list[CommitResult] | None = None  # synchronous sink: the API's answers
    queued: int = 0  # notifier sink: commits queued (the others went to its on_drop)


class CommitHook:
    """Maps catalog events to commits (see :mod:`tms_client.events`) and forwards them.

    Calling the hook never raises unless ``raise_errors``: a malformed event or an
    unreachable TMS is logged and the catalog's commit goes on.
    """

    def __init__(self, sink: TmsClient | CommitNotifier, mapping: EventMapping | None = None,
                 *, raise_errors: bool = False) -> None:
        self.sink = sink
        self.mapping = mapping or EventMapping()
        self.raise_errors = raise_errors

    def __call__(self, event: Mapping[str, Any]) -> int:
        """Forwards one event; returns the number of commits it carried."""
        try:
            return len(self.forward([event], batched=False).commits)
        except (EventError, TmsError) as e:
            if self.raise_errors:
                raise
            log.warning("commit event not forwarded to TMS: %s", e)
            return 0

    def map(self, events: Sequence[Mapping[str, Any]], batched: bool = True) -> HookResult:
        """All events' commits, or EventError for the first malformed one (fields named
        ``events[i]...`` when ``batched``): a batch is taken whole or not at all."""
        out = HookResult()
        for i, event in enumerate(events):
            try:
                mapped = self.mapping.map(event)
            except EventError as e:
                raise e.within(f"events[{i}]") if batched else e from None
            if mapped.ignored is not None:
                out.ignored.append((i, mapped.ignored))
            out.commits += mapped.commits
            out.event_of += [i] * len(mapped.commits)
        return out

    def forward(self, events: Sequence[Mapping[str, Any]], batched: bool = True) -> HookResult:
        """Maps and forwards; raises EventError (bad input) or TmsError (synchronous sink)."""
        out = self.map(events, batched)
        if not out.commits:
            out.results = [] if isinstance(self.sink, TmsClient) else None
            return out
        if isinstance(self.sink, CommitNotifier):
            out.queued = sum(1 for c in out.commits if self.sink.submit(c))
        else:
            out.results = self.sink.notify_commits(out.commits)
        return out
