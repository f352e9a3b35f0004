"""The trust checks the loop runs around training: before the first step the noise floor
(A/A) and the headroom check; the power check from the initial skill's cached val scores; after
training the control arms (``controls.py``). Each reads the result cache where it can, so a
resumed run re-measures them for free."""

from __future__ import annotations

from skillgrad.errors import NoHeadroom
from skillgrad.train.context import RunContext
from skillgrad.train.rollout import ItemScore, cached_item_scores
from skillgrad.train.state import TrainState
from skillgrad.train.trust.headroom import NO_HEADROOM_HINT, headroom
from skillgrad.train.trust.noise import gate_margin, measure_noise
from skillgrad.train.trust.power import PowerCheck, power_check
from skillgrad.train.validate import gate_rule


async def before_training(ctx: RunContext, state: TrainState) -> None:
    """The noise floor (A/A; re-measured from the caches on a resume, for free) and, before
    the first step, the headroom check, which stops the run (exit 2) when it is futile and
    warns when the gate is coarse (``Headroom.coarse``)."""
    t = ctx.cfg.train
    initial = cached_item_scores(ctx.store, ctx.items["val"], state.initial_skill, 1)
    if t.noise_repeats >= 2:
        noise = await measure_noise(ctx, state.initial_skill, initial)
        ctx.noise_floor = {**noise.to_json(), "gate": t.noise_gate}
        ctx.noise_threshold = gate_margin(noise, ctx.cfg)
        ctx.emit("noise_floor", **ctx.noise_floor, message=noise.note)
    if state.global_step or state.status != "running":
        return
    values = [s.value for s in run_item_scores(ctx, state.initial_skill) if s.value is not None]
    if not values:  # every val item errored (scorer or infrastructure): nothing to judge by
        ctx.emit(
            "warning", message="headroom not checked: no val item has a score without an error"
        )
        return
    room = headroom(values, gate_rule(ctx), ctx.noise_threshold)
    ctx.emit("headroom", **room.to_json())
    if room.coarse:
        ctx.emit("warning", message=room.message)
    if not room.ok and t.headroom_check:
        raise NoHeadroom(f"{room.message}. {NO_HEADROOM_HINT}")


def run_item_scores(ctx: RunContext, skill: str) -> list[ItemScore]:
    """``skill``'s per-item val scores as the result cache has them (no model call)."""
    return cached_item_scores(ctx.store, ctx.items["val"], skill, ctx.cfg.train.samples_per_item)


def run_power_check(ctx: RunContext, initial_skill: str) -> PowerCheck:
    """The power check (``train/trust/power.py``) from the initial skill's per-item val scores, read
    from the result cache (written by the baseline; no model call)."""
    values = [s.value for s in run_item_scores(ctx, initial_skill) if s.value is not None]
    return power_check(values, gate_rule(ctx))


__all__ = ["before_training", "run_item_scores", "run_power_check"]
