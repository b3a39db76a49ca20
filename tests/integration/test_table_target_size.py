"""The table's own ``write.target-file-size-bytes`` is the compaction target unless the TMS
policy sets one (issue 34): inspected from a real Iceberg table's properties, used for the
small-file limit and handed to the job; an explicit policy wins; a value no writer takes is
ignored here (the job refuses it, naming the property)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_iceberg_actions import Env
from tests.integration.test_iceberg_partitions import decide
from tms.formats.iceberg.policy_keys import (
    TABLE_TARGET_METRIC,
    K,
    table_target,
    with_table_target,
)
from tms.local.iceberg_data import append_batches, create_table

pytestmark = pytest.mark.integration
MIB = 1024 * 1024


@pytest.fixture
def env(pg: Any, tmp_path: Path) -> Env:
    return Env(pg, tmp_path)


def small_table(env: Env, **props: str) -> Any:
    table = create_table(env.catalog, env.namespace, env.identifier.split(".")[-1])
    if props:
        with table.transaction() as tx:
            tx.set_properties(**props)
    append_batches(table, 14)
    return table.refresh()


def test_the_tables_own_target_is_taken(env: Env) -> None:
    table = small_table(env, **{"write.target-file-size-bytes": str(MIB)})
    d, m = decide(table)
    assert m[TABLE_TARGET_METRIC] == MIB
    assert m["small_file_bytes"] == 3 * MIB // 4  # Iceberg's own 3/4 of the target
    assert d.should_run, d.reason
    assert d.params["target-file-size-bytes"] == str(MIB)


def test_an_explicit_policy_wins(env: Env) -> None:
    table = small_table(env, **{"write.target-file-size-bytes": str(MIB)})
    d, m = decide(table, **{"compaction.target-file-size-bytes": str(64 * MIB)})
    assert m[TABLE_TARGET_METRIC] == MIB  # still shown as evidence
    assert d.params["target-file-size-bytes"] == str(64 * MIB)


@pytest.mark.parametrize("raw", ["abc", "-5", "1e9", " 1048576", "٣", "99999999999999999999",
                                 "512"])
def test_a_value_no_writer_takes_is_ignored(env: Env, raw: str) -> None:
    assert table_target({"write.target-file-size-bytes": raw}) is None
    pol = with_table_target({}, table_target({"write.target-file-size-bytes": raw}))
    assert K["compaction.target-file-size-bytes"].as_int(pol) == 128 * MIB


def test_without_the_property_the_default_stays(env: Env) -> None:
    d, m = decide(small_table(env))
    assert TABLE_TARGET_METRIC not in m
    assert d.params["target-file-size-bytes"] == str(128 * MIB)
