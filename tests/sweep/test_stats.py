"""Known answers for the sweep statistics (hand-computed or from standard t tables)."""

from __future__ import annotations

import itertools
import math

import pytest

from skillgrad.stats import sign_flip_test, t_cdf, t_interval, t_quantile


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.706204736), (2, 4.302652730), (4, 2.776445105), (10, 2.228138852), (30, 2.042272456)],
)
def test_t_quantile_matches_the_table(df: int, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-6)
    assert t_quantile(0.025, df) == pytest.approx(-expected, abs=1e-6)


def test_t_cdf_known_points() -> None:
    assert t_cdf(0.0, 5) == pytest.approx(0.5)
    assert t_cdf(1.0, 1) == pytest.approx(0.75)  # Cauchy: 1/2 + atan(1)/pi
    assert t_cdf(-2.0, 2) == pytest.approx(0.5 - 1 / math.sqrt(6))  # df=2 closed form


def test_t_interval_of_one_two_three() -> None:
    iv = t_interval([1.0, 2.0, 3.0])
    half = 4.302652730 / math.sqrt(3)  # s = 1, n = 3
    assert iv.n == 3 and iv.mean == pytest.approx(2.0) and not iv.single
    assert iv.ci_low == pytest.approx(2.0 - half, abs=1e-6)
    assert iv.ci_high == pytest.approx(2.0 + half, abs=1e-6)


def test_t_interval_edge_cases() -> None:
    same = t_interval([0.25, 0.25, 0.25])
    assert (same.ci_low, same.mean, same.ci_high) == pytest.approx((0.25, 0.25, 0.25))
    one = t_interval([0.5])
    assert one.single and (one.ci_low, one.mean, one.ci_high) == (0.5, 0.5, 0.5)
    none = t_interval([])
    assert none.n == 0 and none.mean is None and none.ci_low is None


@pytest.mark.parametrize(
    ("diffs", "p"),
    [
        ([1.0, 1.0, 1.0], 2 / 8),  # only all-plus and all-minus reach |sum| 3
        ([1.0] * 5, 2 / 32),
        ([1.0, 1.0, 1.0, -1.0], 10 / 16),  # |sum| >= 2: sums ±2 (4 each) and ±4 (1 each)
        ([0.5, 1.0, -0.25], 4 / 8),  # |sum| >= 1.25: 1.75, 1.25, -1.25, -1.75
        ([0.0, 0.0, 1.0, 1.0], 2 / 4),  # ties carry no sign: two informative pairs
        ([0.0, 0.0], 1.0),
    ],
)
def test_sign_flip_exact_known_answers(diffs: list[float], p: float) -> None:
    test = sign_flip_test(diffs)
    assert test.method == "exact"
    assert test.p_value == pytest.approx(p)
    assert test.mean_diff == pytest.approx(sum(diffs) / len(diffs))
    assert test.wins + test.losses + test.ties == len(diffs)


def test_sign_flip_counts() -> None:
    test = sign_flip_test([1.0, -0.5, 0.0, 0.25])
    assert (test.n, test.wins, test.losses, test.ties) == (4, 2, 1, 1)
    assert sign_flip_test([]).p_value is None


def test_sign_flip_monte_carlo_agrees_with_full_enumeration() -> None:
    """18 distinct magnitudes: 2^18 distinct sums exceed the exact limit, so it samples."""
    primes = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61]
    mags = [math.sqrt(p) / 4 for p in primes]  # no two sign patterns share a sum
    diffs = [m if i % 3 else -m for i, m in enumerate(mags)]
    observed = abs(sum(diffs))
    extreme = sum(
        abs(sum(s * m for s, m in zip(signs, mags, strict=True))) >= observed - 1e-9
        for signs in itertools.product((1, -1), repeat=len(mags))
    )
    test = sign_flip_test(diffs)
    assert test.method == "monte_carlo"
    assert test.p_value == pytest.approx(extreme / 2 ** len(mags), abs=0.01)


def test_a_sweep_interval_is_cut_to_the_range_the_metric_can_take() -> None:
    from skillgrad.sweep.summary import metric_stats

    near_one = metric_stats([0.94, 1.0, 0.97, 0.91, 1.0], "test_best")
    assert near_one["ci_high"] == 1.0 and near_one["ci_low"] < near_one["mean"]
    gain = metric_stats([0.0, 0.9, 0.95], "test_gain")
    assert gain["ci_low"] == pytest.approx(t_interval([0.0, 0.9, 0.95]).ci_low)  # not cut
    unbounded = metric_stats([1.0, 2.0, 3.0])
    assert unbounded["ci_high"] == pytest.approx(t_interval([1.0, 2.0, 3.0]).ci_high)
