"""Policy keys checked against each other where they interact: a small-file size above the
size compaction writes, a minimum above its maximum. Each key alone may be in range while the
pair makes no sense (every file "small", so every run rewrites everything); the API refuses
such a pair naming both keys, in a table's policy, a catalog's default policy, and the
combination that applies to a table (schema defaults, then its catalog's, then its own).

A format plugin declares its pairs (``TableFormatPlugin.policy_bounds`` and
``param_bounds``) with :class:`Bound`; only numeric keys take part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tms.policy.schema import PolicyKey

# where a value comes from, most specific first: (name shown, values)
Layers = Sequence[tuple[str, Mapping[str, str]]]
DEFAULT_SOURCE = "default"


@dataclass(frozen=True)
class Bound:
    """``lower`` must not be above ``upper`` (``strict``: must be below it)."""

    lower: str
    upper: str
    strict: bool = False
    why: str = ""

    def holds(self, low: float, high: float) -> bool:
        return low < high if self.strict else low <= high


def _value(spec: PolicyKey, layers: Layers) -> tuple[float, str] | None:
    """The key's numeric value and where it comes from: the first layer holding a value that
    parses (a bad value is reported by the key's own check), else the schema's default; None
    when nobody sets it (no default)."""
    for source, values in layers:
        raw = values.get(spec.key)
        if raw is None:
            continue
        try:
            parsed = spec.parse(raw)
        except ValueError:
            return None
        if isinstance(parsed, bool) or not isinstance(parsed, int | float):
            return None
        return float(parsed), source
    if spec.default is None or isinstance(spec.default, bool) or not isinstance(
            spec.default, int | float):
        return None
    return float(spec.default), DEFAULT_SOURCE


def _shown(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)


def bound_problems(keys: Mapping[str, PolicyKey], bounds: Sequence[Bound], layers: Layers,
                   field: str, blame: str | None = None) -> list[tuple[str, str]]:
    """(``field[key]``, problem) for every pair out of order in the values ``layers`` give
    (over the schema's defaults). Only pairs with a value from the layer named ``blame``
    (default: the first) are reported, and the field named is that layer's key: a table is
    not blamed for its catalog's pair."""
    blame = layers[0][0] if blame is None and layers else blame
    problems = []
    for b in bounds:
        lo_spec, hi_spec = keys.get(b.lower), keys.get(b.upper)
        if lo_spec is None or hi_spec is None:
            continue
        lo, hi = _value(lo_spec, layers), _value(hi_spec, layers)
        if lo is None or hi is None or b.holds(lo[0], hi[0]):
            continue
        if blame not in (lo[1], hi[1]):
            continue
        named = b.lower if lo[1] == blame else b.upper
        relation = "below" if b.strict else "at most"
        why = f" ({b.why})" if b.why else ""
        problems.append((f"{field}[{named}]", (
            f"{b.lower} ({_shown(lo[0])}, {_source(lo[1])}) must be {relation} {b.upper} "
            f"({_shown(hi[0])}, {_source(hi[1])}){why}")))
    return problems


def _source(source: str) -> str:
    return "the schema's default" if source == DEFAULT_SOURCE else f"from the {source}"
