"""Files TMS generates from a source of truth (``sql/schema.sql`` from the migrations,
``docs/policy.md`` from the policy schema): one command-line shape for all of them, and tests
compare the committed file with a fresh generation."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path


def generator_main(prog: str, path: Path, generate: Callable[[], str],
                   argv: list[str] | None = None) -> int:
    """``python -m <prog> [--write]``: print the generated text, or rewrite ``path``."""
    parser = argparse.ArgumentParser(prog=f"python -m {prog}",
                                     description=f"Generate {path.name}.")
    parser.add_argument("--write", action="store_true",
                        help=f"rewrite {path.name} (default: print to stdout)")
    args = parser.parse_args(argv)
    text = generate()
    if args.write:
        path.write_text(text)
        print(f"wrote {path}")
    else:
        print(text, end="")
    return 0
