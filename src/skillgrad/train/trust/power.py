"""Power check before training: what improvement can the gate detect on this selection split?

Two numbers, both for the configured rule, confidence and ``gate_min_delta``, both in the best
case for the candidate — the improvement comes from whole items rising to full credit (the
items with the most headroom first) and no item gets worse; any loss only raises them:

- ``min_gain``: the smallest mean improvement the gate can accept on this validation split,
  given the baseline's per-item scores (``None``: not even every item at full credit would be
  accepted — the split is too small or the baseline too high);
- ``items_needed[effect]``: how many validation items a true improvement of ``effect`` (a share
  ``effect`` of the items going from fail to pass, the rest unchanged) needs before the gate can
  accept it at all (``None``: more than ``MAX_ITEMS``).

Under ``strict`` a single item is enough (``min_gain`` is one item's headroom / n), which is
exactly why ``strict`` accepts noise; under ``paired`` the exact sign-flip test at level
``1 - confidence`` needs ``ceil(log2(1 / (1 - confidence)))`` wins without a loss when
``gate_min_delta`` is 0 (4 items at the default 0.9).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from skillgrad.runs.records import POWER_MAX_ITEMS as MAX_ITEMS
from skillgrad.runs.records import PowerCheck
from skillgrad.train.gate import EPS, MAX_SCORE, GateRule

EFFECTS = (0.05, 0.1, 0.2)


def power_check(
    baseline: Sequence[float], rule: GateRule, effects: Sequence[float] = EFFECTS
) -> PowerCheck:
    """The power check for a baseline's per-item scores (missing items already left out)."""
    n = len(baseline)
    gain, flipped = min_detectable_gain(baseline, rule)
    return PowerCheck(
        rule=rule.rule,
        confidence=rule.confidence,
        min_delta=rule.min_delta,
        n_items=n,
        baseline=math.fsum(baseline) / n if n else 0.0,
        min_gain=gain,
        min_items_flipped=flipped,
        items_needed={f"{e:g}": items_needed(e, rule) for e in effects},
    )


def min_detectable_gain(
    baseline: Sequence[float], rule: GateRule
) -> tuple[float | None, int | None]:
    """(smallest acceptable mean gain, items raised to full credit) in the best case."""
    n = len(baseline)
    headroom = sorted((MAX_SCORE - b for b in baseline), reverse=True)
    for m in range(1, n + 1):
        if headroom[m - 1] <= EPS:
            break
        diffs = headroom[:m] + [0.0] * (n - m)
        if rule.accepts(diffs):
            return math.fsum(diffs) / n, m
    return None, None


def items_needed(effect: float, rule: GateRule, max_items: int = MAX_ITEMS) -> int | None:
    """Smallest n at which ``floor(effect * n)`` items going fail->pass (difference 1) and the
    other items unchanged are accepted by ``rule``; None beyond ``max_items``."""
    if not 0 < effect <= 1:
        raise ValueError(f"effect must be in (0, 1], got {effect}")
    for n in range(1, max_items + 1):
        m = math.floor(effect * n + EPS)
        if m and _accepts_wins(m, n - m, rule):
            return n
    return None


def _accepts_wins(m: int, k: int, rule: GateRule) -> bool:
    """``rule.accepts([1.0] * m + [0.0] * k)`` in closed form (so large n stays cheap)."""
    a, b = MAX_SCORE - rule.min_delta, rule.min_delta  # shifted values: m of +a, k of -b
    if m * a - k * b <= EPS:
        return False
    if rule.rule == "strict":
        return True
    # one-sided sign-flip p: P(a*X + b*Y >= a*m), X ~ Bin(m, 1/2) plus-signs among the wins,
    # Y ~ Bin(k, 1/2) plus-signs among the ties (whose shifted value is -b).
    if b <= EPS:  # ties are exactly 0 and drop out: only all wins positive reaches the sum
        return 2.0**-m <= rule.alpha + 1e-12
    tails = [0] * (k + 2)  # tails[y] = number of sign patterns of the ties with >= y plus-signs
    for y in range(k, -1, -1):
        tails[y] = tails[y + 1] + math.comb(k, y)
    hits = 0
    for x in range(m + 1):
        need_y = max(0, math.ceil(a * (m - x) / b - 1e-9))
        if need_y <= k:
            hits += math.comb(m, x) * tails[need_y]
    return hits / 2 ** (m + k) <= rule.alpha + 1e-12


__all__ = [
    "EFFECTS",
    "MAX_ITEMS",
    "PowerCheck",
    "items_needed",
    "min_detectable_gain",
    "power_check",
]
