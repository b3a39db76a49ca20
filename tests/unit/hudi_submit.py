"""One Hudi operation through the executor with the spark-submit engine, spark-submit replaced
by a script that would delete another tenant's file: what the attack tests of the Hudi guards
use to show that a refused table never reaches spark-submit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from tests.unit.fakes import FakeStore, make_catalog, make_op, make_table
from tests.unit.test_hudi_jobs import WRITER, fake_jar, settings
from tms.domain import OperationState, Outcome
from tms.engines.spark_submit import SparkSubmitEngine
from tms.executor.loop import Executor
from tms.formats.hudi.plugin import HudiFormat
from tms.spark import settings as spark_settings_module


def run_with_fake_submit(lake: dict[str, Path], base: Path, tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch, action: str = "clean",
                         writer: Mapping[str, str] = WRITER) -> tuple[Outcome, bool]:
    """(the outcome, whether spark-submit started) of one manually triggered ``action`` on the
    table at ``base`` in ``lake`` (its catalog allows the lake; writer configuration
    ``writer``). The fake spark-submit deletes ``lake["secret"]`` when it starts."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    started = tmp_path / "spark-submit-started"
    script = tmp_path / "spark-submit"
    script.write_text(f"#!/bin/sh\ntouch {started}\nrm -f {lake['secret']}\n")
    script.chmod(0o755)
    monkeypatch.setattr(spark_settings_module, "spark_submit_path", lambda: str(script))
    engine = SparkSubmitEngine(settings(), jvm_jar=fake_jar(
        tmp_path / "hudi-utilities-bundle_2.12-1.1.0.jar"))
    catalog = make_catalog(allowed_locations=(str(lake["lake"]),), properties={
        f"hudi.writer.{k}": v for k, v in writer.items()})
    table = make_table(format="hudi", base_path=str(base), table_name="t")
    op = make_op(action=action)
    op = replace(op, work=replace(op.work, trigger="manual"))
    store = FakeStore(tables={1: table}, to_claim=[op], catalogs={"c": catalog})
    Executor(store, {"hudi": HudiFormat()}, engine, "e1",  # type: ignore[arg-type]
             tmp_path / "work").run_once()
    (_, outcome), = store.finished
    return outcome, started.exists()


def assert_refused_before_submit(lake: dict[str, Path], base: Path, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch, action: str, words: str,
                                 secret: bytes) -> None:
    """``action`` on the table at ``base`` fails, not retried, naming ``words``, and the fake
    spark-submit (which would delete ``lake["secret"]``, holding ``secret``) never started."""
    outcome, started = run_with_fake_submit(lake, base, tmp_path, monkeypatch, action)
    assert outcome.state is OperationState.FAILED and not outcome.retryable, outcome
    assert words in (outcome.error or ""), outcome.error
    assert not started and lake["secret"].read_bytes() == secret


__all__ = ["assert_refused_before_submit", "run_with_fake_submit"]
