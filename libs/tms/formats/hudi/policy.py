"""The Hudi plugin's policy keys and operation parameters (strictly parsed: owners are untrusted).

The trigger policy mirrors Hudi's own inline table services, so a table moved from inline to TMS
maintenance keeps its behaviour: compaction uses Hudi's trigger strategies
(``hoodie.compact.inline.trigger.strategy`` with ``max.delta.commits`` / ``max.delta.seconds``),
clustering counts commits since the last clustering (``hoodie.clustering.inline.max.commits``),
and clean counts commits since the last clean.
"""

from __future__ import annotations

from collections.abc import Mapping

from tms.policy.schema import PolicyKey, boolean, by_key, choice, integer, text, zone

DEFAULT_COMPACTION_DELTA_COMMITS = 5  # Hudi's hoodie.compact.inline.max.delta.commits
DEFAULT_COMPACTION_DELTA_SECONDS = 3600  # Hudi's hoodie.compact.inline.max.delta.seconds
DEFAULT_CLUSTERING_COMMITS = 4  # Hudi's hoodie.clustering.inline.max.commits
# Hudi cleans after every commit (hoodie.clean.max.commits=1) because inline cleaning is cheap;
# here each clean is a spark-submit costing seconds, so it waits for ten commits.
DEFAULT_CLEAN_COMMITS = 10
# Hudi's CompactionTriggerStrategy; NUM_COMMITS_AFTER_LAST_REQUEST counts from the newest
# compaction plan, pending or completed
STRATEGIES = ("NUM_COMMITS", "NUM_COMMITS_AFTER_LAST_REQUEST", "TIME_ELAPSED", "NUM_AND_TIME",
              "NUM_OR_TIME")
MODES = ("scheduleAndExecute", "execute", "schedule")  # --mode of compactor and clustering job
INSTANT_PATTERN = r"[0-9]{14,20}"

FORMAT = ("hudi",)
MAX_COMMITS = 100_000
MAX_SECONDS = 30 * 86_400
STRATEGY = choice("compaction.trigger-strategy", STRATEGIES, "NUM_COMMITS",
                  "Hudi's compaction trigger: count (since the last compaction, or its last "
                  "request), time, both or either", FORMAT)
TIMEZONE = zone("timeline.timezone", "UTC", "the zone of the writers' clocks (Hudi instant "
                "times are local time), unless the catalog's writer configuration states "
                "tms.hudi.writer-timezone", FORMAT)
POLICY_KEYS: dict[str, PolicyKey] = by_key((
    boolean("compaction.enabled", True, "schedule compactions of MERGE_ON_READ tables (a "
            "pending plan is executed either way)", FORMAT),
    integer("compaction.delta-commits", DEFAULT_COMPACTION_DELTA_COMMITS, 1, MAX_COMMITS,
            "count", "delta commits that trigger a compaction (NUM_* strategies)", FORMAT),
    integer("compaction.delta-seconds", DEFAULT_COMPACTION_DELTA_SECONDS, 1, MAX_SECONDS, "s",
            "time since the last compaction that triggers one (*_TIME strategies)", FORMAT),
    boolean("clustering.enabled", False, "schedule clusterings (Hudi's clustering job; a "
            "pending plan is executed either way)", FORMAT),
    integer("clustering.commits", DEFAULT_CLUSTERING_COMMITS, 1, MAX_COMMITS, "count",
            "commits since the last clustering that trigger the next", FORMAT),
    boolean("clean.enabled", True, "schedule cleans of old file versions, within the writers' "
            "retention (a pending clean is executed either way)", FORMAT),
    integer("clean.commits", DEFAULT_CLEAN_COMMITS, 1, MAX_COMMITS, "count",
            "commits since the last clean that trigger the next", FORMAT),
    STRATEGY, TIMEZONE,
))
_MODE = choice("mode", MODES, None, "schedule and execute a plan, or execute the pending one",
               FORMAT)
_INSTANT = text("instant", None, INSTANT_PATTERN, "a Hudi instant time (14-20 digits)",
                "the pending plan to execute (mode execute)", FORMAT)
_COMPACTION_PARAMS = by_key((
    _MODE, _INSTANT,
    choice("trigger_strategy", STRATEGIES, None, "the trigger strategy the job passes to Hudi "
           "(hoodie.compact.inline.trigger.strategy)", FORMAT),
    integer("max_delta_commits", None, 1, MAX_COMMITS, "count", "the delta-commit trigger "
            "the job passes to Hudi (hoodie.compact.inline.max.delta.commits)", FORMAT),
    integer("max_delta_seconds", None, 1, MAX_SECONDS, "s", "the time trigger the job passes "
            "to Hudi (hoodie.compact.inline.max.delta.seconds)", FORMAT),
))
PARAMS: dict[str, dict[str, PolicyKey]] = {"compaction": _COMPACTION_PARAMS,
                                           "clustering": by_key((_MODE, _INSTANT)),
                                           "clean": by_key((text(
                                               "instant", None, INSTANT_PATTERN,
                                               "a Hudi instant time (14-20 digits)",
                                               "the pending clean the cleaner finishes first",
                                               FORMAT),))}


def as_int(key: str, policy: Mapping[str, str]) -> int:
    return int(POLICY_KEYS[key].get(policy))


def is_on(key: str, policy: Mapping[str, str]) -> bool:
    return bool(POLICY_KEYS[key].get(policy))
