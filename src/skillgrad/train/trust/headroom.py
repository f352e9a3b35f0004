"""Headroom before spending: can this run gain anything the gate will accept?

Computed from the initial skill's val scores, the measured noise floor (``train/trust/noise.py``)
and
the power check (``train/trust/power.py``), before any optimizer call, by ``skillgrad train`` and by
``skillgrad eval --headroom``. Two ways a run is known to be futile:

- **saturated**: every item is at the reward ceiling, or the most the split can still gain (every
  item at full credit) is no more than the noise threshold;
- **undetectable**: the power check finds no achievable gain the gate accepts at this split size
  (with the noise threshold as its margin).

Either stops ``skillgrad train`` with exit 2 and says what to change, unless
``train.headroom_check`` is off (``--no-headroom-check``).

A third verdict only warns: **coarse**, when the smallest gain the gate accepts is more than
``COARSE_GAIN`` (more than half the split must rise to full credit). Measured on Map Reader and
Coin Collector with 6 val episodes: candidates that fixed one episode were refused by the paired
gate, which needs 4 of 6 however real the gain; the warning says so before the first step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from skillgrad.train.gate import EPS, MAX_SCORE, GateRule
from skillgrad.train.trust.power import items_needed, power_check

COARSE_GAIN = 0.5
"""A smallest acceptable gain above this makes the gate coarse (``Headroom.coarse``)."""
COARSE_EFFECT = 0.2
"""The effect whose needed val items a coarse verdict names."""


@dataclass(frozen=True)
class Headroom:
    """The headroom check of one split (``headroom`` event, ``summary.json``)."""

    items: int
    val_score: float
    at_ceiling: int
    at_floor: int
    noise_threshold: float
    max_gain: float
    min_gain: float | None
    min_items_flipped: int | None
    rule: str
    saturated: bool
    detectable: bool
    items_for_effect: int | None
    """Val items a true gain of ``COARSE_EFFECT`` needs before the gate can accept it."""

    @property
    def ok(self) -> bool:
        return not self.saturated and self.detectable

    @property
    def coarse(self) -> bool:
        """Whether the gate can accept only a gain larger than ``COARSE_GAIN``: a candidate
        that lifts fewer items is refused however real (not futile: a warning)."""
        return self.ok and self.min_gain is not None and self.min_gain > COARSE_GAIN + EPS

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok, "coarse": self.coarse, "message": self.message}

    @property
    def message(self) -> str:
        """One line: the numbers, then the verdict and (when futile) what to change."""
        head = (
            f"headroom: initial val score {self.val_score:.3f} on {self.items} items, "
            f"{self.at_ceiling} at the ceiling, {self.at_floor} at the floor, noise threshold "
            f"{self.noise_threshold:+.3f}; "
        )
        if self.saturated:
            return head + (
                f"the split is saturated: at most {self.max_gain:+.3f} left to gain, not above "
                "the noise threshold. Use a harder or larger val split"
            )
        if not self.detectable:
            return head + (
                f"no achievable gain can pass the {self.rule} gate on {self.items} items (even "
                f"every item at full credit, {self.max_gain:+.3f}, would be refused). "
                + self._ways_out
            )
        accepts = (
            f"the gate can accept a gain of {self.min_gain:+.3f} "
            f"({self.min_items_flipped} item(s) to full credit) or more"
        )
        if not self.coarse:
            return head + accepts
        needed = (
            f"{self.items_for_effect} val items"
            if self.items_for_effect is not None
            else "more val items than the power check counts"
        )
        ways_out = self._ways_out[0].lower() + self._ways_out[1:]
        warning = (
            f", and nothing smaller: a candidate that lifts fewer of the {self.items} items is "
            f"refused however real its gain. A gain of {COARSE_EFFECT:+.1f} needs {needed} "
            f"under this rule; {ways_out}"
        )
        return head + accepts + warning

    @property
    def _ways_out(self) -> str:
        if self.rule.startswith("paired"):  # the default rule, refusing small splits
            return (
                "Use more val items, or train.gate_rule: strict (accepts any gain of the val "
                "mean, noise included; docs/gate.md); a lower train.gate_confidence or a less "
                "noisy target may also do"
            )
        return "Use more val items, a lower train.gate_confidence, or a less noisy target"


def headroom(values: Sequence[float], rule: GateRule, noise_threshold: float) -> Headroom:
    """The headroom of a split whose items score ``values`` under the initial skill (missing
    items already left out); ``rule``: the gate's, its margin already including the noise."""
    n = len(values)
    mean = math.fsum(values) / n if n else 0.0
    ceiling = sum(1 for v in values if v >= MAX_SCORE - EPS)
    power = power_check(values, rule)
    max_gain = MAX_SCORE - mean if n else 0.0
    return Headroom(
        items=n,
        val_score=mean,
        at_ceiling=ceiling,
        at_floor=sum(1 for v in values if v <= EPS),
        noise_threshold=noise_threshold,
        max_gain=max_gain,
        min_gain=power.min_gain,
        min_items_flipped=power.min_items_flipped,
        rule=rule.describe(),
        saturated=n == 0 or ceiling == n or max_gain <= noise_threshold + EPS,
        detectable=power.min_gain is not None,
        items_for_effect=items_needed(COARSE_EFFECT, rule),
    )


NO_HEADROOM_HINT = (
    "Nothing was spent on the optimizer. To train anyway: --no-headroom-check "
    "(train.headroom_check: false); re-running resumes from the baseline."
)

__all__ = ["COARSE_GAIN", "NO_HEADROOM_HINT", "Headroom", "headroom"]
