"""Exponential backoff with equal jitter."""

from __future__ import annotations

import pytest

from tms.executor.retry import RetryPolicy


def test_ceiling_doubles_then_caps() -> None:
    p = RetryPolicy(base_delay_s=30, max_delay_s=200)
    assert [p.ceiling_s(n) for n in (1, 2, 3, 4, 5)] == [30, 60, 120, 200, 200]


def test_huge_attempt_numbers_do_not_overflow() -> None:
    assert RetryPolicy(base_delay_s=1, max_delay_s=50).ceiling_s(10_000) == 50


def test_jitter_stays_between_half_and_all_of_the_ceiling() -> None:
    p = RetryPolicy(base_delay_s=10, max_delay_s=1000)
    assert p.delay_s(3, lambda: 0.0) == 40
    assert p.delay_s(3, lambda: 0.999999) == pytest.approx(20, abs=1e-3)
    assert all(20 <= p.delay_s(3) <= 40 for _ in range(200))


def test_jitter_spreads_retries_out() -> None:
    p = RetryPolicy(base_delay_s=10, max_delay_s=1000)
    assert len({round(p.delay_s(2), 6) for _ in range(50)}) > 40


@pytest.mark.parametrize("kw", [{"base_delay_s": -1}, {"base_delay_s": 10, "max_delay_s": 5},
                                {"jitter_fraction": 1.5}])
def test_bad_policies_are_refused(kw: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**kw)
