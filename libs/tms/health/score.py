"""The health score: 100 minus the penalties of five parts, each from a figure an inspection
already measures. Pure: no I/O, no clock (the caller passes how long maintenance is overdue).

Each part's penalty grows linearly from 0 at its ``healthy`` bound to its full weight at its
``worst`` bound (``ramp``) and is rounded to whole points. The weights add up to 100, so a
table at its worst on every part scores 0. docs/health.md explains each part with an example.
"""

from __future__ import annotations

from dataclasses import dataclass

DAY_S = 86_400

# weights (points each part can take from 100); they sum to 100
SMALL_FILES_WEIGHT = 35
DELETE_FILES_WEIGHT = 20
MANIFESTS_WEIGHT = 15
SNAPSHOTS_WEIGHT = 15
OVERDUE_WEIGHT = 15
WEIGHTS = {"small_files": SMALL_FILES_WEIGHT, "delete_files": DELETE_FILES_WEIGHT,
           "manifests": MANIFESTS_WEIGHT, "snapshots": SNAPSHOTS_WEIGHT,
           "maintenance_overdue": OVERDUE_WEIGHT}
assert sum(WEIGHTS.values()) == 100

# bounds of each ramp
MIN_FILES_FOR_SHARES = 10  # fewer data files than this: shares are not judged (too few to matter)
SMALL_SHARE_HEALTHY = 0.10  # up to 10 % small data files costs nothing
SMALL_SHARE_WORST = 0.60
DELETE_SHARE_HEALTHY = 0.05  # delete files as a share of all files
DELETE_SHARE_WORST = 0.50
MANIFESTS_HEALTHY_RATIO = 1.0  # manifests per the table's manifests.max-count
MANIFESTS_WORST_RATIO = 4.0
EXPIRED_SNAPSHOTS_HEALTHY = 0  # snapshots kept beyond the table's expiry settings
EXPIRED_SNAPSHOTS_WORST = 200
OVERDUE_HEALTHY_S = 1 * DAY_S  # an action due for longer than this starts to cost
OVERDUE_WORST_S = 7 * DAY_S

# bands, as FleetStatus and the metrics count them: (name, lowest score, highest score)
BANDS = (("healthy", 80, 100), ("fair", 50, 79), ("poor", 0, 49))
UNKNOWN_BAND = "unknown"  # never inspected


@dataclass(frozen=True)
class Figures:
    """What one inspection measured, in one shape for every format. ``small_files`` is None
    when the inspection did not need to count them (too few files to matter)."""

    data_files: int = 0
    small_files: int | None = 0
    small_file_bytes: int = 0  # the size below which a data file counts as small
    total_bytes: int = 0
    delete_files: int = 0
    snapshots: int = 0
    expired_snapshots: int = 0  # kept although older than the expiry settings allow
    manifests: int = 0
    manifests_limit: int = 0  # the table's manifests.max-count (0: not judged)

    @property
    def mean_file_bytes(self) -> int:
        return self.total_bytes // self.data_files if self.data_files else 0


@dataclass(frozen=True)
class Part:
    name: str
    value: float
    unit: str
    penalty: int
    max_penalty: int
    detail: str


@dataclass(frozen=True)
class Health:
    score: int
    parts: tuple[Part, ...]


def ramp(value: float, healthy: float, worst: float) -> float:
    """0 at or below ``healthy``, 1 at or above ``worst``, linear in between."""
    if value <= healthy:
        return 0.0
    if value >= worst:
        return 1.0
    return (value - healthy) / (worst - healthy)


def _penalty(weight: int, share: float) -> int:
    return int(round(weight * share))


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def _small(f: Figures) -> Part:
    small = f.small_files or 0
    if f.data_files < MIN_FILES_FOR_SHARES or f.small_files is None:
        return Part("small_files", 0.0, "share", 0, SMALL_FILES_WEIGHT,
                    f"{f.data_files:,} data files: too few to judge")
    share = small / f.data_files
    return Part("small_files", share, "share",
                _penalty(SMALL_FILES_WEIGHT, ramp(share, SMALL_SHARE_HEALTHY, SMALL_SHARE_WORST)),
                SMALL_FILES_WEIGHT,
                f"{share:.0%} of {f.data_files:,} data files are small "
                f"(< {_mib(f.small_file_bytes)})")


def _deletes(f: Figures) -> Part:
    files = f.data_files + f.delete_files
    if files < MIN_FILES_FOR_SHARES:
        return Part("delete_files", float(f.delete_files), "count", 0, DELETE_FILES_WEIGHT,
                    f"{f.delete_files:,} delete files: too few files to judge")
    share = f.delete_files / files
    return Part("delete_files", share, "share",
                _penalty(DELETE_FILES_WEIGHT,
                         ramp(share, DELETE_SHARE_HEALTHY, DELETE_SHARE_WORST)),
                DELETE_FILES_WEIGHT,
                f"{f.delete_files:,} delete files: {share:.0%} of the table's files")


def _manifests(f: Figures) -> Part:
    if f.manifests_limit <= 0:
        return Part("manifests", float(f.manifests), "count", 0, MANIFESTS_WEIGHT,
                    f"{f.manifests:,} manifests (no limit to judge them by)")
    ratio = f.manifests / f.manifests_limit
    return Part("manifests", float(f.manifests), "count",
                _penalty(MANIFESTS_WEIGHT,
                         ramp(ratio, MANIFESTS_HEALTHY_RATIO, MANIFESTS_WORST_RATIO)),
                MANIFESTS_WEIGHT,
                f"{f.manifests:,} manifests; the table's limit is {f.manifests_limit:,}")


def _snapshots(f: Figures) -> Part:
    n = f.expired_snapshots
    return Part("snapshots", float(n), "count",
                _penalty(SNAPSHOTS_WEIGHT,
                         ramp(n, EXPIRED_SNAPSHOTS_HEALTHY, EXPIRED_SNAPSHOTS_WORST)),
                SNAPSHOTS_WEIGHT,
                f"{n:,} of {f.snapshots:,} snapshots are kept beyond the expiry settings")


def _overdue(overdue_s: float, action: str) -> Part:
    s = max(0.0, overdue_s)
    what = (f"{action} has been due for {s / 3600:,.1f} h since it last succeeded"
            if action else "no maintenance is due")
    return Part("maintenance_overdue", s, "seconds",
                _penalty(OVERDUE_WEIGHT, ramp(s, OVERDUE_HEALTHY_S, OVERDUE_WORST_S)),
                OVERDUE_WEIGHT, what)


def score(figures: Figures, overdue_s: float = 0.0, overdue_action: str = "") -> Health:
    """The health of a table from its figures and how long its most overdue due action has
    waited since that action last succeeded (0 when nothing is due)."""
    parts = (_small(figures), _deletes(figures), _manifests(figures), _snapshots(figures),
             _overdue(overdue_s, overdue_action))
    return Health(max(0, 100 - sum(p.penalty for p in parts)), parts)


def band(health_score: int | None) -> str:
    if health_score is None:
        return UNKNOWN_BAND
    for name, low, high in BANDS:
        if low <= health_score <= high:
            return name
    return UNKNOWN_BAND
