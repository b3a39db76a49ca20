"""The policy keys every table takes whatever its format, validation of a table's policy map
against the schema (``tms.policy.schema``), and the policy in force with where each value comes
from (ExplainTable).

A policy is a string map with Amoro-style dotted keys. The common keys steer the scheduler and
the executor; a format plugin adds its own (``TableFormatPlugin.policy_keys``). Unknown keys and
bad values are refused at the API, naming ``table.policy[<key>]``; a stored value that went bad
(written before a rule tightened) never stops the scheduler: readers fall back to the default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tms.policy.schema import PolicyKey, by_key, check_values, integer
from tms.policy.spark import SPARK_CONF_KEYS, SPARK_CONF_PREFIX, SPARK_TABLE_KEYS, conf_refusal

__all__ = ["COMMON_KEYS", "PolicyKey", "SPARK_CONF_KEYS", "SPARK_CONF_PREFIX",
           "SPARK_TABLE_KEYS", "effective_policy", "in_force", "max_attempts",
           "validate_policy"]

DAY_S = 86_400
DEFAULT_PULL_INTERVAL_S = 600  # inspect a table at least this often, commits or not
MIN_PULL_INTERVAL_S = 1
MAX_PULL_INTERVAL_S = 30 * DAY_S  # a table is looked at at least monthly
PULL_INTERVAL_KEY = integer(
    "scheduler.pull-interval-s", DEFAULT_PULL_INTERVAL_S, MIN_PULL_INTERVAL_S,
    MAX_PULL_INTERVAL_S, "s", "inspect the table at least this often, commits or not")

# How many attempts an operation gets. Where a job runs (master, deploy mode, jars) is the
# operator's choice per queue only: a table owner must not be able to send catalog credentials
# to a cluster of their choosing (see tms.policy.spark).
DEFAULT_MAX_ATTEMPTS = 3
MAX_MAX_ATTEMPTS = 100
MAX_ATTEMPTS_KEY = integer(
    "execution.max-attempts", DEFAULT_MAX_ATTEMPTS, 1, MAX_MAX_ATTEMPTS, "count",
    "attempts an operation gets before it fails (non-retryable errors fail at once)")

# How many operations of one action may fail in a row before the action is held (no new one
# queued until a hold runs out, a new commit, a policy change or a resume releases it).
DEFAULT_HOLD_AFTER_FAILURES = 3
MAX_HOLD_AFTER_FAILURES = 100
HOLD_AFTER_FAILURES_KEY = integer(
    "execution.hold-after-failures", DEFAULT_HOLD_AFTER_FAILURES, 1, MAX_HOLD_AFTER_FAILURES,
    "count", "failed operations of one action in a row after which the action is held: "
             "none queued until the hold runs out (doubling with each hold), a new commit, a "
             "policy change or `tms tables resume`")

SCHEDULER_KEYS: dict[str, PolicyKey] = by_key((PULL_INTERVAL_KEY, MAX_ATTEMPTS_KEY,
                                               HOLD_AFTER_FAILURES_KEY))
COMMON_KEYS: dict[str, PolicyKey] = {**SCHEDULER_KEYS, **SPARK_TABLE_KEYS, **SPARK_CONF_KEYS}


def schema(format_keys: Mapping[str, PolicyKey]) -> dict[str, PolicyKey]:
    """Every key a table of a format may set: the common keys and the format's own."""
    clash = set(format_keys) & set(COMMON_KEYS)
    if clash:
        raise ValueError(f"format keys shadow common keys: {sorted(clash)}")
    return {**COMMON_KEYS, **format_keys}


def validate_policy(keys: Mapping[str, PolicyKey], overrides: Mapping[str, str],
                    field: str = "table.policy") -> list[tuple[str, str]]:
    """(``field[key]``, problem) for every unknown key and bad value of a policy map, given
    the format's own keys (the common keys are always known)."""
    known = schema(keys)
    conf = {k: v for k, v in overrides.items()
            if k.startswith(SPARK_CONF_PREFIX) and k not in known}
    problems = [(f"{field}[{k[:128]}]", conf_refusal(k)) for k in conf]
    rest = {k: v for k, v in overrides.items() if k not in conf}
    listed = [*sorted(k for k in known if not k.startswith(SPARK_CONF_PREFIX)),
              "spark.conf.<tuning key>"]
    return problems + check_values(known, rest, field, "unknown policy key", listed,
                                   "tms tables policy-keys or docs/policy.md")


def in_force(keys: Mapping[str, PolicyKey], table_policy: Mapping[str, str],
             catalog_policy: Mapping[str, str]) -> dict[str, str]:
    """The policy a table is maintained with: its own keys over its catalog's default policy.
    Only the catalog's keys the table's format knows (common + ``keys``) join: a catalog's
    default policy serves tables of every format, so it may name other formats' keys. What
    the scheduler evaluates, the executor runs with and ExplainTable shows (same order)."""
    known = schema(keys)
    return {**{k: v for k, v in catalog_policy.items() if k in known}, **table_policy}


def max_attempts(policy: Mapping[str, str], default: int = DEFAULT_MAX_ATTEMPTS) -> int:
    """The table's ``execution.max-attempts`` if it sets a valid one, else ``default``."""
    if MAX_ATTEMPTS_KEY.key in policy:
        try:
            return MAX_ATTEMPTS_KEY.as_int(policy)
        except ValueError:  # validated at registration; a bad stored value must not stop us
            pass
    return default


def hold_after_failures(policy: Mapping[str, str]) -> int:
    """The table's ``execution.hold-after-failures`` if it sets a valid one, else the
    default."""
    if HOLD_AFTER_FAILURES_KEY.key in policy:
        try:
            return HOLD_AFTER_FAILURES_KEY.as_int(policy)
        except ValueError:  # validated at registration; a bad stored value must not stop us
            pass
    return DEFAULT_HOLD_AFTER_FAILURES


def pull_interval_s(policy: Mapping[str, str], default: float) -> float:
    """The table's ``scheduler.pull-interval-s`` if valid, else ``default``; always within
    the key's range, so no stored value can push a next check out of the calendar."""
    value = default
    if PULL_INTERVAL_KEY.key in policy:
        try:
            value = PULL_INTERVAL_KEY.as_int(policy)
        except ValueError:
            pass
    return float(min(max(value, MIN_PULL_INTERVAL_S), MAX_PULL_INTERVAL_S))


@dataclass(frozen=True)
class EffectiveValue:
    """One key as it applies to a table: the value in force and where it comes from."""

    key: str
    value: str
    source: str  # "table", "catalog" or "default"
    default: str
    unit: str
    doc: str


def effective_policy(keys: Mapping[str, PolicyKey], table_policy: Mapping[str, str],
                     catalog_policy: Mapping[str, str]) -> list[EffectiveValue]:
    """Every key of the schema (common + ``keys``) with its value: the table's own, else its
    catalog's default policy, else the schema's default. A value that does not parse any more
    is shown as stored, with its problem in the doc, since the scheduler then uses the default.
    Keys without a default that nobody set (Spark conf) are left out."""
    out = []
    for k, spec in sorted(schema(keys).items()):
        default = PolicyKey.text(spec.default)
        source, raw = "default", default
        for where, values in (("table", table_policy), ("catalog", catalog_policy)):
            if k in values:
                source, raw = where, values[k]
                break
        if source == "default" and spec.default is None:
            continue
        doc = spec.doc
        if source != "default":
            try:
                spec.parse(raw)
            except ValueError as e:
                doc = f"{doc} (stored value refused: {e}; the default applies)"
        out.append(EffectiveValue(k, raw, source, default, spec.unit, doc))
    return out
