"""``tms status``: the fleet now (GetFleetStatus): processes alive, tables by state and health
band, operations queued, running and ended in the last 24 hours, commits per minute."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from tms.v1 import tms_pb2
from tms_services.cli.client import Client
from tms_services.cli.format import NONE, duration, pairs, table, utc, when
from tms_services.cli.output import emit


def _age(ts: Any, now: dt.datetime) -> str:
    at = utc(ts)
    return NONE if at is None else duration(max((now - at).total_seconds(), 0.0)) + " ago"


def status_text(s: tms_pb2.FleetStatus) -> str:
    now = utc(s.time) or dt.datetime.now(dt.UTC)
    procs = table(
        ["PROCESS", "KIND", "HOST", "ALIVE", "LEADER", "SHARDS", "RUNNING", "HEARTBEAT",
         "STARTED (UTC)"],
        [[p.id, p.kind, p.host, "yes" if p.alive else "NO",
          "yes" if p.leader else "", len(p.shards) if p.kind == "scheduler" else "",
          ", ".join(p.running_operations) if p.kind == "executor" else "",
          _age(p.heartbeat_time, now), when(p.start_time, zone=False)]
         for p in s.processes], right=(5,)) if s.processes else "no scheduler or executor " \
        "has recorded a heartbeat in the last hour"
    alive = {k: sum(1 for p in s.processes if p.kind == k and p.alive)
             for k in ("scheduler", "executor")}
    leader = next((p.id for p in s.processes if p.leader and p.alive), NONE)
    bands = ", ".join(f"{b.band} {b.tables}" + (f" ({b.min_score}-{b.max_score})"
                                                 if b.band != "unknown" else "")
                      for b in s.health_bands)
    lines = [
        f"fleet at {when(s.time)}",
        f"schedulers alive:  {alive['scheduler']} (leader: {leader})",
        f"executors alive:   {alive['executor']}",
        f"tables:            {pairs(dict(s.tables_by_state))}",
        f"health:            {bands}",
        f"operations:        {s.operations_queued} queued, {s.operations_running} running",
        f"ended in 24 h:     {pairs(dict(s.operations_last_24h))}",
        f"commits/minute:    {s.commits_per_minute:g} (last hour)",
        "",
        procs,
    ]
    return "\n".join(lines)


def _status(c: Client, args: argparse.Namespace) -> int:
    emit(args, c.tms.get_fleet_status(), status_text)
    return 0


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("status", parents=[common],
                       help="the fleet now: processes alive, tables by state and health, "
                            "operations queued and running, intake rate")
    p.set_defaults(fn=_status)
