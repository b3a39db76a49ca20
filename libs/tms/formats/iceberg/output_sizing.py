"""Output sizing of a bin-pack rewrite: no remainder file where the inputs could be packed
without one.

Iceberg's bin-pack planner (``SizeBasedFileRewritePlanner``) decides how many files ``n`` a
group of ``I`` bytes becomes (``expected_output_files``, its rule reproduced here) and reads
the group in splits of ``I / n + 5 KiB``, packed from whole input files. A split cannot take
the file that would overflow it, so ``n`` splits hold less than ``I`` whenever the files do
not divide evenly (5 equal files, ``n`` = 2: splits of 2, 2 and 1 file), and every extra
split becomes an extra, small output file that the next compaction rewrites again. The issue
measured 3 files where 2 fit, the third 0.4 MB.

The split size is at least the target size, so a target of ``I / n`` plus the largest input
file gives every split room for one more file: first-fit then never opens more than ``n``
splits (a new one opens only when all open ones hold more than ``I / n``). With that target
Iceberg still chooses ``n`` files for the group with it (checked with its rule). With ``k``
evenly sized inputs each file but the last then holds ``floor(target / size)`` of them and the
last the rest: for 5 files and ``n`` = 2, 3 and 2 instead of 2, 2 and 1, every output at
least ``min-file-size-bytes`` (the stated fraction of the target,
``compaction.min-file-ratio``) whenever the inputs can be packed so (the unit tests check
both against a packer like Iceberg's). Per group: the caller applies it to a rewrite of one
group only.
"""

from __future__ import annotations

import math

SPLIT_OVERHEAD_BYTES = 5 * 1024  # Iceberg's SPLIT_OVERHEAD
SLACK_BYTES = 64 * 1024  # on top of the largest input file: footers, rounding
MAX_FILE_RATIO = 1.8  # Iceberg's MAX_FILE_SIZE_DEFAULT_RATIO


def max_file_bytes(target: int) -> int:
    """Iceberg's default ``max-file-size-bytes`` for ``target``."""
    return int(target * MAX_FILE_RATIO)


def expected_output_files(input_bytes: int, target: int, min_bytes: int,
                          max_bytes: int) -> int:
    """Iceberg's ``expectedOutputFiles``: round down when spreading the remainder keeps the
    files within 10 % of the target (and the write maximum), else keep a remainder file."""
    if input_bytes < target:
        return 1
    with_rest, without = math.ceil(input_bytes / target), input_bytes // target
    write_max = target + (max_bytes - target) * 0.5
    if input_bytes % target > min_bytes:
        return with_rest
    if input_bytes // without < min(1.1 * target, write_max):
        return without
    return with_rest


def even_target(input_bytes: int, largest_bytes: int, target: int, min_bytes: int
                ) -> int | None:
    """The target that makes Iceberg write the ``n`` files it would choose for
    ``input_bytes`` (the largest input ``largest_bytes``) and no remainder file, or None
    when ``target`` already does (``n`` = 1) or Iceberg would choose another count with it."""
    max_bytes = max_file_bytes(target)
    n = expected_output_files(input_bytes, target, min_bytes, max_bytes)
    if n < 2:
        return None
    even = input_bytes // n + largest_bytes + SLACK_BYTES
    if even >= max_bytes or expected_output_files(input_bytes, even, min_bytes,
                                                  max_bytes) != n:
        return None
    return even
