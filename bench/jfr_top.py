"""Top entries of a Java Flight Recorder file's samples (``jdk.ExecutionSample``: threads in
Java code; with ``--native``, ``jdk.NativeMethodSample``: threads in native methods, codecs and
idle socket waits alike):
per method, its share of the samples as the innermost frame (self) and anywhere on the stack
(inclusive), optionally only samples whose stack passes through a frame matching ``--under``.

Record a Spark JVM with ``spark.driver.extraJavaOptions=-XX:StartFlightRecording:filename=
DIR/%p.jfr`` (``TMS_SPARK_CONF``), then::

    .venv/bin/python -m bench.jfr_top DIR/1234.jfr [--top 20] [--under Executor]
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from bench.profile_top import print_tops


def frames_of(event: dict[str, Any]) -> list[str]:
    out = []
    for f in (event.get("values", {}).get("stackTrace") or {}).get("frames", []):
        m = f.get("method", {})
        out.append(f"{m.get('type', {}).get('name', '?')}.{m.get('name', '?')}")
    return out


def tops(path: Path, under: str | None, event: str = "jdk.ExecutionSample"
         ) -> tuple[int, Counter[str], Counter[str]]:
    raw = subprocess.run(["jfr", "print", "--json", "--stack-depth", "64", "--events", event,
                          str(path)], capture_output=True, check=True, text=True).stdout
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    events: list[dict[str, Any]] = json.loads(raw)["recording"]["events"]
    for sample in events:
        frames = frames_of(sample)
        if not frames or (under and not any(under in f for f in frames)):
            continue
        total += 1
        own[frames[0]] += 1
        for f in set(frames):
            inclusive[f] += 1
    return total, own, inclusive


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("recording", type=Path)
    p.add_argument("--top", type=int, default=20)
    p.add_argument("--under", help="only samples with a frame containing this text")
    p.add_argument("--native", action="store_true",
                   help="threads in native methods instead (codecs; also idle socket waits)")
    args = p.parse_args(argv)
    event = "jdk.NativeMethodSample" if args.native else "jdk.ExecutionSample"
    print_tops(*tops(args.recording, args.under, event), args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
