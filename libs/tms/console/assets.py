"""The console's scripts and styles, served by the console itself (no asset from the internet
at run time: air-gapped platforms).

htmx is vendored: the minified file of the npm package ``htmx.org`` (licence 0BSD, which allows
copying it here), taken from the registry's tarball and pinned below by size and sha256. The
console refuses to start if the file on disk is not those bytes. To move to another version:
``npm pack htmx.org@<version>``, copy ``package/dist/htmx.min.js`` to ``static/vendor/`` under
its versioned name, and update the pin (``python -m tms.console.assets`` prints it).
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

STATIC_DIR = Path(__file__).parent / "static"


@dataclass(frozen=True)
class Vendored:
    path: str  # under STATIC_DIR
    source: str  # registry package and file it was taken from
    size: int
    sha256: str

    def problem(self) -> str | None:
        f = STATIC_DIR / self.path
        try:
            data = f.read_bytes()
        except OSError as e:
            return f"{f}: {e.strerror}"
        if len(data) != self.size or hashlib.sha256(data).hexdigest() != self.sha256:
            return f"{f}: not the pinned bytes of {self.source}"
        return None


HTMX = Vendored("vendor/htmx-2.0.11.min.js", "npm htmx.org@2.0.11 package/dist/htmx.min.js",
                52182, "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717")
VENDORED = (HTMX,)


def check() -> list[str]:
    return [p for p in (v.problem() for v in VENDORED) if p]


def main() -> int:
    for v in VENDORED:
        data = (STATIC_DIR / v.path).read_bytes()
        print(f"{v.path}: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}")
    problems = check()
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
