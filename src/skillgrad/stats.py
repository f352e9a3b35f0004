"""Statistics shared by the gate and the sweep: Student-t intervals, sign-flip (paired
permutation) tests and the lower confidence bound the ``paired`` gate rule uses.

Pure functions on plain floats (no numpy / scipy), each with known-answer tests
(``tests/stats/``, ``tests/sweep/test_stats.py``). Why these methods: ``docs/gate.md`` (gate)
and ``docs/sweeps.md`` (sweep).

The sign-flip distribution is computed exactly — the distribution of ``sum(+-|v_i|)`` built
item by item, equal sums merged (values rounded to 1e-9) — as long as it has at most
``_EXACT_MAX_SUMS`` distinct sums. That always holds for 0/1 and few-level partial-credit
scores at validation sizes (for 0/1 differences there are at most 2n+1 sums). Beyond it, a
seeded Monte Carlo estimate with sign patterns drawn per item position is used (deterministic
for a given input).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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

    def to_json(self) -> dict[str, Any]:
        """The record fields every paired comparison writes (``n`` as ``n_pairs``)."""
        return {
            "n_pairs": self.n,
            "mean_diff": self.mean_diff,
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "p_value": self.p_value,
            "method": self.method,
        }


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
    p = _exact_p([d for d in diffs if abs(d) > _EPS])
    method = "exact"
    if p is None:
        p, method = _monte_carlo_p(nonzero, observed, seed), "monte_carlo"
    return PairedTest(n, mean, wins, losses, n - wins - losses, p, method)


_SCALE = 1_000_000  # the exact distribution works on values rounded to 1e-6 (as integers)


def _units(value: float) -> int:
    return round(value * _SCALE)


def _sum_distribution(magnitudes: Sequence[int]) -> dict[int, int] | None:
    """Counts of each value of ``sum(+-m_i)`` (integer units) over all 2^n sign patterns;
    None when more than ``_EXACT_MAX_SUMS`` distinct sums would be needed."""
    counts: dict[int, int] = {0: 1}
    for m in magnitudes:
        nxt: dict[int, int] = {}
        for s, c in counts.items():
            nxt[s + m] = nxt.get(s + m, 0) + c
            nxt[s - m] = nxt.get(s - m, 0) + c
        if len(nxt) > _EXACT_MAX_SUMS:
            return None
        counts = nxt
    return counts


def _exact_p(diffs: Sequence[float]) -> float | None:
    """Two-sided: P(|sum of +-|d_i|| >= |sum d_i|), exactly (values rounded to 1e-6, sums
    within one unit per value counted as ties); None when the enumeration is too large."""
    units = [_units(d) for d in diffs]
    counts = _sum_distribution([abs(u) for u in units])
    if counts is None:
        return None
    bar = abs(sum(units))
    extreme = sum(c for s, c in counts.items() if abs(s) >= bar - len(units))
    return extreme / 2 ** len(units)


def _monte_carlo_p(magnitudes: Sequence[float], observed: float, seed: int) -> float:
    rng = random.Random(seed)
    hits = 0
    for _ in range(_MC_SAMPLES):
        total = math.fsum(m if rng.random() < 0.5 else -m for m in magnitudes)
        hits += abs(total) >= observed - _EPS
    return (hits + 1) / (_MC_SAMPLES + 1)  # the observed assignment counts as one sample


GATE_MC_SAMPLES = 20_000  # the gate's Monte Carlo fallback (rare; see the module docstring)


def sign_flip_p_greater(values: Sequence[float], *, seed: int = 0) -> tuple[float, str]:
    """One-sided sign-flip p-value of ``sum(values) > 0`` and the method (``exact`` or
    ``monte_carlo``): the probability, with each value's sign flipped at random (the null: each
    value is symmetric about 0), of a sum at least as large as the one observed.

    Contract: non-increasing in every ``values[i]`` (raising one value never raises the
    p-value); a value of exactly 0 is the same as leaving it out. The gate's lossless early
    rejection rests on both."""
    units = [_units(v) for v in values if _units(v) != 0]
    if not units:
        return 1.0, "exact"
    observed_units = sum(units)
    counts = _sum_distribution([abs(u) for u in units])
    if counts is not None:
        slack = len(units)  # rounding to 1e-6 moves a sum by < 1 unit per value: ties stay ties
        hits = sum(c for s, c in counts.items() if s >= observed_units - slack)
        return hits / 2 ** len(units), "exact"
    observed = math.fsum(values)
    rng = random.Random(seed)
    mags = [abs(v) for v in values]  # by position: the same patterns for the same positions
    hits = 0
    for _ in range(GATE_MC_SAMPLES):
        total = math.fsum(m if rng.random() < 0.5 else -m for m in mags)
        hits += total >= observed - _EPS
    return (hits + 1) / (GATE_MC_SAMPLES + 1), "monte_carlo"


def sign_flip_rejects(values: Sequence[float], alpha: float) -> bool:
    """True when the one-sided sign-flip test of ``mean(values) <= 0`` rejects at ``alpha``
    (the sum is positive and the p-value is at most ``alpha``)."""
    if math.fsum(values) <= _EPS:
        return False
    return sign_flip_p_greater(values)[0] <= alpha + 1e-12


def sign_flip_lower_bound(diffs: Sequence[float], confidence: float, *, tol: float = 1e-4) -> float:
    """One-sided lower confidence bound (level ``confidence``) of the mean of ``diffs`` (each in
    [-1, 1]) by inverting the sign-flip test: the smallest shift ``mu`` that the test of
    ``mean <= mu`` on ``diffs - mu`` does not reject. The rejection set is ``mu < bound``
    (the p-value is non-decreasing in ``mu``), so bisection finds it to within ``tol``.
    Returns -1.0 (the trivial bound) when even ``mu = -1`` is not rejected; empty: -1.0."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    alpha = 1.0 - confidence
    if not diffs:
        return -1.0

    def rejects(mu: float) -> bool:
        return sign_flip_rejects([d - mu for d in diffs], alpha)

    lo, hi = -1.0, max(diffs)
    if not rejects(lo):
        return -1.0
    while hi - lo > tol:
        mid = (lo + hi) / 2.0
        if rejects(mid):
            lo = mid
        else:
            hi = mid
    return lo


def sign_flip_interval(diffs: Sequence[float], confidence: float) -> tuple[float, float]:
    """(lower, upper): each end a one-sided sign-flip bound at ``confidence`` (together a
    two-sided interval at ``2 * confidence - 1``)."""
    low = sign_flip_lower_bound(diffs, confidence)
    high = -sign_flip_lower_bound([-d for d in diffs], confidence)
    return low, high


__all__ = [
    "GATE_MC_SAMPLES",
    "Interval",
    "PairedTest",
    "sign_flip_interval",
    "sign_flip_lower_bound",
    "sign_flip_p_greater",
    "sign_flip_rejects",
    "sign_flip_test",
    "t_cdf",
    "t_interval",
    "t_quantile",
]
