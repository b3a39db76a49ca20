"""Top entries of a py-spy profile in collapsed-stack form (``api_bench --py-spy FILE.txt``).

Per function (line numbers dropped): its share of the samples as the innermost frame (self)
and anywhere on the stack (inclusive). py-spy runs with ``--gil``: a sample is the thread
holding the interpreter lock, so shares are of the process's Python time.

    .venv/bin/python -m bench.profile_top prof.txt [--top 15]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

_LINE_RE = re.compile(r":\d+\)")


def tops(path: Path) -> tuple[int, Counter[str], Counter[str]]:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = [_LINE_RE.sub(")", f) for f in stack.split(";")]
        own[frames[-1]] += n
        for f in set(frames):
            inclusive[f] += n
    return total, own, inclusive


def print_tops(total: int, own: Counter[str], inclusive: Counter[str], top: int) -> None:
    """The ``top`` entries by own and by inclusive samples, as shares of ``total`` (py-spy
    and Java Flight Recorder profiles print alike)."""
    print(f"{total} samples")
    for title, counter in (("self", own), ("inclusive", inclusive)):
        print(f"{title}:")
        for name, n in counter.most_common(top):
            print(f"  {100 * n / max(total, 1):5.1f}%  {name}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("profile", type=Path)
    p.add_argument("--top", type=int, default=15)
    args = p.parse_args(argv)
    print_tops(*tops(args.profile), args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
