"""The epoch boundary: slow update (from epoch 2) then meta skill, then the next epoch begins.

``slow_update`` returns its outcome, which ``loop.commit`` advances the state with, like a
step's; ``epoch_end`` (meta skill, then the next epoch or the end) returns the next state."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from skillgrad.models.context import call_context
from skillgrad.runs.io import read_jsonl
from skillgrad.runs.records import CheckResult, GateResult
from skillgrad.skill.document import Skill
from skillgrad.train.check_targets import gate_candidate
from skillgrad.train.context import RunContext
from skillgrad.train.rollout import mean_score
from skillgrad.train.screens.leak_check import LeakCheck, check_leaks, leak_refusal
from skillgrad.train.slow import GUIDANCE_BLOCK, meta_skill_memo, slow_update_guidance
from skillgrad.train.state import StepOutcome, TrainState
from skillgrad.train.validate import attribution_json, gate_json
from skillgrad.types import Edit, EditResult


def slow_update_due(ctx: RunContext, state: TrainState) -> bool:
    """A slow update ends every epoch from the second on (when ``train.use_slow_update``)."""
    return ctx.cfg.train.use_slow_update and state.epoch >= 2


async def epoch_end(ctx: RunContext, state: TrainState) -> TrainState:
    """The meta skill (when on), then the next epoch, or the run's end after the last one."""
    t = ctx.cfg.train
    if t.use_meta_skill:
        state = await meta_skill(ctx, state)
    ctx.emit("epoch_end", epoch=state.epoch)
    if state.epoch >= t.num_epochs:
        return replace(state, status="finished", stop_reason=f"completed {t.num_epochs} epochs")
    return replace(state, epoch=state.epoch + 1, step_in_epoch=0, epoch_start_skill=state.skill)


async def slow_update(ctx: RunContext, state: TrainState) -> StepOutcome:
    """Compare last epoch's skill with the current one on the same items; gate the guidance."""
    step, epoch = state.global_step + 1, state.epoch
    ctx.emit("slow_update_start", epoch=epoch, step=step)
    with call_context("slow_update", step):
        before, after, items, counts, reply = await _compare(ctx, state, step)
    candidate = state.skill
    applied: tuple[EditResult, ...] = ()
    if reply.parsed is not None:
        guidance = reply.parsed.guidance.strip()
        written, fixes = Skill(state.skill).write_protected_block(GUIDANCE_BLOCK, guidance)
        candidate, guidance = written.text, written.protected_blocks()[GUIDANCE_BLOCK]
        ids = tuple(f"slow_update/epoch_{epoch:02d}/{i}" for i in items)
        edit = Edit(
            "add",
            "Longitudinal guidance",
            guidance,
            rationale="slow update",
            trajectory_ids=ids,
            source="slow_update",
        )
        note = "; made safe: " + "; ".join(fixes) if fixes else ""
        applied = (EditResult(edit, "applied", "protected block written" + note),)
    outcome, gate_result, leaks, refused = None, None, LeakCheck(), ""
    checks: tuple[CheckResult, ...] = ()
    if applied:  # the answer-leak check, as for a step's candidate (train/screens/leaks.py)
        leaks = check_leaks(ctx, state, candidate)
        refused = leak_refusal(ctx, step, leaks.new)
    if applied and not refused and ctx.cfg.train.slow_update_gate:
        outcome, checks = await gate_candidate(ctx, step, candidate, state.skill, "slow_update")
        gate_result = outcome.result
    elif (
        applied and not refused
    ):  # slow_update_gate: false — written without a gate, recorded as such
        gate_result = GateResult(
            True,
            state.current_score,
            state.current_score,
            0,
            len(ctx.items["val"]),
            False,
            "slow_update_gate disabled",
        )
    pairs = [
        {
            "item_id": b.item_id,
            "before": b.score.value,
            "after": a.score.value,
            "category": items[b.item_id],
        }
        for b, a in zip(before, after, strict=True)
    ]
    ctx.run.write_artifacts(
        ctx.run.paths.slow_dir(epoch),
        {
            "pairs.jsonl": pairs,
            "categories.json": {"counts": counts, "items": items},
            "guidance.json": reply.to_json(),
            "candidate.md": candidate,
            "gate.json": gate_json(outcome, refused, checks)
            if outcome or refused
            else {"result": gate_result},
            **({"attribution.json": attribution_json(outcome)} if outcome else {}),
            **({"leaks.json": leaks.to_json(refused)} if applied else {}),
        },
    )
    accepted = bool(gate_result and gate_result.accepted)
    ctx.emit("slow_update", epoch=epoch, categories=counts, accepted=accepted)
    return StepOutcome(
        kind="slow_update",
        lr=0.0,
        k=0,
        candidate=candidate,
        gate=gate_result,
        applied=applied,
        proposed=len(applied),
        merged=len(applied),
        selected=len(applied),
        train_score=mean_score(after),
        n_failures=sum(not a.score.passed for a in after),
        n_reflections=1,
        n_failed_reflections=int(reply.parsed is None),
        gate_trajectories=outcome.trajectories if outcome else (),
        usage=ctx.usage(step),
        skill_tokens=ctx.count_tokens(state.skill),
        candidate_tokens=ctx.count_tokens(candidate),
        leaks=leaks.new,
        refused=refused,
        checks=checks,
    )


async def _compare(ctx: RunContext, state: TrainState, step: int) -> tuple[Any, ...]:
    """Both skills on the same seeded train sample, categorised, and the optimizer's guidance."""
    t, train = ctx.cfg.train, list(ctx.items["train"])
    sample = random.Random(f"{t.seed}:{state.epoch}:slow").sample(
        train, min(t.slow_update_samples, len(train))
    )
    before = await ctx.rollout(sample, state.epoch_start_skill, "slow_update")
    after = await ctx.rollout(sample, state.skill, "slow_update")
    items, counts, reply = await slow_update_guidance(
        state.epoch_start_skill,
        state.skill,
        before,
        after,
        ctx.optimizer,
        max_tokens=t.optimizer_max_tokens,
        seed=step,
        show_reference=t.show_reference,
    )
    return before, after, items, counts, reply


async def meta_skill(ctx: RunContext, state: TrainState) -> TrainState:
    epoch = state.epoch
    patch_rows = read_jsonl(ctx.run.paths.patch_log)
    with call_context("meta_skill", state.global_step):
        inputs, reply = await meta_skill_memo(
            state.meta_memo,
            state.history,
            patch_rows,
            epoch,
            ctx.optimizer,
            max_tokens=ctx.cfg.train.optimizer_max_tokens,
        )
    memo = reply.parsed.memo.strip() if reply.parsed is not None else state.meta_memo
    ctx.run.write_artifacts(
        ctx.run.paths.meta_dir(epoch),
        {"inputs.json": {**inputs, "reply": reply.to_json()}, "memo.md": memo},
    )
    ctx.emit("meta_skill", epoch=epoch, memo=memo, ok=reply.parsed is not None)
    return replace(state, meta_memo=memo)


__all__ = ["epoch_end", "slow_update", "slow_update_due"]
