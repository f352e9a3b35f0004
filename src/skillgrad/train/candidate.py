"""A step's candidate: one proposal from the step's trajectories (reflect -> aggregate ->
select -> update), then the leak check, the main gate (lossless early rejection included) and
the check targets (``train/check_targets.py``).

Several independent candidates per step were measured (K = 3 sampled reflections, the
best accepted one kept) and did not beat one (docs/benchmarks.md, "Several candidates per
step"), so a step has one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from skillgrad.models.context import call_context
from skillgrad.runs.records import CheckResult, Conflict, RejectedEdit
from skillgrad.skill.document import Skill
from skillgrad.skill.package import is_package_text
from skillgrad.tasks.base import task_abilities
from skillgrad.tasks.views import view_of
from skillgrad.train.aggregate import Aggregated, aggregate
from skillgrad.train.check_targets import gate_candidate
from skillgrad.train.command_forms import SOURCE as FORMS_SOURCE
from skillgrad.train.command_forms import forms_edit
from skillgrad.train.context import RunContext
from skillgrad.train.contrast import contrast
from skillgrad.train.examples import ExampleChoice, choose_example
from skillgrad.train.explore import Exploration
from skillgrad.train.gate import GateOutcome
from skillgrad.train.merge import semantic_merge
from skillgrad.train.parting import parting_edits
from skillgrad.train.reflect import ReflectConfig, ReflectResult, feedback_summary, reflect
from skillgrad.train.revise import Revision, built_revision, revise
from skillgrad.train.revisit import up_to_peak
from skillgrad.train.rules import rule_key
from skillgrad.train.screens.dedup import edit_key, screen, skill_contradictions
from skillgrad.train.screens.guard import ExampleGuard
from skillgrad.train.screens.leak_check import (
    LeakCheck,
    check_leaks,
    drop_copies,
    leak_refusal,
    rule_copies,
)
from skillgrad.train.screens.specific import (
    EpisodeObjects,
    FailedReplies,
    LineScreen,
    known_rules,
    screen_lines,
)
from skillgrad.train.select import Selection, select
from skillgrad.train.stall import Drops, stall_reason
from skillgrad.train.state import TrainState
from skillgrad.train.validate import attribution_json, gate_json
from skillgrad.types import Edit, EditResult, Trajectory


@dataclass
class Proposal:
    """What reflect -> aggregate -> select produced for one candidate."""

    reflection: ReflectResult
    aggregated: Aggregated
    selection: Selection
    leak_dropped: int = 0
    """Proposed rules dropped before selection for copying train/val data."""
    revision: Revision | None = None
    """Revise mode's call and edits, when the step entered it (``train/revise.py``)."""
    example: ExampleChoice | None = None
    """The worked example of the step, or why there is none (``train.examples: on``)."""
    copied: list[Edit] = field(default_factory=list)
    """The rules dropped for copying data or instructions (``leak_dropped`` of them)."""
    screened: list[dict[str, Any]] = field(default_factory=list)
    """Rules the line screens refused before aggregation (edit, reason;
    ``train/screens/specific.py``)."""

    def drops(self) -> Drops:
        """Where every proposed rule that did not reach the candidate went (``stall.Drops``)."""
        agg = self.aggregated
        opposed = {id(e) for c in agg.conflicts if c.reason == "opposite changes" for e in c.edits}
        left = len(self.reflection.edits) - self.leak_dropped - len(self.screened)
        return Drops(
            copied=self.copied,
            screened=self.screened,
            dropped=self.selection.dropped,
            merged=max(0, left - len(agg.edits) - len(opposed)),
            conflicted=len(opposed),
        )


@dataclass
class Candidate:
    """The candidate skill of a step and everything decided about it."""

    proposal: Proposal
    text: str
    report: list[EditResult]
    leaks: LeakCheck = field(default_factory=LeakCheck)
    refused: str = ""
    outcome: GateOutcome | None = None
    checks: tuple[CheckResult, ...] = ()
    split: Candidate | None = None
    """The candidate the gate rejected before this one: the same step's rules beside its worked
    example, when this one is the example alone (``example_alone``)."""

    @property
    def applied(self) -> bool:
        return any(r.status == "applied" for r in self.report)

    @property
    def stall(self) -> str:
        """Why the step could not learn (``train/stall.py``); "" when an edit applied."""
        p = self.proposal
        return stall_reason(p.reflection.records, len(p.reflection.edits), p.drops(), self.report)

    @property
    def not_gated(self) -> str:
        """Why a candidate without a gate outcome has none (``gate.json``'s reason)."""
        if self.applied:
            return ""
        return f"no edit applied: {self.stall or 'gate not run'}"

    def files(self, lr: float, k: int) -> dict[str, Any]:
        """The step-directory files of the candidate (``step.write_step``)."""
        p, out = self.proposal, self.outcome
        sel, agg = p.selection, p.aggregated
        files: dict[str, Any] = {
            "reflections.json": p.reflection.records,
            "aggregate.json": {
                "edits": agg.edits,
                "merges": agg.merges,
                "semantic_merge": agg.semantic,
                "conflicts": agg.conflicts,
            },
            "selection.json": {
                "lr": lr,
                "k": k,
                "selected": sel.selected,
                "dropped": sel.dropped,
                "ranking": sel.ranking,
                "repeated": sel.repeated,
                "screened": p.screened,
            },
            "candidate.md": self.text,
            "apply_report.json": self.report,
            "gate.json": gate_json(out, self.refused or self.not_gated, self.checks),
            "leaks.json": self.leaks.to_json(self.refused),
        }
        if p.revision is not None:
            r = p.revision
            files["revise.json"] = {"records": r.records, "edits": r.edits, "dropped": r.dropped}
        if p.example is not None:
            x = p.example
            files["example.json"] = {"edit": x.edit, "reason": x.reason, "refused": x.refused}
        if out is not None:
            files["attribution.json"] = attribution_json(out)
        if (first := self.split) is not None:
            files["split.json"] = {
                "why": "the rules beside the worked example were rejected: the example was gated "
                "alone (train.example_alone)",
                "candidate.md": first.text,
                "apply_report": first.report,
                "gate": gate_json(first.outcome, first.refused or first.not_gated, first.checks),
            }
        return files


def _reflect_config(ctx: RunContext, state: TrainState) -> ReflectConfig:
    """The reflection settings: the optimizer's own temperature, seeded with the step; the one
    re-ask at ``train.reask_temperature``."""
    t = ctx.cfg.train
    return ReflectConfig(
        minibatch_size=t.minibatch_size,
        max_edits=t.max_edits_per_reflection,
        failure_only=t.failure_only,
        deep_threshold=t.deep_reflect_threshold,
        workers=ctx.cfg.hardware.analyst_workers,
        max_tokens=t.optimizer_max_tokens,
        temperature=ctx.cfg.models.optimizer.temperature,
        reask_temperature=t.reask_temperature,
        copies=rule_copies(ctx, state),
        show_reference=t.show_reference,
    )


async def propose_candidate(
    ctx: RunContext,
    state: TrainState,
    step: int,
    k: int,
    trajs: list[Trajectory],
    ignored: Sequence[str] = (),
    explored: Exploration | None = None,
) -> Candidate:
    """Reflect on the step's trajectories (and, after exploration, contrast each failed item
    with its passing attempt, or its better one: ``train/contrast.py``), aggregate the edits,
    select the top ``k`` and apply them to a copy of the skill in force (update). ``ignored``:
    skill lines the target breaks most (``train/adherence.py``), for revise mode."""
    t = ctx.cfg.train
    with call_context("reflect", step):
        refl = await reflect(
            step,
            state.skill,
            trajs,
            ctx.optimizer,
            _reflect_config(ctx, state),
            meta_memo=state.meta_memo if t.use_meta_skill else "",
            rejected=state.rejected_buffer,
            progress=ctx.progress,
        )
    better = explored.improved(trajs) if explored and t.contrast_partial == "on" else []
    if explored is not None and t.contrast == "on":  # screened and gated like reflection's
        contrasted = await contrast(ctx, state, step, explored.pairs(trajs) + better)
        refl.edits += contrasted.edits
        refl.records += contrasted.records
    kept = drop_copies(ctx, state, step, refl.edits)
    shown = [*trajs, *(a.trajectory for a in (explored.attempts if explored else ()))]
    lines = screen_specific(ctx, state, step, kept, shown=shown)
    agg = aggregate(lines.kept, t.merge_similarity, step=step)
    if t.semantic_merge:
        with call_context("aggregate", step):
            agg.edits, agg.semantic = await semantic_merge(
                agg.edits, ctx.optimizer, step=step, max_tokens=t.optimizer_max_tokens
            )
    with call_context("select", step):
        sel = await select(
            agg.edits,
            k,
            max_edit_tokens=t.max_edit_tokens,
            skill=state.skill,
            optimizer=ctx.optimizer if t.rank_with_optimizer else None,
            step=step,
            count=ctx.count_tokens,
            rejected=[e for r in state.rejected_buffer for e in r.edits],
            feedback=feedback_summary(trajs, show_reference=t.show_reference),
            duplicate_similarity=t.merge_similarity,
        )
    agg.conflicts.extend(sel.conflicts)
    agg.conflicts.extend(new_contradictions(state, step))
    if (before := gated_before(state, sel.selected)) is not None:
        why = f"rejected before: step {before.step}'s candidate was these edits on this same skill"
        sel.dropped += [{"edit": e, "reason": why} for e in sel.selected]
        sel.selected = []
    revision = await _revise(ctx, state, step, k, sel, trajs, ignored)
    example = _example(ctx, state, step, trajs, explored)
    if example is not None and example.edit is not None:
        sel.selected.append(example.edit)
    advanced = [up_to_peak(best.trajectory) for _, best in better]
    if (forms := _command_forms(ctx, state, step, shown, advanced)) is not None:
        sel.selected.append(forms)
    sel.selected += _parting(ctx, state, step, shown, trajs, explored)
    skill, report = Skill(state.skill).apply(sel.selected)
    copied = [e for e in refl.edits if not any(e is k for k in kept)]
    proposal = Proposal(refl, agg, sel, len(copied), revision, example, copied, lines.dropped)
    return Candidate(proposal, skill.text, report)


def screen_specific(
    ctx: RunContext,
    state: TrainState,
    step: int,
    edits: list[Edit],
    rewrite: bool = True,
    shown: Sequence[Trajectory] = (),
) -> LineScreen:
    """``edits`` through the line screen (``train/screens/specific.py``): a rule addressed to the
    grader or naming what one train item holds is refused (a warning names it), a reply form
    holding one item's answer is shown with a placeholder (``rewrite``) or refused; all pass
    with ``train.line_screens`` off. ``shown``: the step's trajectories (exploration's
    included), whose episodes name the objects one episode holds (``EpisodeObjects``)."""
    if not ctx.cfg.train.line_screens:
        return LineScreen(list(edits), [], [])
    vocabularies = [view_of(t).vocabulary(t) for t in shown]
    objects = EpisodeObjects.build(vocabularies)
    failed = FailedReplies.build(shown, vocabularies)
    known = known_rules(state.skill, state.initial_skill)
    out = screen_lines(
        edits, ctx.item_words, known, rewrite=rewrite, objects=objects, failed=failed
    )
    if out.dropped:
        said = "; ".join(f"{d['edit'].content.strip()[:80]!r}: {d['reason']}" for d in out.dropped)
        ctx.emit("warning", message=f"step {step}: refused before selection: {said}")
    for r in out.rewritten:
        was, now = r["was"].strip()[:80], r["edit"].content.strip()[:80]
        ctx.emit("warning", message=f"step {step}: {was!r} -> {now!r}: reply form shown with "
                 "a placeholder (it was one train item's answer)")  # fmt: skip
    return out


def gated_before(state: TrainState, selected: list[Edit]) -> RejectedEdit | None:
    """The rejected candidate (``TrainState.rejected_buffer``) that ``selected`` would rebuild:
    the same edits, on the skill in force then and now (no step accepted since). Its outcome
    is known, so it is not gated again and the step's slot goes to revise mode or an example.
    Measured on BFCL relevance: the 1.5B, re-asked, proposed the two rules the gate had just
    rejected, and the next step rebuilt the same candidate."""
    keys = {edit_key(e) for e in selected}
    if not keys:
        return None
    for r in reversed(state.rejected_buffer):
        if any(h.accepted for h in state.history if h.step > r.step):
            continue  # the skill changed since: the same edits are a new candidate
        if {edit_key(e) for e in r.edits} == keys:
            return r
    return None


def new_contradictions(state: TrainState, step: int) -> list[Conflict]:
    """Contradictions inside the skill in force (``dedup.skill_contradictions``) not yet sent to
    review: recorded once, in ``conflicts.json``; revise mode is shown them until resolved."""
    seen = {tuple(e.content for e in c.edits) for c in state.conflicts}
    return [
        Conflict(step, (Edit("add", "", a, source="skill"), Edit("add", "", b, source="skill")),
                 "contradiction in the skill")
        for a, b in skill_contradictions(state.skill)
        if (a, b) not in seen
    ]  # fmt: skip


async def _revise(
    ctx: RunContext,
    state: TrainState,
    step: int,
    k: int,
    sel: Selection,
    trajs: list[Trajectory],
    ignored: Sequence[str] = (),
) -> Revision | None:
    """Revise mode (``train/revise.py``) when this step's rules repeated skill lines, the target
    breaks a rule most of the times it applies (``ignored``, ``train.adherence``) or the skill
    contradicts itself, and fewer than ``k`` edits were selected: the usable revisions (checked
    against the skill like any edit), else one built from the expected form, join the selection."""
    t = ctx.cfg.train
    rules = list(dict.fromkeys([*sel.repeated, *ignored]))
    if not t.revise or len(sel.selected) >= k or not (rules or skill_contradictions(state.skill)):
        return None
    failures = [x for x in trajs if not x.score.passed and x.infra_error is None]
    if not failures:
        return None
    with call_context("revise", step):
        revision = await revise(
            step, state.skill, rules, failures, ctx.optimizer,
            rejected=state.rejected_buffer, tried=state.tried,
            max_edits=max(1, k - len(sel.selected)), max_tokens=t.optimizer_max_tokens,
            temperature=ctx.cfg.models.optimizer.temperature, show_reference=t.show_reference,
        )  # fmt: skip
    screened = screen(revision.edits, state.skill, step=step, threshold=t.merge_similarity)
    revision.edits, revision.dropped = screened.kept, revision.dropped + screened.dropped
    lines = screen_specific(ctx, state, step, revision.edits, shown=trajs)
    revision.edits, revision.dropped = lines.kept, revision.dropped + lines.dropped
    if not revision.edits and rules and t.show_reference:  # built from a reference
        items = {i.id: i for i in ctx.items["train"]}
        built = built_revision(step, _most_pressing(rules, sel.repeated, revision), failures,
                               items, ctx.task, state.tried)  # fmt: skip
        built_lines = screen_specific(ctx, state, step, [built] if built else [], rewrite=False,
                                      shown=trajs)  # fmt: skip
        revision.edits, revision.dropped = built_lines.kept, revision.dropped + built_lines.dropped
    sel.selected += revision.edits[: max(0, k - len(sel.selected))]
    return revision


def _most_pressing(rules: list[str], repeated: list[str], revision: Revision) -> list[str]:
    """The rules to build a revision for, most pressing first: those the optimizer named and
    returned unchanged (it points at the rule the failures are about), then the rules repeated
    most often this step."""
    named = {rule_key(d["edit"].anchor) for d in revision.dropped if "unchanged" in d["reason"]}
    counts = Counter(rule_key(r) for r in repeated)
    return sorted(rules, key=lambda r: (rule_key(r) not in named, -counts[rule_key(r)]))


def _example(
    ctx: RunContext,
    state: TrainState,
    step: int,
    trajs: list[Trajectory],
    explored: Exploration | None = None,
) -> ExampleChoice | None:
    """One worked example from the step's train trajectories (``train.examples: on``), the
    passing exploration attempts first (self-found)."""
    t = ctx.cfg.train
    if t.examples != "on" or is_package_text(state.skill):
        return None
    if not t.show_reference:  # a failed item shows its reference: the skill reaches the optimizer
        trajs = [x for x in trajs if x.score.passed]
    return choose_example(
        trajs,
        {i.id: i for i in ctx.items["train"]},
        ctx.task,
        skill=state.skill,
        step=step,
        tried=[k.split("|", 1)[1] for k in state.tried if k.startswith("example|")],
        max_examples=t.max_examples,
        max_tokens=t.max_example_tokens,
        count=ctx.count_tokens,
        guard=ExampleGuard.build(ctx.items, t.leak_ngram),
        context=task_abilities(ctx.task).example_context,
        found=[(a.trajectory, a.cache_id) for a in explored.found] if explored else (),
    )


def _parting(
    ctx: RunContext,
    state: TrainState,
    step: int,
    shown: list[Trajectory],
    trajs: list[Trajectory],
    explored: Exploration | None,
) -> list[Edit]:
    """Where each failed train episode parted from the attempt that solved it, as lines
    (``train.parting: on``, ``train/parting.py``), through the line screen; a line the skill
    already holds is not added again."""
    if ctx.cfg.train.parting != "on" or explored is None or is_package_text(state.skill):
        return []
    pairs = [(failed, found.trajectory) for failed, found in explored.pairs(trajs)]
    held = {ln.strip() for ln in state.skill.splitlines()}
    edits = [e for e in parting_edits(pairs, shown, step) if e.content.strip() not in held]
    return screen_specific(ctx, state, step, edits, rewrite=False, shown=shown).kept


def _command_forms(
    ctx: RunContext,
    state: TrainState,
    step: int,
    shown: list[Trajectory],
    advanced: Sequence[Trajectory] = (),
) -> Edit | None:
    """The command-forms line of the step's solved train episodes among ``shown`` (the batch
    and exploration's attempts; ``train.command_forms: on``, ``train/command_forms.py``) and of
    the ``advanced`` ones: the better attempts ``train.contrast_partial`` compares, each cut
    where its score peaked."""
    if ctx.cfg.train.command_forms != "on" or is_package_text(state.skill):
        return None
    solved = [x for x in shown if x.score.passed and x.infra_error is None]
    if not solved and not advanced:
        return None
    return forms_edit(state.skill, solved, shown, step, advanced)


async def judge_candidate(ctx: RunContext, state: TrainState, step: int, c: Candidate) -> None:
    """Leak check of a candidate with an applied edit, then (unless refused for a leak) the
    main gate and the check targets (``check_targets.gate_candidate``)."""
    if not c.applied:
        return
    examples = [r.edit.content for r in c.report if r.edit.source == "example"]
    c.leaks = check_leaks(ctx, state, c.text, examples)
    c.refused = leak_refusal(ctx, step, c.leaks.new)
    if not c.refused:
        c.outcome, c.checks = await gate_candidate(ctx, step, c.text, state.skill)


def example_alone(state: TrainState, c: Candidate) -> Candidate | None:
    """The skill in force plus only the step's worked example (and its command-forms line), when
    the gate rejected (or a leak check refused) a candidate holding that example beside rules;
    None otherwise. An
    example is built by code from a train item's passing reply; rules written beside it can
    contradict it and cancel it (docs/method.md, "The example alone")."""
    x = c.proposal.example
    if x is None or x.edit is None or c.split is not None:
        return None
    applied = [r.edit for r in c.report if r.status == "applied"]
    shown = [x.edit, *(e for e in applied if e.source == FORMS_SOURCE)]  # the demonstration's
    if x.edit not in applied or len(applied) <= len(shown):
        return None
    if not c.refused and (c.outcome is None or c.outcome.result.accepted):
        return None
    skill, report = Skill(state.skill).apply(shown)
    if not any(r.status == "applied" for r in report):
        return None
    return Candidate(c.proposal, skill.text, report, split=c)


__all__ = [
    "Candidate",
    "Proposal",
    "example_alone",
    "gated_before",
    "judge_candidate",
    "propose_candidate",
]
