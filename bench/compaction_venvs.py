"""Virtualenvs of their own for the packages the compaction benchmark compares TMS with,
made under a cache directory by the benchmark itself (never in the project's venv)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.common import say

# package -> what its venv gets (zamboni reaches the benchmark's PostgreSQL catalog through
# SQLAlchemy, which needs a driver)
PACKAGES = {"iceberg-compaction": ("iceberg-compaction",),
            "iceberg-zamboni": ("iceberg-zamboni", "psycopg[binary]")}
INSTALL_TIMEOUT_S = 900.0
READY_MARK = ".tms-bench-ready"


def ensure(cache: Path, package: str) -> tuple[Path | None, str]:
    """(the venv's python, "") once the package is installed there, or (None, why not)."""
    venv = cache / package
    python = venv / "bin" / "python"
    wanted = " ".join(PACKAGES[package])
    mark = venv / READY_MARK
    if mark.is_file() and mark.read_text() == wanted and python.exists():
        return python, ""
    say(f"installing {wanted} into {venv}")
    base = getattr(sys, "_base_executable", sys.executable)
    try:
        subprocess.run([base, "-m", "venv", "--clear", str(venv)], check=True,
                       capture_output=True, timeout=INSTALL_TIMEOUT_S)
        done = subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES[package]],
                              capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"could not make its virtualenv: {e}"
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if not ln.startswith("WARNING")]
        return None, f"pip install failed (offline?): {' '.join(lines[-3:])[:300]}"
    mark.write_text(wanted)
    return python, ""
