"""THE ALGORITHM. Read this file first.

    preflight:  the call and cost estimate, and a warning for a large skill (trust/preflight.py)
    baseline:   score the initial skill on the selection split (val)
    trust:      the noise floor (A/A) and, before the first step, the headroom check, which stops
                a futile run; the power check: the smallest gain val can detect (trust/checks.py)
    for epoch in 1..num_epochs:
        for step in the epoch:  rollout -> reflect -> aggregate -> select -> update -> gate
                                -> prune (train/step.py; one file per phase; what may enter
                                the skill is screened in train/screens/; an accepted
                                candidate's new lines no fixed item needs are pruned); with
                                train.explore, the target first retries its failed train
                                items (train/explore.py) and each solved one is contrasted
                                with its failure (train/contrast.py)
        epoch boundary:         slow update (from epoch 2), meta skill  (train/boundary.py)
    finally:    the test split, initial skill vs best skill (and each check target); with
                ``train.controls`` the empty and placebo arms (trust/controls.py); summary, report

State lives in one TrainState; ``commit`` below is the one place it advances (``state.advance``)
and is checkpointed, after every step; every model call goes through the run's
content-addressed cache, so a run killed at any instant and started again replays what it
already paid for and ends exactly where it would have.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from skillgrad.models.context import call_context
from skillgrad.runs.provenance import code_summary, describe, written_by
from skillgrad.skill.document import Skill
from skillgrad.train.adherence import adherence_summary
from skillgrad.train.boundary import epoch_end, slow_update, slow_update_due
from skillgrad.train.check_targets import test_scores
from skillgrad.train.context import RunContext
from skillgrad.train.examples import example_blocks
from skillgrad.train.gate import EPS, MAX_SCORE
from skillgrad.train.prune import REASON as PRUNE_REASON
from skillgrad.train.report import render_report
from skillgrad.train.rollout import mean_item_score, mean_score
from skillgrad.train.stall import stall_warning
from skillgrad.train.state import StepOutcome, TrainState, advance
from skillgrad.train.step import training_step
from skillgrad.train.summary import build_summary, example_summary, warnings_for
from skillgrad.train.trust.checks import before_training, run_power_check
from skillgrad.train.trust.controls import control_arms
from skillgrad.train.trust.preflight import estimate, large_skill_warning
from skillgrad.train.validate import val_scores
from skillgrad.types import Edit, EditResult, to_json


async def train(ctx: RunContext, initial_skill: str) -> dict[str, Any]:
    state = ctx.run.load_state(TrainState.from_json)
    resumed = state is not None
    ctx.emit(
        "run_start",
        run_dir=str(ctx.run.root),
        resumed=resumed,
        config=ctx.cfg.redacted_json(),
        code=ctx.code.to_json(),
    )
    for message in warnings_for(ctx.cfg):
        ctx.emit("warning", message=message)
    skill_now = initial_skill if state is None else state.skill
    preflight = estimate(ctx, skill_now, ctx.prices)
    ctx.emit("preflight", **preflight)
    if (large := large_skill_warning(skill_now, preflight)) is not None:
        ctx.emit("warning", message=large)
    if state is None:
        state = commit(ctx, state, await baseline(ctx, initial_skill))
    else:
        state = resumed_code(ctx, state)
    if state.status == "stopped":  # a callback asked to stop: re-running resumes
        state = replace(state, status="running", stop_reason="")
    elif (
        state.status == "finished"
        and state.epoch < ctx.cfg.train.num_epochs
        and state.stop_reason != CEILING_REASON  # more epochs cannot beat the ceiling
    ):
        # a finished run re-run with more epochs (--set train.num_epochs=N) continues
        state = replace(
            state,
            status="running",
            stop_reason="",
            epoch=state.epoch + 1,
            step_in_epoch=0,
            epoch_start_skill=state.skill,
        )
    await before_training(ctx, state)
    ctx.emit("power_check", **run_power_check(ctx, state.initial_skill).to_json())
    while state.status == "running":
        if ctx.cfg.train.stop_at_ceiling and state.current_score >= MAX_SCORE - EPS:
            # nothing left to gain: every further candidate is rejected, patience is waste
            done = replace(state, status="finished", stop_reason=CEILING_REASON)
            state = commit(ctx, state, done)
        elif ctx.control.stop_requested:
            stop = ctx.control.stop_reason
            state = commit(ctx, state, replace(state, status="stopped", stop_reason=stop))
        elif state.step_in_epoch >= ctx.steps_per_epoch:
            if slow_update_due(ctx, state):
                state = commit(ctx, state, await slow_update(ctx, state))
            state = commit(ctx, state, await epoch_end(ctx, state))
        else:
            state = commit(ctx, state, await training_step(ctx, state))
    return await finish(ctx, state)


def resumed_code(ctx: RunContext, state: TrainState) -> TrainState:
    """A resumed run records the code resuming it when that differs from the code that last
    wrote it, and warns: results written by different code are one run only by name."""
    code = written_by(state.code, ctx.code)
    if code == state.code:
        return state
    before = describe(code_summary(state.code)) if state.code else "code it did not record"
    now = describe(code_summary((ctx.code,)))
    ctx.emit(
        "warning",
        message=f"this run resumes on {now}, not on the code that wrote it ({before}); "
        f"{ctx.run.paths.summary.name}'s `code` lists every code that wrote it",
    )
    return commit(ctx, state, replace(state, code=code))


def commit(
    ctx: RunContext, state: TrainState | None, change: StepOutcome | TrainState
) -> TrainState:
    """The one place the state advances and is checkpointed. A step's or a slow update's outcome
    goes through ``state.advance`` (accepted edits logged with provenance, ``step_end``
    emitted); any other change (the baseline, an epoch's end, a stop) is the next state itself."""
    if isinstance(change, TrainState):
        ctx.run.checkpoint(change)
        return change
    if state is None:
        raise TypeError("commit: a step's outcome needs the state it advances")
    t = ctx.cfg.train
    new = advance(state, change, patience=t.patience, buffer_size=t.rejected_buffer_size)
    record = new.history[-1]
    if record.accepted:
        ctx.run.append_patch_log(_patch_rows(state, change, new.global_step))
    ctx.run.checkpoint(new)
    ctx.emit("step_end", record=record.to_json(), skill=new.skill)  # events are JSON
    if record.stall_reason and (stalled := stall_warning(new.history)) is not None:
        ctx.emit("warning", message=stalled)
    if record.skill_tokens > 2 * max(1, ctx.count_tokens(state.skill)) + 200:
        ctx.emit("warning", message=f"skill length jumped to {record.skill_tokens} tokens")
    return new


def _patch_rows(state: TrainState, out: StepOutcome, step: int) -> list[dict[str, Any]]:
    g = out.gate
    return [
        {
            "step": step,
            "epoch": state.epoch,
            "source": r.edit.source,
            "edit": to_json(r.edit),
            "match": r.reason,
            "gate_before": g.incumbent_score if g else None,
            "gate_after": g.candidate_score if g else None,
            "skill_version": step,
        }
        for r in out.applied
        if isinstance(r, EditResult) and r.status == "applied"
    ] + [
        {
            "step": step,
            "epoch": state.epoch,
            "source": "prune",
            "edit": to_json(Edit("delete", "", "", anchor=line, rationale=PRUNE_REASON,
                                 source="prune")),
            "match": PRUNE_REASON,
            "gate_before": g.incumbent_score if g else None,
            "gate_after": g.candidate_score if g else None,
            "skill_version": step,
        }
        for line in out.pruned
    ]  # fmt: skip


async def baseline(ctx: RunContext, skill: str) -> TrainState:
    """Score the initial skill on the whole selection split: the incumbent to beat."""
    ctx.run.write_initial(skill, {s: [i.id for i in items] for s, items in ctx.items.items()})
    with call_context("baseline", 0):
        scores = await val_scores(ctx, skill, "baseline")
    score = mean_item_score(scores)
    state = TrainState(
        initial_skill=skill,
        skill=skill,
        current_score=score,
        initial_score=score,
        best_score=score,
        best_skill=skill,
        epoch_start_skill=skill,
        val_ever_passed={s.item_id: bool(s.passed) for s in scores},
        code=(ctx.code,),
    )
    ctx.emit("baseline", val_score=score, skill_tokens=ctx.count_tokens(skill))
    return state


CEILING_REASON = "reached the reward ceiling (val score = 1.0): nothing left to gain"


async def finish(ctx: RunContext, state: TrainState) -> dict[str, Any]:
    """Held-out test of the initial and the best skill, then summary.json and report.md."""
    test = ctx.items["test"]
    scores: dict[str, float] | None = None
    checks: list[dict[str, Any]] = []
    if test:  # the test split is optional (``skillgrad.fit`` without a testset)
        scores = {}
        with call_context("test", state.global_step + 1):
            for name, skill in (("initial", state.initial_skill), ("best", state.best_skill)):
                scores[name] = mean_score(await ctx.rollout(test, skill, f"test ({name})"))
        step = state.global_step + 1
        checks = await test_scores(ctx, step, state.initial_skill, state.best_skill)
        if ctx.cfg.train.controls:
            ctx.controls = await control_arms(ctx, state.initial_skill, state.best_skill, step)
    summary = write_summary(ctx, state, scores, check_tests=checks)
    ctx.emit("run_end", summary=summary)
    return summary


def write_summary(
    ctx: RunContext,
    state: TrainState,
    test_scores: dict[str, float] | None,
    status: str | None = None,
    stop_reason: str | None = None,
    check_tests: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """summary.json and report.md from the state, the ledger and the test scores (if any;
    ``check_tests``: each check target's, from ``check_targets.test_scores``)."""
    summary = build_summary(
        ctx.cfg,
        state,
        ctx.store.totals(),
        test_scores,
        tokens=(ctx.count_tokens(state.initial_skill), ctx.count_tokens(state.best_skill)),
        run_name=ctx.run.root.name,
        status=status,
        stop_reason=stop_reason,
        models=ctx.model_names,
        deterministic=ctx.deterministic,
        by_stage=ctx.store.by_stage(),
        power=run_power_check(ctx, state.initial_skill).to_json(),
        leaks=ctx.leak_index.find(state.best_skill, exempt=_exempt(state)),
        check_tests=check_tests or [],
        noise_floor=ctx.noise_floor,
        controls=ctx.controls,
        examples=example_summary(
            ctx.cfg.train.examples, state.examples, state.best_skill, ctx.count_tokens
        ),
        adherence=adherence_summary(state.adherence, state.best_skill),
    )
    ctx.run.write_summary(summary, render_report(summary, list(state.history)))
    return summary


def _exempt(state: TrainState) -> str:
    """Text the best skill may copy: the initial skill, and its worked examples (each copies its
    own train item by design; val items are refused before they get in)."""
    return "\n".join([state.initial_skill, *example_blocks(state.best_skill)])


def initial_skill_text(path: str, base_dir: str) -> str:
    """``train.init_skill``: '' for an empty skill, else a path (relative to the config)."""
    if not path:
        return ""
    from pathlib import Path

    p = Path(path)
    return Skill.load(p if p.is_absolute() else Path(base_dir) / p).text


__all__ = ["baseline", "commit", "finish", "initial_skill_text", "resumed_code", "train"]
