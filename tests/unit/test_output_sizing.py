"""Output sizing (tms.formats.iceberg.output_sizing): Iceberg's count of output files
reproduced, and the target that packs a group's splits into that many files, checked against a
first-fit packer like Iceberg's (whole files, a split takes a file only while it fits)."""

from __future__ import annotations

import random

import pytest

from tms.formats.iceberg import output_sizing as os_
from tms.formats.iceberg import plan as iceberg_plan
from tms.formats.iceberg.stats import PartitionStats

MIB = 1 << 20


def splits(sizes: list[int], target: int, min_bytes: int) -> list[int]:
    """The bytes of each read split Iceberg's bin-pack runner makes (lookback 10, first fit)."""
    total = sum(sizes)
    n = os_.expected_output_files(total, target, min_bytes, os_.max_file_bytes(target))
    size = total // n + os_.SPLIT_OVERHEAD_BYTES
    write_max = target + (os_.max_file_bytes(target) - target) // 2
    size = target if size < target else min(size, write_max)
    bins: list[int] = []
    for s in sizes:
        for i, b in enumerate(bins[-10:], start=max(0, len(bins) - 10)):
            if b + s <= size:
                bins[i] += s
                break
        else:
            bins.append(s)
    return bins


@pytest.mark.parametrize("files, size, target, at_least", [
    (5, 1 * MIB, int(2.4 * MIB), 0.75), (400, 700_000, 128 * MIB, 0.75),
    (9, 30 * MIB, 128 * MIB, 0.75), (401, 677_000, 128 * MIB, 0.75),
    (31, 5 * MIB, 64 * MIB, 0.7)])
def test_evenly_sized_inputs_leave_no_remainder(files: int, size: int, target: int,
                                                at_least: float) -> None:
    sizes, min_bytes = [size] * files, int(0.75 * target)
    before = splits(sizes, target, min_bytes)
    even = os_.even_target(sum(sizes), size, target, min_bytes)
    assert even is not None
    after = splits(sizes, even, min_bytes)
    n = os_.expected_output_files(sum(sizes), target, min_bytes, os_.max_file_bytes(target))
    assert len(after) == n and min(after) >= at_least * target, (before, after)
    assert len(before) >= len(after)  # never more files than with Iceberg's own target


def test_the_remainder_the_issue_saw_is_reproduced_and_gone() -> None:
    sizes, target = [1 * MIB] * 5, int(2.4 * MIB)
    assert splits(sizes, target, int(0.75 * target)) == [2 * MIB, 2 * MIB, 1 * MIB]
    even = os_.even_target(5 * MIB, MIB, target, int(0.75 * target))
    assert even is not None and splits(sizes, even, int(0.75 * target)) == [3 * MIB, 2 * MIB]


def test_uneven_inputs_never_need_more_splits_than_iceberg_chose() -> None:
    rng = random.Random(17)
    for _ in range(200):
        target = rng.choice([8, 64, 128]) * MIB
        sizes = [rng.randint(1, int(0.7 * target) // 8) for _ in range(rng.randint(2, 300))]
        min_bytes = int(0.75 * target)
        even = os_.even_target(sum(sizes), max(sizes), target, min_bytes)
        n = os_.expected_output_files(sum(sizes), target, min_bytes, os_.max_file_bytes(target))
        if even is not None:
            assert len(splits(sizes, even, min_bytes)) == n


def test_one_output_file_needs_nothing() -> None:
    assert os_.even_target(100 * MIB, 2 * MIB, 128 * MIB, 96 * MIB) is None
    assert os_.even_target(130 * MIB, 3 * MIB, 128 * MIB, 96 * MIB) is None


def _plan(*stats: PartitionStats) -> iceberg_plan.Plan:
    cands = tuple(iceberg_plan.Candidate(((0, (i,)) if len(stats) > 1 else (0, ())), st,
                                         True, False, st.rewrite_bytes, 1, 0)
                  for i, st in enumerate(stats))
    return iceberg_plan.Plan(cands, len(cands), len(cands), {}, len(stats) > 1)


def test_a_one_group_merge_gets_the_even_target_and_keeps_its_selection() -> None:
    lim = iceberg_plan.Limits(128 * MIB, 0.75, 0.1, 10 * 1024 * MIB)
    st = PartitionStats(data_files=400, bytes=271 * MIB, rewrite_files=400,
                        rewrite_bytes=271 * MIB, rewrite_max_bytes=900_000)
    params = iceberg_plan.rewrite_params(_plan(st), lim)
    assert int(params["target-file-size-bytes"]) == os_.even_target(
        271 * MIB, 900_000, 128 * MIB, 96 * MIB)
    # the files chosen are the same as with the plain target: both bounds in bytes
    assert params["min-file-size-bytes"] == str(96 * MIB)
    assert params["max-file-size-bytes"] == str(os_.max_file_bytes(128 * MIB))
    # several partitions are several groups of their own sizes: the plain target
    many = iceberg_plan.rewrite_params(_plan(st, st), lim)
    assert many["target-file-size-bytes"] == str(128 * MIB)
    assert "max-file-size-bytes" not in many
