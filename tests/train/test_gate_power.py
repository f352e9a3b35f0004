"""Known answers for the power check: the smallest gain the gate can accept on a split, and
how many validation items an effect needs, per rule (hand-computed)."""

from __future__ import annotations

import pytest

from skillgrad.train.gate import GateRule
from skillgrad.train.trust.power import (
    _accepts_wins,
    items_needed,
    min_detectable_gain,
    power_check,
)

STRICT = GateRule("strict")
PAIRED = GateRule("paired", 0.9)


def test_strict_detects_one_item() -> None:
    baseline = [0.0] * 11 + [0.5]  # the quickstart's baseline shape: half an item of 12
    gain, flipped = min_detectable_gain(baseline, STRICT)
    assert flipped == 1 and gain == pytest.approx(1 / 12)


def test_paired_needs_four_clean_wins_at_ninety_percent() -> None:
    # p = 2^-m <= 0.1  <=>  m >= 4 (ceil(log2 10))
    gain, flipped = min_detectable_gain([0.0] * 12, PAIRED)
    assert flipped == 4 and gain == pytest.approx(4 / 12)
    gain95, flipped95 = min_detectable_gain([0.0] * 12, GateRule("paired", 0.95))
    assert flipped95 == 5 and gain95 == pytest.approx(5 / 12)  # 2^-5 <= 0.05 < 2^-4


def test_headroom_comes_from_the_baseline() -> None:
    # only three items can improve: paired at 90% can never accept
    assert min_detectable_gain([1.0] * 9 + [0.0] * 3, PAIRED) == (None, None)
    # partial credit: the largest headroom first (0.5 of item 2, then 0.25)
    gain, flipped = min_detectable_gain([1.0, 0.5, 0.75], STRICT)
    assert flipped == 1 and gain == pytest.approx(0.5 / 3)


def test_items_needed_known_answers() -> None:
    assert items_needed(0.1, STRICT) == 10  # one item of ten
    assert items_needed(0.05, STRICT) == 20
    assert items_needed(0.1, PAIRED) == 40  # four wins = 10% of 40
    assert items_needed(0.2, PAIRED) == 20
    assert items_needed(0.05, GateRule("strict", min_delta=0.05)) is None  # never above delta


def test_closed_form_matches_the_rule_itself() -> None:
    for rule in (PAIRED, GateRule("paired", 0.8, 0.1), GateRule("paired", 0.9, 0.02), STRICT):
        for m in range(0, 8):
            for k in range(0, 10):
                assert _accepts_wins(m, k, rule) == rule.accepts([1.0] * m + [0.0] * k), (m, k)


def test_power_check_record_and_line() -> None:
    pc = power_check([0.0] * 11 + [0.5], PAIRED)
    d = pc.to_json()
    assert d["n_items"] == 12 and d["min_items_flipped"] == 4
    assert d["items_needed"] == {"0.05": 80, "0.1": 40, "0.2": 20}
    assert "smallest detectable gain +0.333" in pc.line()
    assert type(pc).from_json(d) == pc


def test_a_gate_that_needs_most_of_the_split_is_coarse() -> None:
    from skillgrad.train.trust.headroom import headroom

    six = headroom([0.0] * 6, PAIRED, 0.0)  # Map Reader, Coin Collector: 4 of 6 needed
    assert six.ok and six.coarse and six.min_items_flipped == 4
    assert six.items_for_effect == 20  # four wins are a fifth of 20
    text = six.message
    assert "+0.667 (4 item(s) to full credit) or more, and nothing smaller" in text
    assert "A gain of +0.2 needs 20 val items under this rule; use more val items" in text
    twelve = headroom([0.0] * 12, PAIRED, 0.0)  # 4 of 12: +0.33, not coarse
    assert twelve.ok and not twelve.coarse and "nothing smaller" not in twelve.message
    assert not headroom([0.0] * 6, STRICT, 0.0).coarse  # one item of six: +0.17
    assert not headroom([0.0] * 3, PAIRED, 0.0).coarse  # futile, not coarse: it stops the run
