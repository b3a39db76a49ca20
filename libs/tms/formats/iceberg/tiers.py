"""Size-tiered merges of a partition's files, against write amplification (``plan``
plans with them). A partition fed by a trickle of tiny files would otherwise rewrite its last
merge's output again with every few new small files. Inspection counts a partition's files below
the rewrite size by power-of-two size class (``size_tiers``); a merge takes the partition's
smallest classes, as many as still add up to ``compaction.tier-fanout`` (default 8) x the mean
size of the largest class taken, and leaves the larger files alone (the job's
``min-file-size-bytes`` is lowered to that class's upper bound). So small files are merged into
a larger one without rewriting the files merged before; a file is rewritten again only when
enough of the next-smaller files have gathered to grow it fanout times, so a byte is rewritten
about log_fanout(target / written size) times at most. The fanout in force is at most
``min-small-files`` (with 2, two files of about the same size merge). Without a filled tier,
``READERS_FACTOR`` x ``min-small-files`` small files in a partition merge its smallest classes
holding ``min-small-files`` files (readers come first); a quiet table (no more data is coming)
is tidied whole. One job has one size threshold: a partition whose tiers it would cut through
waits for the next run. Statistics without size classes (stored before them) count as one class
(the largest file is then the one measured).

The earlier rule merged a partition's whole content once the other files added up to 0.8 of its
largest one, or from twice ``min-small-files`` small files: over the partitioned stream (1,000
commits, 16 partitions) it rewrote about 1.5 bytes per byte written during the stream and the
final tidy-up another 0.65 (2.16 in all in the offline replay, ``bench/table_health_sim.py``,
1.95-2.08 measured); size tiers put the replay at 1.6-1.85 (fanout 8, every pull cadence it
covers) and the real run measured 1.57. A fanout of 2-4 re-merges the outputs of small merges at
every level (2.0-3.1); above 8 gains little and leaves more files to readers.
"""

from __future__ import annotations

from dataclasses import dataclass

from tms.formats.iceberg.stats import PartitionStats

MIN_MERGE_FILES = 2
TIER_FANOUT = 8.0
READERS_FACTOR = 2  # x min-small-files: a partition merges from this many small files


@dataclass(frozen=True)
class Selection:
    """The files a merge of one partition rewrites: those below ``below`` bytes (the job's
    ``min-file-size-bytes``); any threshold up to ``room`` selects the same files."""

    files: int
    bytes: int
    largest: int  # the largest selected file (estimated: its size class's mean)
    below: int
    room: int
    tiered: bool  # the larger files of the partition are left out


def size_classes(st: PartitionStats, rewrite_bytes: int
                 ) -> list[tuple[int, int, int, int, int]]:
    """(files, bytes, largest, lower bound, upper bound) of each size class below the rewrite
    size, smallest first (sizes in [lower, upper)); one class of them all when the statistics
    carry none (or disagree)."""
    tiers = sorted(st.size_tiers.items())
    if not tiers or sum(n for _, (n, _) in tiers) != st.rewrite_files:
        return [(st.rewrite_files, st.rewrite_bytes, st.rewrite_max_bytes, 0, rewrite_bytes)]
    out = []
    for c, (n, b) in tiers:  # files of one class (within 2x) count as of its mean size
        # the mean rounded down: n files of one class fill a tier of fanout n, whatever bytes
        out.append((n, b, b // max(n, 1), (1 << c) >> 1, min(1 << c, rewrite_bytes)))
    return out


def selection(st: PartitionStats, rewrite: int, fanout: float, min_small_files: int,
              tiered: bool = True) -> Selection | None:
    """Size-tiered merging (see the module's doc): the largest set of the partition's
    smallest size classes whose bytes reach ``fanout`` x its largest file (so every file
    it rewrites grows that much at least: a byte is rewritten about log_fanout(target /
    writer file size) times at most); files of larger classes are not rewritten. Without
    such a set, ``READERS_FACTOR`` x ``min-small-files`` small files merge the smallest
    classes holding ``min-small-files`` of them (readers come first). ``tiered`` False (a
    quiet table): every file below the rewrite size (``rewrite`` bytes)."""
    classes = size_classes(st, rewrite)
    sets, n, total = [], 0, 0
    for i, (files, size, largest, _, upper) in enumerate(classes):
        n, total = n + files, total + size
        room = classes[i + 1][3] if i + 1 < len(classes) else rewrite
        sets.append(Selection(n, total, largest, upper, max(room, upper),
                              i + 1 < len(classes)))
    if not sets or sets[-1].files < MIN_MERGE_FILES:
        return None
    if not tiered:
        return sets[-1]
    valid = [s for s in sets if s.files >= MIN_MERGE_FILES and s.bytes >= fanout * s.largest]
    if valid:
        return valid[-1]
    if st.small_files >= READERS_FACTOR * min_small_files:
        return next((s for s in sets if s.files >= max(MIN_MERGE_FILES, min_small_files)),
                    sets[-1])
    return None
