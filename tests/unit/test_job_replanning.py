"""A manifest rewrite that lost a race with a concurrent commit (Iceberg's ``ValidationException:
Deleted manifest ... could not be found in the latest snapshot``) is planned again in the job,
a bounded number of times, instead of failing the operation's attempt; other errors are not."""

from __future__ import annotations

from typing import Any

import pytest

from tms import failures as errors
from tms.jobs import iceberg_maintenance as job
from tms.jobs import job_actions
from tms.jobs.table_guard import CheckedTable

STALE = ("org.apache.iceberg.exceptions.ValidationException: org.apache.iceberg.exceptions."
         "ValidationException: Deleted manifest file:/w/ns/t/metadata/fb6cac88-d030-4d2e-a544-"
         "d08cb2a0d898-m2.avro could not be found in the latest snapshot 3256822196359995976")


class Rows:
    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row

    def collect(self) -> list[Any]:
        return [self]

    def asDict(self, recursive: bool = False) -> dict[str, Any]:  # noqa: N802 (pyspark's)
        return self.row


class FakeSpark:
    """Fails the procedure call ``fail`` times with ``error``, then answers."""

    def __init__(self, fail: int, error: str = STALE) -> None:
        self.fail, self.error = fail, error
        self.calls: list[str] = []

    def sql(self, text: str) -> Any:
        self.calls.append(text)
        if text.startswith("CALL"):
            if self.fail:
                self.fail -= 1
                raise RuntimeError(self.error)
            return Rows({"rewritten_manifests_count": 9, "added_manifests_count": 1})
        return None


def spec() -> job.MaintenanceRequest:
    return job.parse_spec({"catalog_name": "c", "catalog_properties": {}, "table": "ns.t",
                           "allowed_locations": ["/wh"],
                           "action": "rewrite_manifests", "options": {}})


@pytest.fixture(autouse=True)
def no_read_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The read check of the planned snapshot needs a real table (integration tests run
    it); here only the replanning around the call is under test."""
    monkeypatch.setattr(job_actions, "guard_reads", lambda *a, **k: None)


def run(spark: FakeSpark) -> dict[str, Any]:
    return job.run_action(spark, spec(), CheckedTable(None, None))  # type: ignore[arg-type]


@pytest.mark.parametrize("text, stale", [
    (STALE, True),
    ("ValidationException: Deleted manifest s3://b/m0.avro could not be found in the latest "
     "snapshot 1", True),
    ("org.apache.iceberg.exceptions.CommitFailedException: Cannot commit", False),
    ("ValidationException: Cannot commit, found new position delete for replaced data file",
     False),
    ("Deleted manifest x could not be found in the latest snapshot 1", False),  # not Iceberg's
])
def test_stale_manifest_rewrite_is_recognised(text: str, stale: bool) -> None:
    assert errors.stale_manifests(text) is stale
    assert errors.classify(text).retryable  # a conflict: never a permanent failure


def test_stale_manifest_rewrite_is_planned_again_after_a_refresh() -> None:
    spark = FakeSpark(fail=2)
    result = run(spark)
    assert result["rewritten_manifests_count"] == 9
    assert result["replanned_after_conflict"] == 2
    calls = [c.split("(")[0] for c in spark.calls]
    assert calls == ["CALL `c`.system.rewrite_manifests", "REFRESH TABLE `c`.`ns`.`t`",
                     "CALL `c`.system.rewrite_manifests", "REFRESH TABLE `c`.`ns`.`t`",
                     "CALL `c`.system.rewrite_manifests"]


def test_no_replanning_mark_when_the_first_plan_commits() -> None:
    result = run(FakeSpark(fail=0))
    assert "replanned_after_conflict" not in result


def test_replanning_is_bounded() -> None:
    spark = FakeSpark(fail=job.STALE_PLAN_RETRIES + 1)
    with pytest.raises(RuntimeError, match="could not be found in the latest snapshot"):
        run(spark)
    assert sum(c.startswith("CALL") for c in spark.calls) == job.STALE_PLAN_RETRIES + 1
    # the job's failure stays retryable for the executor (another attempt, planned anew)
    assert job.failure_payload(RuntimeError(STALE))["retryable"] is True


def test_other_errors_are_not_planned_again() -> None:
    spark = FakeSpark(fail=1, error="CommitFailedException: Cannot commit: stale metadata")
    with pytest.raises(RuntimeError, match="CommitFailedException"):
        run(spark)
    assert len(spark.calls) == 1
