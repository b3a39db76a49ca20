"""Which failures are retried: one classification for the job's exceptions and the driver log
of a job that died before writing a result; and the executor's private work directories."""

from __future__ import annotations

import json
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.unit.fakes import FakeFormat, FakeStore, make_op, make_table
from tms import failures as errors
from tms.domain import JobSpec, OperationState
from tms.engines.base import EngineResult
from tms.engines.spark_submit import error_from_log, result_from_payload
from tms.engines.workdir import SPEC_FILE_NAME, WorkdirError, private_dir, write_private
from tms.executor.loop import Executor
from tms.jobs import iceberg_maintenance
from tms.jobs.table_guard import LocationRefused
from tms.spark.settings import SparkSettings


@pytest.mark.parametrize("text, kind", [
    ("java.lang.ClassNotFoundException: com.example.NoSuchCatalog", errors.MISSING_CLASS),
    ("java.lang.NoClassDefFoundError: org/apache/hadoop/fs/s3a/S3AFileSystem",
     errors.MISSING_CLASS),
    ("[CATALOG_PLUGIN_CLASS_NOT_FOUND] Cannot find catalog plugin class for catalog `c`: x.Y",
     errors.MISSING_CLASS),
    ("IllegalArgumentException: Cannot initialize Catalog implementation x.Y: Cannot find "
     "constructor for interface org.apache.iceberg.catalog.Catalog", errors.BAD_CONFIGURATION),
    ("IllegalArgumentException: Cannot initialize JDBCCatalog because warehousePath must not "
     "be null or empty", errors.BAD_CONFIGURATION),
    ("Cannot create catalog c, both type and catalog-impl are set: type=hive, catalog-impl=x",
     errors.BAD_CONFIGURATION),
    ("java.nio.file.AccessDeniedException: /lake/t/data/x.parquet", errors.PERMISSION_DENIED),
    ("java.io.FileNotFoundException: /lake/t/metadata/v2.json (Permission denied)",
     errors.PERMISSION_DENIED),
    ("software.amazon.awssdk.services.s3.model.S3Exception: Access Denied (Service: S3, Status "
     "Code: 403, Request ID: X)", errors.PERMISSION_DENIED),
    ("org.postgresql.util.PSQLException: FATAL: password authentication failed for user \"x\"",
     errors.PERMISSION_DENIED),
    ("org.apache.iceberg.exceptions.ForbiddenException: Forbidden: not allowed",
     errors.PERMISSION_DENIED),
    ("org.apache.iceberg.exceptions.NoSuchTableException: Table does not exist: ns.t",
     errors.NOT_FOUND),
])
def test_errors_another_attempt_cannot_fix(text: str, kind: str) -> None:
    got = errors.classify(text)
    assert got.kind == kind and not got.retryable
    assert got.describe(text).startswith(f"{kind} (")


@pytest.mark.parametrize("text", [
    "org.apache.iceberg.jdbc.UncheckedSQLException: Cannot initialize JDBC catalog: Connection "
    "failed",
    "java.net.ConnectException: Connection refused",
    "org.apache.iceberg.exceptions.CommitFailedException: Cannot commit: stale metadata",
    "org.apache.spark.SparkException: Job aborted due to stage failure: executor lost",
    "java.net.SocketTimeoutException: Read timed out after 403 ms",
])
def test_transient_errors_stay_retryable(text: str) -> None:
    got = errors.classify(text)
    assert got.retryable and got.describe(text) == text


def write_spec(workdir: Path, spec: dict[str, Any]) -> Path:
    """A spec file as an engine that writes one would (TMS's own pass it inline or through a
    pipe): private, never through a symlink."""
    return write_private(workdir / SPEC_FILE_NAME, json.dumps(spec).encode())


def test_only_the_fatal_part_of_a_log_is_classified() -> None:
    recovered = ("24/05/01 10:00:00 WARN Loader: optional codec missing: "
                 "java.lang.ClassNotFoundException: x.Codec\n")
    died = ("24/05/01 10:00:05 INFO Main: starting\n"
            'Exception in thread "main" org.apache.spark.SparkException: Job aborted\n'
            "Caused by: java.net.ConnectException: Connection refused\n")
    assert errors.classify_log(recovered + died).retryable
    assert not errors.classify_log(recovered + "Error: Failed to load class com.x.Main.\n"
                                   "java.lang.ClassNotFoundException: com.x.Main\n").retryable


def test_job_failures_carry_the_hint_and_refusals_are_final() -> None:
    payload = iceberg_maintenance.failure_payload(
        RuntimeError("Cannot initialize JDBCCatalog because warehousePath must not be null or "
                     "empty"))
    assert payload["retryable"] is False and payload["error_class"] == errors.BAD_CONFIGURATION
    assert payload["hint"].startswith("bad catalog configuration (check")
    refused = iceberg_maintenance.failure_payload(LocationRefused("table location: outside"))
    assert refused["retryable"] is False and refused["error_class"] == errors.LOCATION_REFUSED
    assert "hint" not in iceberg_maintenance.failure_payload(ConnectionError("blip"))


def test_a_causes_chain_is_classified() -> None:
    class JavaThrowable:
        def __init__(self, text: str, cause: Any = None) -> None:
            self.text, self.cause = text, cause

        def toString(self) -> str:  # noqa: N802 - the JVM's name
            return self.text

        def getCause(self) -> Any:  # noqa: N802
            return self.cause

        def getClass(self) -> Any:  # noqa: N802
            return type("C", (), {"getName": staticmethod(lambda: "java.lang.RuntimeException")})

    exc = Exception("wrapped")
    exc.java_exception = JavaThrowable(  # type: ignore[attr-defined]
        "java.lang.RuntimeException: Failed to load catalog",
        JavaThrowable("java.lang.ClassNotFoundException: com.example.Nope"))
    payload = iceberg_maintenance.failure_payload(exc)
    assert payload["retryable"] is False and payload["error_class"] == errors.MISSING_CLASS


def test_engine_classifies_the_log_when_no_result_was_written() -> None:
    tail = ("Error: Failed to load class com.example.NoSuchMain.\n"
            "java.lang.ClassNotFoundException: com.example.NoSuchMain\n")
    res = result_from_payload(None, tail, 101, None,
                              lambda: error_from_log(tail, 101))
    assert res.retryable is False
    assert res.error is not None and res.error.startswith("missing jar or class (check")
    assert "com.example.NoSuchMain" in res.error
    lost = result_from_payload(None, "java.net.ConnectException: Connection refused", 1, None,
                               lambda: "spark-submit exited with code 1")
    assert lost.retryable is True
    hinted = result_from_payload({"ok": False, "error_type": "E", "error": "m", "retryable": False,
                                  "hint": "permission denied (check x)"}, "", 1, None, str)
    assert hinted.error == "permission denied (check x): E: m" and hinted.retryable is False


def test_secret_looking_conf_never_goes_on_a_command_line() -> None:
    for key in ("spark.hadoop.fs.s3a.secret.key", "spark.hadoop.fs.s3a.access.key",
                "spark.sql.catalog.c.jdbc.password", "spark.sql.catalog.c.token"):
        with pytest.raises(ValueError, match="looks like a secret"):
            SparkSettings(conf={key: "x"})
    assert SparkSettings(conf={"spark.hadoop.fs.s3a.aws.credentials.provider": "P"}).conf
    env = SparkSettings().submit_env({"TMS_SECRET_PG": "pw", "PATH": "/bin"})
    assert "TMS_SECRET_PG" not in env and env["PATH"] == "/bin"


# --- private work directories ------------------------------------------------------------------

def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_private_dir_and_spec_modes(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    work = private_dir(loose / "a" / "b")  # created parents are private, existing ones kept
    assert [_mode(p) for p in (loose, loose / "a", work)] == [0o755, 0o700, 0o700]
    assert _mode(private_dir(loose)) == 0o700  # an existing directory of ours is tightened
    (work / SPEC_FILE_NAME).write_text("leftover")
    (work / SPEC_FILE_NAME).chmod(0o644)
    spec = write_spec(work, {"k": "v"})
    assert _mode(spec) == 0o600 and json.loads(spec.read_text()) == {"k": "v"}
    (tmp_path / "file").write_text("")
    with pytest.raises(WorkdirError, match="not a directory"):
        private_dir(tmp_path / "file")


def test_spec_never_follows_a_planted_symlink(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("untouched")
    work = private_dir(tmp_path / "w")
    (work / SPEC_FILE_NAME).symlink_to(target)
    write_spec(work, {"k": "v"})
    assert target.read_text() == "untouched" and not (work / SPEC_FILE_NAME).is_symlink()


class SpecLeavingEngine:
    """An engine that leaves its spec behind (a third party's, say) and fails or succeeds."""

    name = "leaky"

    def __init__(self, succeed: bool) -> None:
        self.succeed, self.seen_modes = succeed, ()

    def run(self, job: JobSpec, workdir: Path, stop: threading.Event, on_handle: Any,
            on_progress: Any = None) -> EngineResult:
        spec = write_spec(workdir, {"secret": "x"})
        self.seen_modes = (_mode(workdir.parent), _mode(workdir), _mode(spec))
        (workdir / "driver.log").write_text("log")
        return EngineResult(self.succeed, {} if self.succeed else None,
                            None if self.succeed else "boom", "log", 0 if self.succeed else 1)


@pytest.mark.parametrize("succeed", [True, False])
def test_executor_leaves_no_spec_after_an_attempt(tmp_path: Path, succeed: bool) -> None:
    root = tmp_path / "work"
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op(attempt=3)])
    engine = SpecLeavingEngine(succeed)
    Executor(store, {"fake": FakeFormat()}, engine, "e1", root).run_once()  # type: ignore[arg-type]
    assert engine.seen_modes == (0o700, 0o700, 0o600)
    assert list(root.rglob(SPEC_FILE_NAME)) == []
    (_, outcome), = store.finished
    assert outcome.state is (OperationState.SUCCEEDED if succeed else OperationState.FAILED)
    assert (root / "op-1-attempt-3" / "driver.log").exists() is not succeed


def test_a_restarted_executor_sweeps_specs_a_killed_one_left(tmp_path: Path) -> None:
    left = write_spec(private_dir(tmp_path / "work" / "op-7-attempt-1"), {"secret": "x"})
    stop = threading.Event()
    stop.set()  # run() sweeps, then returns at once
    Executor(FakeStore(), {}, SpecLeavingEngine(True), "e1",  # type: ignore[arg-type]
             tmp_path / "work").run(stop)
    assert not left.exists() and left.parent.exists()
