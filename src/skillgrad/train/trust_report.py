"""The report's lines for the trust checks measured before training: the noise floor (A/A,
``train/noise.py``). Kept apart from ``train/summary.py`` so each stays small."""

from __future__ import annotations

from typing import Any


def noise_lines(noise: dict[str, Any] | None) -> list[str]:
    """The gate section's noise-floor line (absent when not measured)."""
    if not noise:
        return ["- noise floor: not measured (train.noise_repeats < 2)"]
    how = (
        "repeats answered by the call cache (deterministic target: 0 calls paid)"
        if noise["calls"] == "cached" and not noise["calls_paid"]
        else f"{noise['calls']} repeats, {noise['calls_paid']} target calls paid"
    )
    refuses = (
        "the gate refuses a mean difference at or below it"
        if noise.get("gate", True)
        else "not applied: train.noise_gate is off"
    )
    flipped = noise.get("flipped") or []
    shown = f" ({', '.join(flipped[:4])}{', …' if len(flipped) > 4 else ''})" if flipped else ""
    return [
        f"- noise floor (A/A, {noise['repeats']} passes of the initial skill on "
        f"{noise['items']} val items): flip rate {noise['flip_rate']:.1%}{shown}; noise "
        f"threshold {noise['noise_threshold']:+.3f} ({refuses}); minimum detectable effect "
        f"{noise['minimum_detectable_effect']:+.3f}; {how}"
    ]


__all__ = ["noise_lines"]
