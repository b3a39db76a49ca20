"""A catalog's default policy is in force for its tables, on the real processes (tms-api and a
tms-scheduler as subprocesses, real PostgreSQL, real pyiceberg SQL catalogs).

Three Iceberg tables hold the same data (three small files). One lives in a catalog whose
default policy lowers the compaction threshold to 2 small files and raises the attempts to 7;
one lives there too but sets its own threshold (50); one lives in a catalog without a default
policy. Only the first gets a compaction, with the catalog's attempts (as do operations
triggered by hand), and ExplainTable says where each value in force comes from."""

from __future__ import annotations

import pytest
from google.protobuf import field_mask_pb2

from tests.helpers import iceberg_catalog, stub_for, wait_for
from tms.local import iceberg_data
from tms.v1 import tms_pb2

pytestmark = pytest.mark.integration

FAST_SCHEDULER = ["--poll-interval-s", "0.2", "--shard-settle-s", "0.5"]
CATALOG_DEFAULT = {"compaction.min-small-files": "2", "execution.max-attempts": "7"}
SMALL_FILES = 3  # below the schema's default threshold (12), above the catalog's (2)
THRESHOLD_KEY = "compaction.min-small-files"
RPC_TIMEOUT_S = 30


def _compaction(r: tms_pb2.ExplainTableResponse) -> tms_pb2.ActionExplanation:
    return next(a for a in r.actions if a.action == "compaction")


def test_a_catalogs_default_policy_is_in_force(make_stack) -> None:
    stack = make_stack(scheduler_args=FAST_SCHEDULER)
    stack.start_api()
    stack.start_scheduler(0)
    stub = stub_for(stack)
    lake, _ = iceberg_catalog(stack, "lake")
    plain, _ = iceberg_catalog(stack, "plain", stack.state_dir / "plain-warehouse")
    # the operator sets the default policy through the API, after the catalog exists
    got = stub.UpdateCatalog(tms_pb2.UpdateCatalogRequest(
        catalog=tms_pb2.Catalog(name="catalogs/lake", default_policy=CATALOG_DEFAULT),
        update_mask=field_mask_pb2.FieldMask(paths=["default_policy"])),
        timeout=RPC_TIMEOUT_S)
    assert dict(got.default_policy) == CATALOG_DEFAULT

    tables = {"inherits": (lake, "lake", {}),
              "overrides": (lake, "lake", {THRESHOLD_KEY: "50"}),
              "plain": (plain, "plain", {})}
    for table_id, (cat, catalog_id, policy) in tables.items():
        iceberg_data.append_batches(iceberg_data.create_table(cat, "ns", table_id),
                                    SMALL_FILES)
        stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=tms_pb2.Table(
            format="iceberg", catalog=catalog_id, namespace="ns", table_name=table_id,
            policy=policy)), timeout=RPC_TIMEOUT_S)
        stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table=f"tables/{table_id}",
                                                      commit_id="1"), timeout=RPC_TIMEOUT_S)

    def explained(table_id: str) -> tms_pb2.ExplainTableResponse | None:
        r = stub.ExplainTable(tms_pb2.ExplainTableRequest(name=f"tables/{table_id}"),
                              timeout=RPC_TIMEOUT_S)
        return r if _compaction(r).decided else None

    explain = {t: wait_for(lambda t=t: explained(t), f"a decision for {t}") for t in tables}
    shown = {t: {p.key: (p.value, p.source) for p in r.policy} for t, r in explain.items()}

    # ExplainTable: each value in force and where it comes from
    assert shown["inherits"][THRESHOLD_KEY] == ("2", "catalog")
    assert shown["inherits"]["execution.max-attempts"] == ("7", "catalog")
    assert shown["overrides"][THRESHOLD_KEY] == ("50", "table")
    assert shown["overrides"]["execution.max-attempts"] == ("7", "catalog")
    assert shown["plain"][THRESHOLD_KEY] == ("12", "default")
    assert shown["plain"]["execution.max-attempts"] == ("3", "default")

    # the decisions: only the table under the catalog's threshold gets a compaction
    inherits = _compaction(explain["inherits"])
    assert inherits.should_run and "threshold 2 small files" in inherits.reason
    assert inherits.operation, inherits
    op = stub.GetOperation(tms_pb2.GetOperationRequest(name=inherits.operation),
                           timeout=RPC_TIMEOUT_S)
    assert op.max_attempts == 7
    for table_id, threshold in (("overrides", 50), ("plain", 12)):
        decision = _compaction(explain[table_id])
        assert not decision.should_run and not decision.operation, (table_id, decision)
        assert f"compaction starts at {threshold}" in decision.reason, decision.reason
    # an operation triggered by hand gets the attempts in force too
    for table_id, attempts in (("overrides", 7), ("plain", 3)):
        op = stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
            parent=f"tables/{table_id}", action="compaction"), timeout=RPC_TIMEOUT_S)
        assert op.max_attempts == attempts, table_id
