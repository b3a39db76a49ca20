"""The fault suite's report: one record per fault, what was checked, the counts and the recovery
time against its bound, printed at the end of the session and written as JSON and Markdown.

Kept apart from the tests so a failing check still leaves its numbers behind: a record is added
when the fault's block ends, whether its checks passed, failed or the block raised.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPORT_ENV = "TMS_FAULTS_REPORT"
DEFAULT_REPORT_NAME = "faults-report.json"
ERROR_MAX_CHARS = 2000


@dataclass
class Check:
    """One invariant checked after a fault: its name, whether it held, and the evidence."""

    name: str
    passed: bool
    detail: str = ""


@dataclass
class FaultRecord:
    """Everything one fault run leaves behind for the report."""

    fault: str
    description: str
    variant: str = "short"
    checks: list[Check] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    recovery_s: float | None = None
    recovery_bound_s: float | None = None
    recovery_what: str = ""
    duration_s: float = 0.0
    error: str = ""

    @property
    def passed(self) -> bool:
        return not self.error and all(c.passed for c in self.checks)

    def check(self, name: str, passed: bool, detail: str = "") -> bool:
        """Record one check; returns whether it held so callers can go on checking."""
        self.checks.append(Check(name, bool(passed), detail))
        return bool(passed)

    def recovery(self, seconds: float, bound_s: float, what: str) -> None:
        """The time from the fault's end until the service worked again, and its bound."""
        self.recovery_s = round(seconds, 3)
        self.recovery_bound_s = bound_s
        self.recovery_what = what
        self.check(f"recovery <= {bound_s:g} s", seconds <= bound_s,
                   f"{what}: {seconds:.2f} s")

    def failures(self) -> list[str]:
        out = [f"{c.name}: {c.detail}" for c in self.checks if not c.passed]
        if self.error:
            out.append(f"error: {self.error.splitlines()[-1] if self.error else ''}")
        return out

    def assert_ok(self) -> None:
        """Fail the test with every broken invariant named (not only the first)."""
        assert self.passed, f"{self.fault}: " + "; ".join(self.failures())

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["passed"] = self.passed
        return d


@dataclass
class FaultReport:
    """The records of one session, in the order the faults ran."""

    variant: str
    records: list[FaultRecord] = field(default_factory=list)
    started: float = field(default_factory=time.time)

    @contextmanager
    def fault(self, fault: str, description: str) -> Iterator[FaultRecord]:
        """Run one fault's block; the record is kept even when the block raises."""
        rec = FaultRecord(fault, description, self.variant)
        t0 = time.monotonic()
        try:
            yield rec
        except BaseException as e:
            rec.error = "".join(traceback.format_exception_only(type(e), e))[-ERROR_MAX_CHARS:]
            raise
        finally:
            rec.duration_s = round(time.monotonic() - t0, 1)
            self.records.append(rec)

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "started_unix": round(self.started, 1),
                "passed": all(r.passed for r in self.records),
                "faults": [r.to_dict() for r in self.records]}

    def to_markdown(self) -> str:
        lines = [f"# TMS fault-injection report ({self.variant})", "",
                 "| fault | result | acks sent / found | operations / duplicates / overlapping"
                 " | recovery s (bound) | duration s |",
                 "|---|---|---:|---:|---:|---:|"]
        for r in self.records:
            c = r.counts
            acks = f"{c.get('acks_sent', '-')} / {c.get('acks_found', '-')}"
            ops = (f"{c.get('operations', '-')} / {c.get('duplicate_operations', '-')} / "
                   f"{c.get('overlapping_attempts', '-')}")
            rec = ("-" if r.recovery_s is None
                   else f"{r.recovery_s:.2f} ({r.recovery_bound_s:g})")
            lines.append(f"| {r.fault} | {'PASS' if r.passed else 'FAIL'} | {acks} | {ops} | "
                         f"{rec} | {r.duration_s:.0f} |")
        for r in self.records:
            lines += ["", f"## {r.fault}: {'PASS' if r.passed else 'FAIL'}", "", r.description,
                      ""]
            if r.recovery_s is not None:
                lines += [f"Recovery: {r.recovery_what}: **{r.recovery_s:.2f} s** "
                          f"(bound {r.recovery_bound_s:g} s).", ""]
            lines += ["| check | held | evidence |", "|---|---|---|"]
            lines += [f"| {c.name} | {'yes' if c.passed else 'NO'} | {c.detail} |"
                      for c in r.checks]
            lines += ["", "Counts: " + ", ".join(f"{k} = {v}" for k, v in r.counts.items())]
            if r.error:
                lines += ["", "```", r.error.strip(), "```"]
        return "\n".join(lines) + "\n"

    def summary_lines(self) -> list[str]:
        """A compact table for the terminal."""
        out = []
        for r in self.records:
            c = r.counts
            rec = ("-" if r.recovery_s is None
                   else f"{r.recovery_s:6.2f}s<={r.recovery_bound_s:g}s")
            out.append(
                f"{'PASS' if r.passed else 'FAIL'} {r.fault:<28} "
                f"acks {c.get('acks_sent', '-')}/{c.get('acks_found', '-')}  "
                f"ops {c.get('operations', '-')} dup {c.get('duplicate_operations', '-')} "
                f"overlap {c.get('overlapping_attempts', '-')}  recovery {rec}  "
                f"({r.duration_s:.0f}s)")
            out += [f"     ! {f}" for f in r.failures()]
        return out

    def write(self, json_path: Path) -> tuple[Path, Path]:
        """Write ``json_path`` and the Markdown beside it (same name, ``.md``)."""
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")
        md_path = json_path.with_suffix(".md")
        md_path.write_text(self.to_markdown())
        return json_path, md_path
