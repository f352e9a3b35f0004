"""Prune (after the gate): every new line of an accepted candidate must carry an item it fixed.

The gate judges a candidate as a whole, so a line that helps nothing rides along with the one
that carried the gain (measured: a reading task's best skill held one train item's fact beside
the format rule that fixed the items). For each line the candidate added, in order, the val
items it fixed (scored higher than the incumbent) are scored again with that line removed; a
line whose removal lowers none of them is dropped. Only the fixed items are re-scored, through
the result cache, so a resumed run replays the same calls; the pruned skill is never worse than
the candidate on the items it fixed, and it is what the step commits.

With check targets (``train.check_targets``) the items the candidate fixed on each of them count
too: a line a check target needs stays although the main target does not need it (measured: with
a worked example in the skill the 1.5B no longer needs the procedure in words, which a smaller
target does), and what is committed is what the check targets approved, not a text they never
saw.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from skillgrad.models.context import call_context
from skillgrad.runs.records import KeptLine
from skillgrad.skill.package import is_package_text
from skillgrad.train.command_forms import held_line
from skillgrad.train.context import CheckTarget, RunContext
from skillgrad.train.examples import example_lines
from skillgrad.train.gate import EPS, GateOutcome
from skillgrad.train.rollout import score_items
from skillgrad.train.validate import on_target, val_scores
from skillgrad.types import Item

REASON = "removed after the gate: no fixed item depends on it"
STAGE = "prune"
_MARKUP = re.compile(r"^\s*(#|```|~~~|<!--|\|)")


@dataclass(frozen=True)
class Pruned:
    """The skill to commit (``text``), the lines removed from the candidate, the fixed items
    they were checked on, and each trial's per-item scores (for ``prune.json``)."""

    text: str
    removed: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()
    trials: tuple[dict[str, Any], ...] = ()
    kept: tuple[KeptLine, ...] = ()
    """The lines it tried to remove and kept, each with the target that needs it."""

    def to_json(self) -> dict[str, Any]:
        return {
            "reason": REASON,
            "removed": list(self.removed),
            "fixed": list(self.fixed),
            "trials": list(self.trials),
        }


def added_lines(incumbent: str, candidate: str) -> list[int]:
    """Indices of the candidate's lines that are pure additions to the incumbent (a rewritten
    line is not one: removing it would delete the line it replaced) and could be a rule (no
    blank line, heading, fence, comment, table row, worked-example line or command-forms line:
    both are built by code from solved train items, and the forms line is there for a target
    the example does not carry, which the fixed items cannot show; ``train/command_forms.py``)."""
    old, new = incumbent.split("\n"), candidate.split("\n")
    shown = example_lines(candidate) | {x.strip() for x in [held_line(candidate)] if x}
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [
        j
        for tag, _, _, j1, j2 in matcher.get_opcodes()
        if tag == "insert"
        for j in range(j1, j2)
        if new[j].strip() and not _MARKUP.match(new[j]) and new[j].strip() not in shown
    ]


def fixed_items(outcome: GateOutcome) -> list[str]:
    """The val items the candidate scored higher than the incumbent (fail -> pass, and partial
    credit gained), in split order."""
    return [
        i
        for i, c in outcome.candidate.items()
        if c.value is not None
        and (inc := outcome.incumbent.get(i)) is not None
        and inc.value is not None
        and c.value > inc.value + EPS
    ]


@dataclass(frozen=True)
class _Fixed:
    """The val items a candidate fixed on one target, and its scores on them."""

    name: str
    items: list[Item]
    scores: dict[str, float]
    target: CheckTarget | None = None

    def lowered(self, values: dict[str, float | None]) -> int:
        """How many of these items a trial's ``values`` score below the candidate (an item the
        trial did not score counts as lower: it does not hold)."""
        return sum(
            (v := values.get(i)) is None or v < score - EPS for i, score in self.scores.items()
        )


async def _fixed_on_checks(
    ctx: RunContext, step: int, incumbent: str, candidate: str
) -> list[_Fixed]:
    """Per check target, the val items the candidate scored higher on than the incumbent
    (both scored in full by the gate's check: answered from the result cache)."""
    out = []
    for target in ctx.check_targets:
        with call_context(STAGE, step):
            inc = await val_scores(ctx, incumbent, f"{STAGE} {target.name} (incumbent)", target)
            cand = await val_scores(ctx, candidate, f"{STAGE} {target.name}", target)
        before = {s.item_id: s.value for s in inc}
        after = {s.item_id: s.value for s in cand if s.value is not None}
        fixed = {i for i, v in after.items() if (b := before.get(i)) is not None and v > b + EPS}
        items = [i for i in ctx.items["val"] if i.id in fixed]
        if items:
            out.append(_Fixed(target.name, items, {i.id: after[i.id] for i in items}, target))
    return out


async def _lowered(
    ctx: RunContext, step: int, trial: str, fixed: _Fixed
) -> tuple[int, dict[str, float | None]]:
    """How many items ``fixed`` names ``trial`` scores below the candidate on that target
    (0: it holds them all); the trial's scores."""
    t = ctx.cfg.train
    backend, store, temperature = on_target(ctx, fixed.target)
    with call_context(STAGE, step):
        scores = await score_items(
            ctx.task, fixed.items, trial, backend, samples=t.samples_per_item,
            workers=ctx.cfg.hardware.rollout_workers, store=store,
            progress=ctx.progress, stage=STAGE, seed=t.seed, temperature=temperature,
        )  # fmt: skip
    values = {s.item_id: s.value for s in scores}
    return fixed.lowered(values), values


async def prune(
    ctx: RunContext, step: int, incumbent: str, candidate: str, outcome: GateOutcome | None
) -> Pruned:
    """The accepted ``candidate`` without the new lines no fixed item depends on (unchanged
    when ``train.prune`` is off, the gate is off or did not accept, it fixed no item, or the
    skill is a package). The last new line is never removed."""
    t = ctx.cfg.train
    if t.prune != "on" or not t.gate or outcome is None or not outcome.result.accepted:
        return Pruned(candidate)
    fixed = fixed_items(outcome)
    lines, new = candidate.split("\n"), added_lines(incumbent, candidate)
    if not fixed or len(new) < 2 or is_package_text(candidate):
        return Pruned(candidate, fixed=tuple(fixed))
    items = [i for i in ctx.items["val"] if i.id in set(fixed)]
    scores = {i: outcome.candidate[i].value or 0.0 for i in fixed}
    own = _Fixed(ctx.model_names[1], items, scores)
    checks = await _fixed_on_checks(ctx, step, incumbent, candidate)
    keep, removed, trials, kept = set(range(len(lines))), [], [], []
    for j in new:
        if len([k for k in new if k in keep]) < 2:
            break  # one new line stays: what was accepted is never reduced to the incumbent
        trial = "\n".join(lines[k] for k in sorted(keep - {j}))
        lowered, values = await _lowered(ctx, step, trial, own)
        record: dict[str, Any] = {"line": lines[j], "scores": values}
        needed_by = own if lowered else None
        for check in checks if not lowered else ():  # asked only when the main target holds
            lowered, on_check = await _lowered(ctx, step, trial, check)
            record.setdefault("check_targets", {})[check.name] = on_check
            if lowered:
                needed_by = check
                break
        trials.append(record | {"removed": needed_by is None})
        if needed_by is None:
            keep.discard(j)
            removed.append(lines[j])
        else:
            kept.append(KeptLine(lines[j], needed_by.name, lowered, len(needed_by.scores),
                                 check_target=needed_by.target is not None))  # fmt: skip
    text = "\n".join(lines[k] for k in sorted(keep))
    return Pruned(text, tuple(removed), tuple(fixed), tuple(trials), tuple(kept))


__all__ = ["REASON", "STAGE", "Pruned", "added_lines", "fixed_items", "prune"]
