"""The Hudi decisions, from one look's metrics (:mod:`tms.formats.hudi.inspect`).

Each decision is one Hudi would agree with: a plan is scheduled only when it would hold work
(log files to compact, small files to cluster, file versions to clean under the writers'
retention), the trigger is counted the way the table's Hudi version counts it, and a plan
already on the timeline comes first: a REQUESTED plan is executed even when scheduling new ones
is disabled by policy, an INFLIGHT one only once its heartbeat has expired (Hudi would roll back
and redo a plan a live writer is still running).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tms.domain import Operation, OperationState
from tms.formats.hudi.policy import STRATEGY, as_int, is_on

# Decision params, read by the job builder from ``operation.work.params`` (all strings there):
# - PARAM_MODE: the utility's --mode (scheduleAndExecute, or execute a pending plan); not clean
# - PARAM_INSTANT: the pending plan's instant time (mode execute; clean: the pending clean,
#   which Hudi's cleaner finishes before planning another)
# - PARAM_TRIGGER_STRATEGY, PARAM_MAX_DELTA_COMMITS, PARAM_MAX_DELTA_SECONDS: the compaction
#   trigger TMS evaluated, for hoodie.compact.inline.trigger.strategy / .max.delta.commits /
#   .max.delta.seconds, so Hudi schedules the plan TMS decided on instead of applying its own
#   defaults and finding nothing to do
PARAM_MODE = "mode"
PARAM_INSTANT = "instant"
PARAM_TRIGGER_STRATEGY = "trigger_strategy"
PARAM_MAX_DELTA_COMMITS = "max_delta_commits"
PARAM_MAX_DELTA_SECONDS = "max_delta_seconds"
SCHEDULE_AND_EXECUTE = "scheduleAndExecute"
EXECUTE = "execute"

Verdict = tuple[bool, str, dict[str, Any]]
_ENABLED_KEY = {"compaction": "compaction.enabled", "clustering": "clustering.enabled",
                "clean": "clean.enabled"}
# Table versions below this one keep Hudi 0.x's timeline, where scheduling a compaction
# while an earlier write is pending throws ("Earliest write inflight instant time must be
# later than compaction time", Hudi 0.14's ScheduleCompactionActionExecutor).
V1_TABLE_VERSION = 8
_WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit", "clustering")
_LEFT_PENDING = {  # why a pending plan is executed although new ones are not scheduled
    "compaction": "a plan left pending keeps its file groups out of every later compaction",
    "clustering": "a plan left pending makes writers' updates to its file groups fail",
    "clean": "the files it names are already chosen; Hudi's next clean would finish it first"}


def pending_plan(action: str, policy: Mapping[str, str], m: Mapping[str, Any],
                 now: datetime, blocked: str | None = None) -> Verdict | None:
    """The verdict on the oldest pending plan of ``action``, None when there is none.
    ``blocked``: why a pending plan must not run (e.g. the cleaner's retention unknown)."""
    plans = [p for p in m.get("pending", []) if p["action"] == action]
    if not plans:
        return None
    p, more = plans[0], f" ({len(plans)} pending)" if len(plans) > 1 else ""
    key = _ENABLED_KEY[action]
    disabled = "" if is_on(key, policy) else (
        f", although {key}=false (that stops new plans only: {_LEFT_PENDING[action]})")
    if blocked:
        return False, f"{action} {p['instant']} is {p['state']}{more}; not run: {blocked}", {}
    params = {PARAM_INSTANT: p["instant"]} if action == "clean" else {
        PARAM_MODE: EXECUTE, PARAM_INSTANT: p["instant"]}
    if p["state"] == "REQUESTED":
        return True, (f"{action} plan {p['instant']} is REQUESTED{more}; executing it before "
                      f"scheduling a new one{disabled}"), params
    expiry = float(m.get("heartbeat_expiry_s", 120.0))
    if p["heartbeat_s"] is None:
        age_text, expired = "has no heartbeat file (Hudi deems its writer gone)", True
    else:
        age = now.timestamp() - float(p["heartbeat_s"])
        expired = age > expiry
        age_text = f"last heartbeat {int(age)} s ago (expiry {expiry:g} s)"
    if not expired:
        return False, (f"{action} {p['instant']} is INFLIGHT{more}: {age_text}, so a writer is "
                       "still running it; not touched"), {}
    return True, (f"{action} {p['instant']} is INFLIGHT{more} and {age_text}; executing it "
                  f"(Hudi rolls back the failed attempt and runs the plan again){disabled}"), params


def _pending_write(m: Mapping[str, Any]) -> str:
    """Why a new compaction cannot be scheduled on a table of the 0.x timeline now (an
    earlier write still pending: Hudi would throw), or '' when it can."""
    version = int(m.get("table_version") or 0)
    if version >= V1_TABLE_VERSION:
        return ""
    writes = [p for p in m.get("pending", []) if p["action"] in _WRITE_ACTIONS]
    if not writes:
        return ""
    w = writes[0]
    more = f" (and {len(writes) - 1} more)" if len(writes) > 1 else ""
    return (f"{w['action']} {w['instant']} is {w['state']}{more}, and on a table of version "
            f"{version} Hudi refuses to schedule a compaction while an earlier write is "
            "pending (the earliest inflight write must be later than the compaction); "
            "scheduled once it completes or is rolled back")


def compaction(policy: Mapping[str, str], m: Mapping[str, Any], now: datetime) -> Verdict:
    if m["table_type"] != "MERGE_ON_READ":
        return (False, "compaction applies to MERGE_ON_READ tables only; this table is "
                       f"{m['table_type']}", {})
    if (v := pending_plan("compaction", policy, m, now)) is not None:
        return v
    if not is_on("compaction.enabled", policy):
        return False, "compaction is disabled by policy (compaction.enabled=false)", {}
    if "slices_error" in m:
        return False, f"not scheduled: the file slices are unknown ({m['slices_error']})", {}
    if not m["slices_with_logs"]:
        return False, (f"no file slice has log files ({m['file_groups']} file groups, base files "
                       "only): a compaction plan would be empty"), {}
    strategy = STRATEGY.as_str(policy)
    after_request = strategy == "NUM_COMMITS_AFTER_LAST_REQUEST"
    n = m["hudi_delta_commits_after_request" if after_request else "hudi_delta_commits"]
    since = ("since the last compaction request" if after_request else
             "since the last compaction" if m["hudi_last_compaction"] else
             "since the first delta commit (no compaction on the active timeline)")
    max_n = as_int("compaction.delta-commits", policy)
    max_s = as_int("compaction.delta-seconds", policy)
    clock = m["hudi_compaction_clock"]
    if clock is None:
        return False, "no delta commit on the active timeline; nothing to compact", {}
    age = (now - datetime.fromisoformat(clock)).total_seconds()
    num_ok, time_ok = n >= max_n, age >= max_s
    age_text = f"{int(age)} s"  # int() never rounds up to a threshold
    if strategy in ("NUM_COMMITS", "NUM_COMMITS_AFTER_LAST_REQUEST"):
        run, why = num_ok, f"{n} delta commits {since} (threshold {max_n}, {strategy})"
    elif strategy == "TIME_ELAPSED":
        run, why = time_ok, (f"{n} delta commits; {age_text} {since} "
                             f"(threshold {max_s} s, TIME_ELAPSED)")
    else:
        run = num_ok and time_ok if strategy == "NUM_AND_TIME" else num_ok or time_ok
        why = (f"{n} delta commits (threshold {max_n}) and {age_text} (threshold {max_s} s) "
               f"{since}, {strategy}")
    counted = ("delta commits of every state" if after_request or m["hudi_counting"] == "0.x"
               else "completed delta commits")
    why += (f"; {counted}, as Hudi {m['hudi_counting']} counts them; "
            f"{m['slices_with_logs']} file slices have log files")
    if age < 0:
        why += "; the last instant is in the future: check the policy's timeline.timezone"
    if not run:
        return False, why, {}
    held = _pending_write(m)
    if held:
        return False, f"{why}; not scheduled: {held}", {}
    return True, why, {PARAM_MODE: SCHEDULE_AND_EXECUTE, PARAM_TRIGGER_STRATEGY: strategy,
                       PARAM_MAX_DELTA_COMMITS: str(max_n), PARAM_MAX_DELTA_SECONDS: str(max_s)}


def _commits_since(action: str, policy: Mapping[str, str], m: Mapping[str, Any]
                   ) -> tuple[int, int, str]:
    """(commits since the last ``action``, the policy's threshold, the reason's words)."""
    n, limit = m[f"commits_since_{action}"], as_int(f"{action}.commits", policy)
    since = (f"since the last {action}" if m[f"last_{action}_instant"]
             else f"with no {action} on the active timeline")
    return n, limit, f"{n} commits {since} (threshold {limit})"


def clustering(policy: Mapping[str, str], m: Mapping[str, Any], now: datetime) -> Verdict:
    if (v := pending_plan("clustering", policy, m, now)) is not None:
        return v
    if not is_on("clustering.enabled", policy):
        return False, "clustering is disabled by policy (clustering.enabled=false)", {}
    if "slices_error" in m:
        return False, f"not scheduled: the file slices are unknown ({m['slices_error']})", {}
    n, limit, why = _commits_since("clustering", policy, m)
    if n < limit:
        return False, why, {}
    if not m["clusterable_file_groups"]:
        return False, (f"{why}, but no file group can be clustered: none has a base file "
                       f"below {m['small_file_limit_bytes']} bytes "
                       "(hoodie.clustering.plan.strategy.small.file.limit), so a plan would "
                       "be empty"), {}
    return True, (f"{why}; {m['clusterable_file_groups']} file groups have base files below "
                  f"{m['small_file_limit_bytes']} bytes"), {PARAM_MODE: SCHEDULE_AND_EXECUTE}


def clean(policy: Mapping[str, str], m: Mapping[str, Any], now: datetime) -> Verdict:
    unknown = m.get("clean_unknown")
    blocked = None if unknown is None else (
        f"{unknown} (Hudi's cleaner would plan a new clean with its default retention after "
        "finishing it)")
    if (v := pending_plan("clean", policy, m, now, blocked)) is not None:
        return v
    if not is_on("clean.enabled", policy):
        return False, "clean is disabled by policy (clean.enabled=false)", {}
    if unknown is not None:
        return False, f"clean refused: {unknown}", {}
    n, limit, why = _commits_since("clean", policy, m)
    if n < limit:
        return False, why, {}
    retention = (f"{m['cleaner_policy']} with {m['cleaner_retention_key']}="
                 f"{m['cleaner_retained']}")
    if not m["cleanable_files"]:
        return False, f"{why}, but no file version is cleanable under {retention}", {}
    return True, (f"{why}; {m['cleanable_files']} files ({m['cleanable_bytes']} bytes) in "
                  f"{m['cleanable_file_groups']} file groups are cleanable under {retention}"), {}


def _timeline_mark(m: Mapping[str, Any]) -> tuple[Any, ...]:
    """What Hudi's planners see of a table, from one look's metrics: the newest completed
    instant and every pending one (heartbeats aside)."""
    return (m.get("last_completed_instant"),
            tuple((p.get("instant"), p.get("state")) for p in m.get("pending") or ()))


def no_plan_hold(action: str, params: Mapping[str, Any], m: Mapping[str, Any],
                 last: Operation | None) -> str | None:
    """Why a decision to run should not be queued: the last run of ``action`` with the same
    params ended SKIPPED because Hudi found nothing to plan, and the timeline is as it was
    when that run was decided, so Hudi would find nothing again. None: queue it."""
    if last is None or last.state is not OperationState.SKIPPED:
        return None
    phrase = (last.outcome.result or {}).get("no_plan")
    if not phrase or not last.work.metrics:
        return None
    if ({k: str(v) for k, v in last.work.params.items()}
            != {k: str(v) for k, v in params.items()}):
        return None  # other work (another trigger, another plan)
    if _timeline_mark(last.work.metrics) != _timeline_mark(m):
        return None  # the timeline moved: Hudi may plan now
    return (f"the last {action} (operation {last.id}) found nothing to plan ({phrase!r}) "
            f"and the timeline has not changed since (newest completed instant "
            f"{m.get('last_completed_instant')}); waiting for a new instant")


def stale(decision: tuple[bool, str, Mapping[str, Any]] | None,
          queued: Mapping[str, Any]) -> str | None:
    """Why an operation queued with params ``queued`` should end SKIPPED, given the decision
    on the table as it is now (run, reason, params), or None to run it: the decision no longer
    calls for a run, the pending plan it was to execute is gone (a writer's own service ran
    it), or a plan is pending now that a new schedule would collide with."""
    if decision is None:
        return None
    run, reason, params = decision
    if not run:
        return f"no longer needed: {reason}"
    want, now = queued.get(PARAM_INSTANT), params.get(PARAM_INSTANT)
    if want is not None and want != now:
        return f"plan {want} is no longer pending: {reason}"
    if want is None and now is not None:
        return f"a plan is pending now and runs first: {reason}"
    return None
