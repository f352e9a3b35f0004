"""Statistics of a sweep: Student-t intervals over seeds and an exact paired sign-flip test.

Pure functions on plain floats (no numpy / scipy), each with known-answer tests in
``tests/sweep/test_stats.py``. Why these methods is written down in ``docs/sweeps.md``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

_EXACT_MAX_SUMS = 200_000  # distinct partial sums kept by the exact enumeration
_MC_SAMPLES = 100_000  # sign-flip samples when the exact enumeration would be too large
_EPS = 1e-9


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function (Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betai(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
    front = math.exp(ln + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    tail = 0.5 * _betai(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t (bisection on ``t_cdf``; |error| < 1e-10)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2.0


@dataclass(frozen=True)
class Interval:
    """Mean of per-seed values with a two-sided confidence interval.

    ``n == 1``: the interval is the value itself and ``single`` is True (no spread to estimate).
    ``n == 0``: every number is None."""

    n: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    single: bool = False


def t_interval(values: Sequence[float], level: float = 0.95) -> Interval:
    """Student-t interval of the mean: mean ± t_{(1+level)/2, n-1} · s / sqrt(n)."""
    n = len(values)
    if n == 0:
        return Interval(0, None, None, None)
    mean = math.fsum(values) / n
    if n == 1:
        return Interval(1, mean, mean, mean, single=True)
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    half = t_quantile((1.0 + level) / 2.0, n - 1) * math.sqrt(var / n)
    return Interval(n, mean, mean - half, mean + half)


@dataclass(frozen=True)
class PairedTest:
    """Paired comparison of two skills on the same items: differences ``b - a``.

    ``p_value`` is two-sided: the probability, with each difference's sign flipped at random
    (the null: per item, the two skills are exchangeable), of a total at least as far from 0 as
    the one observed. ``method`` is ``exact`` (full enumeration of the sign-flip distribution)
    or ``monte_carlo`` (seeded sampling when the enumeration would be too large)."""

    n: int
    mean_diff: float | None
    wins: int
    losses: int
    ties: int
    p_value: float | None
    method: str


def sign_flip_test(diffs: Sequence[float], *, seed: int = 0) -> PairedTest:
    """Exact two-sided sign-flip (paired permutation) test of the mean difference."""
    n = len(diffs)
    wins = sum(1 for d in diffs if d > _EPS)
    losses = sum(1 for d in diffs if d < -_EPS)
    if n == 0:
        return PairedTest(0, None, 0, 0, 0, None, "exact")
    mean = math.fsum(diffs) / n
    nonzero = [abs(d) for d in diffs if abs(d) > _EPS]
    observed = abs(math.fsum(diffs))
    if not nonzero:
        return PairedTest(n, mean, 0, 0, n, 1.0, "exact")
    p = _exact_p(nonzero, observed)
    method = "exact"
    if p is None:
        p, method = _monte_carlo_p(nonzero, observed, seed), "monte_carlo"
    return PairedTest(n, mean, wins, losses, n - wins - losses, p, method)


def _exact_p(magnitudes: Sequence[float], observed: float) -> float | None:
    """P(|sum of ±m_i| >= observed) by enumerating the distribution of sums (merged by value);
    None when more than ``_EXACT_MAX_SUMS`` distinct sums would be needed."""
    counts: dict[float, int] = {0.0: 1}
    for m in magnitudes:
        nxt: dict[float, int] = {}
        for s, c in counts.items():
            for v in (round(s + m, 9), round(s - m, 9)):
                nxt[v] = nxt.get(v, 0) + c
        if len(nxt) > _EXACT_MAX_SUMS:
            return None
        counts = nxt
    extreme = sum(c for s, c in counts.items() if abs(s) >= observed - _EPS)
    return extreme / 2 ** len(magnitudes)


def _monte_carlo_p(magnitudes: Sequence[float], observed: float, seed: int) -> float:
    rng = random.Random(seed)
    hits = 0
    for _ in range(_MC_SAMPLES):
        total = math.fsum(m if rng.random() < 0.5 else -m for m in magnitudes)
        hits += abs(total) >= observed - _EPS
    return (hits + 1) / (_MC_SAMPLES + 1)  # the observed assignment counts as one sample


__all__ = ["Interval", "PairedTest", "sign_flip_test", "t_cdf", "t_interval", "t_quantile"]
