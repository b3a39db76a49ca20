"""A failed job's error is its root cause; a file the table references but storage lacks is
not retried and names the file."""

from __future__ import annotations

import pytest

from tms import failures as errors
from tms.jobs.job_failure import failure_payload

PY_TASK = """org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage \
1.0 failed 1 times, most recent failure: Lost task 0.0 in stage 1.0 (TID 1) (10.0.0.1 executor \
driver): org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "/spark/python/pyspark/worker.py", line 1247, in main
    process()
  File "/tmp/arrow_task.py", line 88, in rewrite
    table = pq.read_table(path)
FileNotFoundError: [Errno 2] Failed to open local file '/lake/ns/t/data/00000-3-a.parquet'. \
Detail: [errno 2] No such file or directory

\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException
\tat org.apache.spark.scheduler.Task.run(Task.scala:141)

Driver stacktrace:
\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages"""

JAVA_TASK = """org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage \
2.0 failed 1 times, most recent failure: Lost task 0.0 in stage 2.0 (TID 4) (h executor driver)\
: org.apache.iceberg.exceptions.RuntimeIOException: Failed to open file
\tat org.apache.iceberg.parquet.ParquetReader.init
Caused by: java.io.FileNotFoundException: File file:/lake/ns/t/data/b.parquet does not exist
\tat org.apache.hadoop.fs.RawLocalFileSystem.deprecatedGetFileStatus
"""

S3A = ("java.io.FileNotFoundException: No such file or directory: "
       "s3a://bucket/wh/ns/t/data/c.parquet")
ICEBERG_IO = ("org.apache.iceberg.exceptions.NotFoundException: Failed to open input stream "
              "for file: s3://bucket/wh/ns/t/data/d.parquet")
PY_PLAIN = "FileNotFoundError: [Errno 2] No such file or directory: '/lake/ns/t/data/e.parquet'"


@pytest.mark.parametrize("text,path", [
    (PY_TASK, "/lake/ns/t/data/00000-3-a.parquet"),
    (JAVA_TASK, "file:/lake/ns/t/data/b.parquet"),
    (S3A, "s3a://bucket/wh/ns/t/data/c.parquet"),
    (ICEBERG_IO, "s3://bucket/wh/ns/t/data/d.parquet"),
    (PY_PLAIN, "/lake/ns/t/data/e.parquet"),
])
def test_missing_file_is_not_retried_and_names_the_file(text: str, path: str) -> None:
    kind = errors.classify(text)
    assert not kind.retryable
    assert kind.hint == (f"missing file (the table references a missing file: {path}; "
                         "restore it or remove it from the table)")


def test_other_not_found_texts_are_not_missing_files() -> None:
    assert errors.missing_file("NoSuchTableException: Table does not exist: ns.t") is None
    assert errors.missing_file("python3: can't open file 'x.py': [Errno 2] No such file") is None
    assert errors.classify("SparkException: Job aborted: executor lost").retryable


def test_root_cause_of_wrapped_failures() -> None:
    assert errors.root_cause(PY_TASK) == (
        "FileNotFoundError: [Errno 2] Failed to open local file "
        "'/lake/ns/t/data/00000-3-a.parquet'. Detail: [errno 2] No such file or directory")
    assert errors.root_cause(JAVA_TASK) == (
        "java.io.FileNotFoundException: File file:/lake/ns/t/data/b.parquet does not exist")
    lost = ("org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in "
            "stage 1.0 failed 1 times, most recent failure: Lost task 0.0 in stage 1.0 (TID 1) "
            "(h executor driver): java.lang.OutOfMemoryError: Java heap space\n\tat x.y")
    assert errors.root_cause(lost) == "java.lang.OutOfMemoryError: Java heap space"
    assert errors.root_cause("ValueError: plain") is None


def test_python_chain_root_first() -> None:
    text = ("Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n"
            "KeyError: 'k'\n\nThe above exception was the direct cause of the following "
            "exception:\n\nTraceback (most recent call last):\n  File \"a.py\", line 3\n"
            "RuntimeError: wrapped")
    assert errors.root_cause(text) == "KeyError: 'k'"


def test_payload_error_is_the_root_cause_wrapper_kept_aside() -> None:
    class SparkLike(Exception):
        pass

    payload = failure_payload(SparkLike(PY_TASK))
    assert payload["error_type"] == "FileNotFoundError"
    assert payload["error"].startswith("[Errno 2] Failed to open local file '/lake/ns/t/data/")
    assert payload["wrapped_in"].startswith("SparkLike: org.apache.spark.SparkException: Job "
                                            "aborted due to stage failure")
    assert payload["retryable"] is False
    assert "missing file: /lake/ns/t/data/00000-3-a.parquet" in payload["hint"]


def test_payload_of_a_python_chain() -> None:
    try:
        try:
            {}["k"]
        except KeyError as e:
            raise RuntimeError("planning failed") from e
    except RuntimeError as exc:
        payload = failure_payload(exc)
    assert (payload["error_type"], payload["error"]) == ("KeyError", "'k'")
    assert payload["wrapped_in"] == "RuntimeError: planning failed"
    assert payload["retryable"] is True


def test_payload_without_a_cause_unchanged() -> None:
    payload = failure_payload(ValueError("bad"))
    assert (payload["error_type"], payload["error"]) == ("ValueError", "bad")
    assert "wrapped_in" not in payload


def test_arrow_store_names_a_missing_file_by_its_whole_path(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os

    from tms.jobs.arrow_store import open_no_follow

    for missing in (tmp_path / "data" / "a.parquet", tmp_path / "gone" / "b.parquet"):
        (tmp_path / "data").mkdir(exist_ok=True)
        with pytest.raises(FileNotFoundError) as e:
            open_no_follow(str(missing), os.O_RDONLY)
        assert errors.missing_file(f"FileNotFoundError: {e.value}") == str(missing)
