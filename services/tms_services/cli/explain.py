"""``tms explain``: the scheduler's last decision per action, what is active now, and the
policy in force (each key's value and whether the table, its catalog or the default set it):
the policy's table of every key only with ``--policy``, else one line counting the keys the
table and its catalog set.

The metrics a decision looked at are the table's (every action of one check sees the same
numbers), so they are shown once, from the newest decision, not repeated per action. An action
with an operation QUEUED or RUNNING shows that operation and its state rather than the last
decision's yes/no: "no" next to a running compaction would read as "nothing is happening".
ExplainTable names the active operation but not its state, so the state is fetched with
GetOperation.
"""

from __future__ import annotations

import argparse
from typing import Any

from google.protobuf.json_format import MessageToDict

from tms.v1 import tms_pb2
from tms_client import NotFoundError
from tms_services.cli.client import Client
from tms_services.cli.format import NONE, benefit_text, cut, pairs, table, when, whole
from tms_services.cli.output import emit

ACTIVE_UNKNOWN = "ACTIVE"  # the active operation vanished between the two calls


def table_metrics(r: tms_pb2.ExplainTableResponse) -> dict[str, Any]:
    """The metrics of all decisions merged, the newest decision winning on a key."""
    decided = sorted((a for a in r.actions if a.decided),
                     key=lambda a: (a.decide_time.seconds, a.decide_time.nanos))
    merged: dict[str, Any] = {}
    for a in decided:
        merged.update(whole(MessageToDict(a.metrics)))
    return merged


def active_states(c: Client, r: tms_pb2.ExplainTableResponse) -> dict[str, str]:
    """State name of each active operation the response names."""
    states: dict[str, str] = {}
    for name in {a.active_operation for a in r.actions if a.active_operation}:
        try:
            states[name] = tms_pb2.Operation.State.Name(c.tms.get_operation(name).state)
        except NotFoundError:
            states[name] = ACTIVE_UNKNOWN
    return states


def _run_cell(a: tms_pb2.ActionExplanation, states: dict[str, str]) -> tuple[str, str]:
    if a.active_operation:
        return states.get(a.active_operation, ACTIVE_UNKNOWN), a.active_operation
    if not a.decided:
        return NONE, NONE
    return ("yes", a.operation or NONE) if a.should_run else ("no", NONE)


POLICY_DEFAULT_SOURCE = "default"


def policy_line(r: tms_pb2.ExplainTableResponse) -> str:
    """``policy: 33 keys, 2 set (table: compaction.min-small-files; catalog: ...)``."""
    by_source: dict[str, list[str]] = {}
    for v in r.policy:
        if v.source != POLICY_DEFAULT_SOURCE:
            by_source.setdefault(v.source, []).append(v.key)
    set_keys = sum(len(k) for k in by_source.values())
    where = "; ".join(f"{src}: {', '.join(sorted(keys))}"
                      for src, keys in sorted(by_source.items()))
    return (f"policy: {len(r.policy)} keys, {set_keys} set" + (f" ({where})" if where else
            " (all defaults)") + "; --policy prints each key's value, source and doc")


def hold_text(h: tms_pb2.ActionHold) -> str:
    """One held action: what, since and until when, why, what releases it."""
    return "\n".join([
        f"  {h.action}: held until {when(h.held_until)} (hold {h.holds} in a row, since "
        f"{when(h.hold_time)}; last failed: {h.last_operation})",
        f"    why: {h.reason}",
        "    released by: " + "; ".join(h.released_by)])


def explain_text(r: tms_pb2.ExplainTableResponse, states: dict[str, str],
                 show_policy: bool = True) -> str:
    head = f"{r.table}  {tms_pb2.Table.State.Name(r.state)}"
    if r.HasField("check_time"):  # DECIDED is when each decision last changed
        head += f"  last checked {when(r.check_time)}"
    rows = [[a.action, when(a.decide_time, zone=False) if a.decided else "never",
             *_run_cell(a, states), benefit_text(a), cut(a.reason)] for a in r.actions]
    parts = [head]
    metrics = table_metrics(r)
    if metrics:
        parts.append(f"metrics: {pairs(metrics)}")
    parts += ["", table(["ACTION", "DECIDED (UTC)", "RUN", "OPERATION", "BENEFIT", "REASON"],
                        rows)]
    if r.HasField("read_profile"):  # from engines' scan reports (docs/reads.md)
        parts += ["", f"reads: {r.read_profile.summary}"]
    held = [a for a in r.actions if a.HasField("hold")]
    if held:
        parts += ["", "held (failed too often in a row; nothing queued until released):"]
        parts += [hold_text(a.hold) for a in held]
    if r.policy and not show_policy:
        parts += ["", policy_line(r)]
    elif r.policy:
        parts += ["", "policy (the value in force, and where it comes from):",
                  table(["KEY", "VALUE", "SOURCE", "DEFAULT", "UNIT", "DOC"],
                        [[v.key, v.value or NONE, v.source, v.default or NONE, v.unit or NONE,
                          cut(v.doc)] for v in r.policy])]
    return "\n".join(parts)


def _explain(c: Client, args: argparse.Namespace) -> int:
    r = c.tms.explain_table(args.table)
    states = {} if args.json else active_states(c, r)
    emit(args, r, lambda m: explain_text(m, states, show_policy=args.policy))
    return 0


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    e = sub.add_parser("explain", parents=[common],
                       help="the scheduler's last decision per action, and what runs now")
    e.add_argument("table", metavar="TABLE", help="table id or tables/{id}")
    e.add_argument("--policy", action="store_true",
                   help="also print the policy in force: every key's value, where it comes "
                        "from (table, catalog, default), its default and doc")
    e.set_defaults(fn=_explain)
