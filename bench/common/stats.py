"""Percentiles and medians, one definition for every benchmark's figures."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence


def percentile(sorted_values: Sequence[float], pct: float, empty: float = math.nan) -> float:
    """The nearest-rank percentile (a value that was measured, never an interpolation) of
    ascending ``sorted_values``; ``empty`` when there are none."""
    if not sorted_values:
        return empty
    rank = max(1, math.ceil(pct / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def median(values: Iterable[float]) -> float:
    """The median; nan for no values (a run that measured nothing prints as nan, not 0)."""
    data = list(values)
    return statistics.median(data) if data else math.nan
