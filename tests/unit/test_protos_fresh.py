"""The generated gRPC code in libs/tms/v1 must match what scripts/gen-protos makes now."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    subprocess.run([str(ROOT / "scripts" / "gen-protos"), str(tmp_path)], check=True)
    generated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert generated, "gen-protos produced nothing"
    stale = [str(rel) for rel in generated
             if (ROOT / "libs" / rel).read_bytes() != (tmp_path / rel).read_bytes()]
    assert not stale, f"stale generated code, run scripts/gen-protos: {stale}"
