"""Known answers for the gate's statistics: the one-sided sign-flip p-value, its test, the
lower confidence bound by inversion and the interval (hand-computed small cases, and the exact
distribution checked against brute-force enumeration of all 2^n sign patterns)."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from skillgrad.stats import (
    sign_flip_interval,
    sign_flip_lower_bound,
    sign_flip_p_greater,
    sign_flip_rejects,
)


def brute_p_greater(values: list[float]) -> float:
    observed = math.fsum(values)
    hits = 0
    for signs in itertools.product((1, -1), repeat=len(values)):
        total = math.fsum(s * abs(v) for s, v in zip(signs, values, strict=True))
        hits += total >= observed - 1e-9
    return hits / 2 ** len(values)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1.0], 0.5),  # one win: the all-plus pattern of one flip
        ([1.0] + [0.0] * 11, 0.5),  # one win of 12: zeros drop out
        ([1.0, 1.0, 1.0, 1.0], 1 / 16),  # four wins, no loss
        ([1.0, 1.0, 1.0], 1 / 8),
        ([1.0, 1.0, 1.0, 1.0, -1.0], 6 / 32),  # sum 3: patterns with >= 4 of 5 plus-signs
        ([0.5, 0.5, -0.5], 4 / 8),  # sum 0.5: patterns with >= 2 of 3 plus-signs
        ([0.0, 0.0], 1.0),  # no difference at all
        ([-1.0, -1.0], 1.0),
        ([1.0, 0.5], 1 / 4),  # only (+, +) reaches 1.5
        ([1.0, 0.5, 0.5], 1 / 8),  # only (+, +, +) reaches 2.0; (+, +, -) gives 1.0
    ],
)
def test_p_greater_known_answers(values: list[float], expected: float) -> None:
    p, method = sign_flip_p_greater(values)
    assert method == "exact"
    assert p == pytest.approx(expected)
    assert p == pytest.approx(brute_p_greater(values))


def test_p_greater_equals_brute_force_on_random_partial_credit() -> None:
    rng = random.Random(7)
    grid = [-1.0, -0.5, -1 / 3, 0.0, 1 / 3, 0.5, 2 / 3, 1.0]
    for _ in range(300):
        values = [rng.choice(grid) for _ in range(rng.randint(1, 10))]
        assert sign_flip_p_greater(values)[0] == pytest.approx(brute_p_greater(values))


def test_p_greater_is_monotone_in_every_value() -> None:
    """Raising one value never raises the p-value (the early rejection's premise)."""
    levels = [-1.0, -0.5, 0.0, 0.5, 1.0]
    for values in itertools.product(levels, repeat=4):
        p = sign_flip_p_greater(list(values))[0]
        for i, v in enumerate(values):
            for higher in (x for x in levels if x > v):
                raised = [*values[:i], higher, *values[i + 1 :]]
                assert sign_flip_p_greater(raised)[0] <= p + 1e-12


def test_rejects_at_alpha() -> None:
    assert sign_flip_rejects([1.0] * 4 + [0.0] * 8, 0.1)  # p = 1/16
    assert not sign_flip_rejects([1.0] * 3 + [0.0] * 9, 0.1)  # p = 1/8
    assert sign_flip_rejects([1.0] * 3 + [0.0] * 9, 0.125)  # p = alpha exactly
    assert not sign_flip_rejects([1.0] + [0.0] * 11, 0.1)  # one win of 12: p = 1/2
    assert not sign_flip_rejects([0.0] * 5, 0.5)  # a zero sum never rejects


def test_lower_bound_by_inversion() -> None:
    # 4 wins of 4: at mu just below 1 every shifted value is still positive (p = 1/16 <= 0.1)
    assert sign_flip_lower_bound([1.0] * 4, 0.9) == pytest.approx(1.0, abs=1e-4)
    # 3 wins of 3 at 90%: p = 1/8 whatever mu < 1: not even mu = -1 is rejected -> trivial
    assert sign_flip_lower_bound([1.0] * 3, 0.9) == -1.0
    # wins and ties: the bound sits where the shifted sum test stops rejecting
    diffs = [1.0] * 5 + [0.0] * 7
    low = sign_flip_lower_bound(diffs, 0.9)
    assert sign_flip_rejects([d - (low - 1e-4) for d in diffs], 0.1)
    assert not sign_flip_rejects([d - (low + 1e-4) for d in diffs], 0.1)
    assert 0.0 < low < 5 / 12


def test_bound_agrees_with_the_test_at_every_shift() -> None:
    """Acceptance (the test at delta rejects) is exactly 'the lower bound exceeds delta'."""
    rng = random.Random(3)
    for _ in range(40):
        diffs = [rng.choice([-1.0, 0.0, 0.5, 1.0]) for _ in range(rng.randint(2, 9))]
        low = sign_flip_lower_bound(diffs, 0.8)
        for delta in (-0.5, -0.2, 0.0, 0.1, 0.3):
            if abs(delta - low) < 1e-3:
                continue
            assert sign_flip_rejects([d - delta for d in diffs], 0.2) == (delta < low)


def test_interval_is_symmetric_for_mirrored_data() -> None:
    low, high = sign_flip_interval([1.0] * 5 + [0.0] * 7, 0.9)
    mlow, mhigh = sign_flip_interval([-1.0] * 5 + [0.0] * 7, 0.9)
    assert low == pytest.approx(-mhigh, abs=1e-4) and high == pytest.approx(-mlow, abs=1e-4)
    assert low < 5 / 12 < high


def test_bad_confidence_is_refused() -> None:
    with pytest.raises(ValueError, match="confidence"):
        sign_flip_lower_bound([1.0], 1.0)
