"""The position-delete rewrite planned per partition (``tms.formats.iceberg.deletes``): only
partitions where Iceberg's ``rewrite_position_delete_files`` merges something, restricted to
them, with the job's group minimum given explicitly."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from tests.unit.test_iceberg_partitions import (
    DAY0,
    NOW,
    SPECS,
    PartitionKey,
    PartitionStats,
    part,
    table,
)
from tms.domain import Decision
from tms.formats.iceberg import deletes as iceberg_deletes
from tms.formats.iceberg.plugin import IcebergFormat
from tms.formats.iceberg.policy import RULES
from tms.jobs import iceberg_maintenance as job
from tms.jobs import procedures

KIB = 1024


def deletes(day: int, files: int) -> tuple[PartitionKey, PartitionStats]:
    key, st = part(day, small=1, pos=files, deleted_rows=files)
    return key, replace(st, position_delete_bytes=files * 4 * KIB)


def with_deletes(*parts: tuple[PartitionKey, PartitionStats]) -> dict[str, Any]:
    m = table(*parts)
    m["position_delete_files"] = sum(st.position_delete_files for _, st in parts)
    m["delete_files"] = m["position_delete_files"]
    return m


def decide(m: dict[str, Any], **policy: str) -> Decision:
    return RULES["rewrite_position_deletes"](policy, m, None, NOW)


def test_only_the_partition_with_several_delete_files_is_planned() -> None:
    m = with_deletes(*(deletes(DAY0 + i, 1) for i in range(11)), deletes(DAY0 + 11, 6))
    d = decide(m, **{"position-deletes.max-files": "5"})
    assert d.should_run, d.reason
    assert json.loads(d.params["partitions"]) == [[0, [DAY0 + 11]]]
    assert d.params["min-input-files"] == "2"  # the job merges exactly what was planned
    assert "6 position delete files to merge in 1 of 12 partitions" in d.reason
    assert "ts_day=2026-01-12 (6 delete files)" in d.reason
    assert d.benefit is not None and d.benefit > 0
    assert d.metrics["plan"][0]["delete_files"] == 6
    assert IcebergFormat().check_params("rewrite_position_deletes", d.params) == []
    # the job takes the same parameters: restricted to that partition, two files per group
    call = job.ACTIONS["rewrite_position_deletes"](job.parse_spec({
        "action": "rewrite_position_deletes", "catalog_name": "c", "catalog_properties": {},
        "table": "ns.t", "allowed_locations": ["/wh"], "options": d.params}))
    assert call.options == {"min-input-files": "2"}
    assert [(p.spec, p.values) for p in call.partitions] == [(0, (DAY0 + 11,))]
    sql = procedures.restrict(call, SPECS).sql("c")
    assert sql.startswith("CALL `c`.system.rewrite_position_delete_files(table => '`c`.`ns`.`t`', "
                          "where => '((`ts` >= TIMESTAMP \\'2026-01-12 00:00:00+00:00\\'")
    assert sql.endswith("options => map('min-input-files', '2'))")


def test_delete_files_one_per_partition_are_no_operation() -> None:
    m = with_deletes(*(deletes(DAY0 + i, 1) for i in range(30)))
    d = decide(m)  # 30 delete files table-wide, over the default threshold of 20
    assert not d.should_run
    assert d.reason == ("30 position delete files spread over 30 partitions, 0 in partitions "
                        "where a rewrite removes some (file granularity: more delete files "
                        "than data files); rewrite starts at 20")
    assert not decide(m, **{"position-deletes.max-files": "1"}).should_run


def test_threshold_counts_mergeable_delete_files_and_takes_most_first() -> None:
    parts = [deletes(DAY0, 3), deletes(DAY0 + 1, 2), deletes(DAY0 + 2, 1)]
    assert not decide(with_deletes(*parts), **{"position-deletes.max-files": "6"}).should_run
    d = decide(with_deletes(*parts), **{"position-deletes.max-files": "5"})
    assert d.should_run
    assert json.loads(d.params["partitions"]) == [[0, [DAY0]], [0, [DAY0 + 1]]]


def test_equality_deletes_are_not_counted() -> None:
    key, st = part(DAY0, small=1, eq=8, eq_rows=8)
    d = decide(with_deletes((key, st), deletes(DAY0 + 1, 1)), **{
        "position-deletes.max-files": "1"})
    assert not d.should_run, d.reason


def test_unpartitioned_table_is_rewritten_whole_with_the_minimum() -> None:
    st = PartitionStats(data_files=3, bytes=3, records=3, position_delete_files=4)
    m = {**with_deletes(), "_partitions": [{"spec": 0, "values": [], **st.to_json()}],
         "_specs": {0: []}, "position_delete_files": 4, "delete_files": 4}
    d = decide(m, **{"position-deletes.max-files": "4"})
    assert d.should_run and d.params == {"min-input-files": "2"}


def spread(day: int, data: int, pos: int) -> tuple[PartitionKey, PartitionStats]:
    """A partition of ``data`` small data files and ``pos`` position delete files."""
    key, st = part(day, small=data, pos=pos, deleted_rows=pos)
    return key, replace(st, position_delete_bytes=pos * 2 * KIB)


def test_file_scoped_deletes_one_per_data_file_are_no_operation() -> None:
    # what the partitioned bench's stream left: a DELETE names every data file of a
    # partition once; the rewrite writes one delete file per data file again (N -> N)
    m = with_deletes(*(spread(DAY0 + i, 8, 8) for i in range(4)))
    d = decide(m, **{"position-deletes.max-files": "1"})
    assert not d.should_run, d.reason
    assert "more delete files than data files" in d.reason
    # the same files with partition granularity: each partition's 8 become one
    d = decide({**m, "delete_granularity": "partition"}, **{"position-deletes.max-files": "1"})
    assert d.should_run, d.reason
    assert d.metrics["plan"][0]["delete_files"] == 8


def test_file_scoped_deletes_merge_where_a_data_file_has_two() -> None:
    # a second DELETE of one partition names its data files again: 16 delete files for 8
    m = with_deletes(spread(DAY0, 8, 8), spread(DAY0 + 1, 8, 16), spread(DAY0 + 2, 8, 9))
    d = decide(m, **{"position-deletes.max-files": "10"})
    assert d.should_run, d.reason
    assert json.loads(d.params["partitions"]) == [[0, [DAY0 + 1]], [0, [DAY0 + 2]]]
    assert "25 position delete files to merge in 2 of 3 partitions" in d.reason
    # the threshold counts the delete files of the partitions that merge something only
    assert not decide(m, **{"position-deletes.max-files": "26"}).should_run
    # what a rewrite surely removes: with file granularity those beyond one per data file;
    # with partition granularity all but one
    key, st = spread(DAY0 + 2, 8, 9)
    assert iceberg_deletes.removed(st) == 1
    assert iceberg_deletes.removed(st, iceberg_deletes.PARTITION) == 8


def test_delete_granularity_read_strictly() -> None:
    g = iceberg_deletes.granularity
    assert g({}) == "file"  # Iceberg's default
    assert g({"write.delete.granularity": "partition"}) == "partition"
    assert g({"write.delete.granularity": " Partition "}) == "partition"
    assert g({"write.delete.granularity": "file"}) == "file"
    # a table owner's property: anything unknown reads as file (plans fewer rewrites)
    for bad in ("partitions", "partition; drop", "x" * 10_000, "", "PARTITION\x00"):
        assert g({"write.delete.granularity": bad}) == "file", bad
