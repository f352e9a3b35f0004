"""TrainState: everything a resumed run needs, advanced only by the pure functions here.

The loop computes a step's outcome; ``advance`` turns (state, outcome) into the next state —
acceptance, best skill, learning-rate decay, patience, rejected-edit buffer, history record.
``runs/`` saves it atomically after every step: that file is the resume point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from skillgrad.runs.provenance import CodeProvenance
from skillgrad.runs.records import (
    CheckResult,
    Conflict,
    GateResult,
    KeptLine,
    Leak,
    RejectedEdit,
    StepKind,
    StepRecord,
)
from skillgrad.train.examples import SELF_FOUND, example_attempt, example_item
from skillgrad.train.screens.dedup import edit_key
from skillgrad.types import Edit, EditResult, Trajectory, to_json


@dataclass(frozen=True)
class TrainState:
    initial_skill: str = ""
    skill: str = ""
    skill_version: int = 0
    global_step: int = 0
    train_step: int = 0
    epoch: int = 1
    step_in_epoch: int = 0
    current_score: float = 0.0
    initial_score: float = 0.0
    best_score: float = 0.0
    best_version: int = 0
    best_skill: str = ""
    rejections: int = 0
    since_improvement: int = 0
    rejected_buffer: tuple[RejectedEdit, ...] = ()
    meta_memo: str = ""
    epoch_start_skill: str = ""
    history: tuple[StepRecord, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    val_ever_passed: dict[str, bool] = field(default_factory=dict)
    tried: tuple[str, ...] = ()
    """``dedup.edit_key`` of every edit the gate rejected or refused (unbounded, unlike the
    buffer): revise mode and examples never propose one again."""
    examples: tuple[dict[str, Any], ...] = ()
    """Accepted worked examples: ``{"item_id", "step", "content"}``, and ``origin`` and
    ``attempt`` for a self-found one (``train/examples.py``)."""
    adherence: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per rule text: how many judged train tasks it applied to and broke, summed over steps
    (``train/adherence.py``; empty with ``train.adherence`` off)."""
    code: tuple[CodeProvenance, ...] = ()
    """The code that wrote the run: its start's first, then each different code a resume ran
    (``runs/provenance.py: written_by``); empty in a run begun before it was recorded."""
    status: str = "running"
    stop_reason: str = ""

    def to_json(self) -> dict[str, Any]:
        """``runtime_state.json``: the records as JSON objects (``StepRecord.to_json`` etc.)."""
        data: dict[str, Any] = to_json(self)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainState:
        """The state saved by ``to_json``; raises ValueError (naming the record) when damaged."""
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        parsers: dict[str, Any] = {
            "history": StepRecord.from_json,
            "rejected_buffer": RejectedEdit.from_json,
            "conflicts": Conflict.from_json,
        }
        for key, parse in parsers.items():
            rows = kwargs.get(key, ())
            if not isinstance(rows, (list, tuple)):
                raise ValueError(f"runtime state: {key!r} is not a list")
            kwargs[key] = tuple(parse(r) for r in rows)
        kwargs["tried"] = tuple(str(x) for x in kwargs.get("tried") or ())
        kwargs["examples"] = tuple(dict(x) for x in kwargs.get("examples") or ())
        found = kwargs.get("adherence") or {}
        if not isinstance(found, dict):
            raise ValueError("runtime state: 'adherence' is not an object")
        kwargs["adherence"] = {str(k): dict(v) for k, v in found.items()}
        code = kwargs.get("code") or ()
        if not isinstance(code, (list, tuple)):
            raise ValueError("runtime state: 'code' is not a list")
        kwargs["code"] = tuple(CodeProvenance.from_json(x) for x in code)
        return cls(**kwargs)


@dataclass(frozen=True)
class StepOutcome:
    """What one step (or slow update) produced, as the loop observed it."""

    kind: StepKind
    lr: float
    k: int
    candidate: str
    gate: GateResult | None
    applied: tuple[EditResult, ...]
    proposed: int = 0
    merged: int = 0
    conflicts: tuple[Conflict, ...] = ()
    selected: int = 0
    train_score: float = 0.0
    n_failures: int = 0
    n_reflections: int = 0
    n_failed_reflections: int = 0
    gate_trajectories: tuple[Trajectory, ...] = ()
    usage: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    skill_tokens: int = 0
    candidate_tokens: int = 0
    no_gate: bool = False
    leaks: tuple[Leak, ...] = ()
    """Lines of the candidate copying train/val data that the skill in force did not have."""
    refused: str = ""
    """Why the candidate was refused before the gate ran (``""``: it was not)."""
    checks: tuple[CheckResult, ...] = ()
    """The candidate on each check target (empty when the main gate refused it first)."""
    stall: str = ""
    """Why the step could not learn (``train/stall.py``; "" when an edit applied)."""
    split: RejectedEdit | None = None
    """The candidate rejected before the step's worked example was gated alone (its rules and
    the example; ``train.example_alone``): None when there was no such second gate."""
    pruned: tuple[str, ...] = ()
    """Lines of the accepted candidate removed after the gate (``train/prune.py``): no val
    item it fixed depends on them; ``candidate`` is the skill without them."""
    prune_kept: tuple[KeptLine, ...] = ()
    """New lines of the accepted candidate the prune kept, each with the target that needs it."""
    adherence: tuple[dict[str, Any], ...] = ()
    """Each rule's applications and breaks on the step's train trajectories
    (``train/adherence.py``; empty with ``train.adherence`` off)."""
    explore_attempts: int = 0
    """Exploration attempts of the step (``train.explore``)."""
    explore_found: int = 0
    """Train items of the step's batch an exploration attempt solved."""
    explore_repeats: int = 0
    """Exploration attempts that repeated an earlier failed attempt at their item exactly."""
    explore_better: int = 0
    """Failed train items no attempt solved but one scored higher than the failure
    (``Exploration.improved``)."""
    explore_resumed: int = 0
    """Exploration attempts that replayed an earlier attempt's commands first."""
    explore_redrawn: int = 0
    """Exploration replies drawn again past a command known to lose points."""
    explore_ends: dict[str, int] = field(default_factory=dict)
    """How many exploration attempts ended each way (``Exploration.ends``)."""
    explore_fell: int = 0
    """Unsolved exploration attempts that ended below a score they had reached."""


def advance(state: TrainState, out: StepOutcome, *, patience: int, buffer_size: int) -> TrainState:
    """The next state after a step: accept or reject, track best, decay, patience, history."""
    step = state.global_step + 1
    accepted = out.gate is not None and out.gate.accepted
    new_score = out.gate.candidate_score if accepted and out.gate else state.current_score
    skill = out.candidate if accepted else state.skill
    improved = accepted and new_score > state.best_score
    applied_edits = [r.edit for r in out.applied if r.status == "applied"]
    buffer = state.rejected_buffer
    current = state.current_score
    entry = rejected_entry(step, out.gate, out.applied, out.refused, out.checks, current)
    tried = state.tried
    for rejected in (out.split, entry):
        if rejected is None:
            continue
        buffer = (*buffer, rejected)[-buffer_size:] if buffer_size else ()
        tried = (*tried, *(k for e in rejected.edits if (k := edit_key(e)) not in tried))
    ever = dict(state.val_ever_passed)
    for t in out.gate_trajectories:
        ever[t.item_id] = ever.get(t.item_id, False) or t.score.passed
    record = _record(state, out, step, accepted, new_score, improved, len(applied_edits))
    since = 0 if improved else state.since_improvement + 1
    status, reason = state.status, state.stop_reason
    if out.kind == "step" and since >= patience:
        status, reason = "early_stopped", f"no improvement for {since} steps (patience {patience})"
    return replace(
        state,
        skill=skill,
        skill_version=step,
        global_step=step,
        train_step=state.train_step + (out.kind == "step"),
        step_in_epoch=state.step_in_epoch + (out.kind == "step"),
        current_score=new_score,
        best_score=new_score if improved else state.best_score,
        best_version=step if improved else state.best_version,
        best_skill=skill if improved else state.best_skill,
        rejections=state.rejections
        + ((out.gate is not None or bool(out.refused)) and not accepted and out.kind == "step"),
        since_improvement=since if out.kind == "step" else state.since_improvement,
        rejected_buffer=buffer,
        history=(*state.history, record),
        conflicts=(*state.conflicts, *out.conflicts),
        val_ever_passed=ever,
        tried=tried,
        examples=(*state.examples, *(_examples(applied_edits, step) if accepted else ())),
        adherence=accumulate(state.adherence, out.adherence),
        status=status,
        stop_reason=reason,
    )


def accumulate(
    totals: Mapping[str, Mapping[str, int]], rows: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, int]]:
    """``TrainState.adherence``: per rule text, applies and broken summed over the steps that
    judged it, and how many steps did."""
    out = {k: dict(v) for k, v in totals.items()}
    for r in rows:
        now = out.setdefault(str(r["rule"]), {"applies": 0, "broken": 0, "steps": 0})
        now["applies"] += int(r["applies"])
        now["broken"] += int(r["broken"])
        now["steps"] += 1
    return out


def _examples(edits: list[Edit], step: int) -> list[dict[str, Any]]:
    """The accepted worked examples of a step, with the train item each came from (and, for a
    self-found one, ``origin`` and the exploration ``attempt`` it shows)."""
    rows = []
    for e in edits:
        if e.source != "example" or not e.trajectory_ids:
            continue
        row = {"item_id": example_item(e), "step": step, "content": e.content}
        if attempt := example_attempt(e):
            row |= {"origin": SELF_FOUND, "attempt": attempt}
        rows.append(row)
    return rows


def rejected_entry(
    step: int,
    gate: GateResult | None,
    applied: tuple[EditResult, ...],
    refused: str,
    checks: tuple[CheckResult, ...],
    current_score: float,
) -> RejectedEdit | None:
    """The rejected-edit buffer entry of one candidate (None: it was accepted or had no edit).
    A candidate refused on a check target carries that target's scores (the loss that refused
    it); one refused before evaluation carries the reason."""
    edits = tuple(r.edit for r in applied if r.status == "applied")
    if not edits:
        return None
    if gate is not None and not gate.accepted:
        lost = next((c for c in checks if c.verdict == "refused"), None)
        if lost is not None and lost.incumbent_score is not None:
            return RejectedEdit(step, edits, lost.incumbent_score, lost.candidate_score or 0.0)
        return RejectedEdit(step, edits, gate.incumbent_score, gate.candidate_score)
    if refused:
        return RejectedEdit(step, edits, current_score, current_score, refused=refused)
    return None


def _record(
    state: TrainState,
    out: StepOutcome,
    step: int,
    accepted: bool,
    new_score: float,
    improved: bool,
    n_applied: int,
) -> StepRecord:
    g, usage = out.gate, out.usage
    return StepRecord(
        step=step,
        epoch=state.epoch,
        kind=out.kind,
        lr=round(out.lr, 6),
        k=out.k,
        train_score=round(out.train_score, 6),
        n_failures=out.n_failures,
        n_reflections=out.n_reflections,
        n_failed_reflections=out.n_failed_reflections,
        n_proposed=out.proposed,
        n_merged=out.merged,
        n_conflicts=len(out.conflicts),
        n_selected=out.selected,
        n_applied=n_applied,
        accepted=accepted,
        gate_reason=g.reason if g else (out.refused or _no_edit(out.stall)),
        incumbent_score=g.incumbent_score if g else state.current_score,
        candidate_score=g.candidate_score if g else None,
        gate_evaluated=g.evaluated if g else 0,
        gate_total=g.total if g else 0,
        early_rejected=g.early_rejected if g else False,
        val_score=new_score,
        best_score=new_score if improved else state.best_score,
        skill_version=step,
        skill_tokens=out.candidate_tokens if accepted else out.skill_tokens,
        candidate_tokens=out.candidate_tokens,
        no_gate=out.no_gate,
        calls=dict(usage.get("calls", {})),
        tokens=dict(usage.get("tokens", {})),
        cost=dict(usage.get("cost", {})),
        cum_calls=int(usage.get("cum_calls", 0)),
        cum_cost=float(usage.get("cum_cost", 0.0)),
        timings={k: round(v, 3) for k, v in out.timings.items()},
        gate_rule=g.rule if g else None,
        mean_diff=g.mean_diff if g else None,
        diff_low=g.diff_low if g else None,
        diff_high=g.diff_high if g else None,
        gate_missing=g.missing if g else 0,
        fixed=g.fixed if g else (),
        broken=g.broken if g else (),
        leaks=out.leaks,
        leak_refused=bool(out.refused),
        check_targets=out.checks,
        stall_reason=out.stall,
        example_alone=out.split is not None,
        pruned=out.pruned,
        prune_kept=out.prune_kept,
        explore_attempts=out.explore_attempts,
        explore_found=out.explore_found,
        explore_repeats=out.explore_repeats,
        explore_better=out.explore_better,
        explore_resumed=out.explore_resumed,
        explore_redrawn=out.explore_redrawn,
        explore_ends=out.explore_ends,
        explore_fell=out.explore_fell,
    )


def _no_edit(stall: str) -> str:
    return f"no edit applied: {stall or 'gate not run'}"


__all__ = ["StepOutcome", "TrainState", "accumulate", "advance", "rejected_entry"]
