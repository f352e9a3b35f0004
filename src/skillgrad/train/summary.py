"""summary.json: the final numbers of a run (their text is ``train/report.py``).

Validation score (initial -> best), held-out test score (initial vs best skill), skill length,
edit acceptance rate, steps, calls / tokens / cost per role, persistent failures, warnings, and
the code that wrote the run (``code``: ``runs/provenance.py: code_summary``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from skillgrad.config import Config
from skillgrad.runs.provenance import code_summary
from skillgrad.runs.records import Leak, StepRecord
from skillgrad.skill.package import file_lengths, prompt_text
from skillgrad.train.examples import example_blocks

if TYPE_CHECKING:  # the loop imports this module; avoid the cycle at run time
    from skillgrad.train.state import TrainState


def _edit_counts(history: Sequence[StepRecord]) -> dict[str, int]:
    proposed = sum(r.n_proposed for r in history)
    applied = sum(r.n_applied for r in history)
    accepted = sum(r.n_applied for r in history if r.accepted)
    return {"edits_proposed": proposed, "edits_applied": applied, "edits_accepted": accepted}


def warnings_for(cfg: Config) -> list[str]:
    out = []
    if not cfg.train.gate:
        out.append("--no-gate: edits were applied without validation gating")
    if cfg.train.num_epochs > 1 and not cfg.train.use_slow_update:
        out.append("multi-epoch run with slow update off: earlier gains are not protected")
    return out


def build_summary(
    cfg: Config,
    state: TrainState,
    usage: dict[str, dict[str, float]],
    test_scores: dict[str, float] | None,
    *,
    tokens: tuple[int, int],
    run_name: str,
    status: str | None = None,
    stop_reason: str | None = None,
    models: tuple[str, str] | None = None,
    deterministic: bool = True,
    by_stage: dict[str, dict[str, float]] | None = None,
    power: dict[str, Any] | None = None,
    leaks: Sequence[Leak] = (),
    check_tests: Sequence[dict[str, Any]] = (),
    noise_floor: dict[str, Any] | None = None,
    controls: dict[str, Any] | None = None,
    examples: dict[str, Any] | None = None,
    adherence: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """``leaks``: lines of the best skill copying train/val data (``train/screens/leaks.py``);
    ``check_tests``: each check target's test scores (``train/check_targets.py``);
    ``noise_floor``: the A/A measurement (``train/trust/noise.py``; None: not measured);
    ``controls``: the empty and placebo arms on test (``train/trust/controls.py``);
    ``examples``: the best skill's worked examples (``train/examples.py``);
    ``adherence``: each rule of the best skill, applied and broken on train (optional field,
    ``train/adherence.py``)."""
    history = list(state.history)
    counts = _edit_counts(history)
    steps = [r for r in history if r.kind == "step"]
    files = _package_files(state.initial_skill, state.best_skill)
    return {
        "run_name": run_name,
        "status": status or state.status,
        "stop_reason": stop_reason if stop_reason is not None else state.stop_reason,
        "task": cfg.env.task,
        "optimizer_model": models[0] if models else cfg.models.optimizer.name,
        "target_model": models[1] if models else cfg.models.target.name,
        "code": code_summary(state.code),
        "steps": len(steps),
        "slow_updates": len(history) - len(steps),
        "epochs_completed": state.epoch if state.status == "finished" else state.epoch - 1,
        "val_initial": state.initial_score,
        "val_best": state.best_score,
        "best_step": state.best_version,
        "best_version": state.best_version,
        "test_initial": test_scores.get("initial") if test_scores else None,
        "test_best": test_scores.get("best") if test_scores else None,
        "skill_tokens_initial": tokens[0],
        "skill_tokens_best": tokens[1],
        **counts,
        "acceptance_rate": (
            counts["edits_accepted"] / counts["edits_applied"] if counts["edits_applied"] else 0.0
        ),
        "steps_accepted": sum(1 for r in history if r.accepted),
        "steps_nothing_applied": sum(1 for r in steps if r.n_applied == 0),
        "persistent_failures": sorted(i for i, ok in state.val_ever_passed.items() if not ok),
        "val_items": len(state.val_ever_passed),
        "usage": {role: dict(v) for role, v in usage.items()},
        "usage_by_stage": by_stage or {},
        "no_gate": not cfg.train.gate,
        "warnings": warnings_for(cfg),
        "nondeterministic_scorers": not deterministic,
        **({"skill_files": files} if files else {}),
        **gate_summary(cfg, history, power),
        "noise_floor": noise_floor,
        "controls": controls,
        "leaks": leak_summary(cfg, history, leaks),
        "check_targets": check_summary(cfg, history, check_tests),
        "stalled_steps": stalled_steps(history),
        **({"examples": examples} if examples is not None else {}),
        **({"adherence": list(adherence)} if adherence else {}),
        "best_skill_excerpt": skill_excerpt(state.best_skill),
    }


EXCERPT_LINES = 40


def skill_excerpt(skill: str) -> dict[str, Any]:
    """The start of the best skill as the target sees it (a package: its rendered prompt), for
    the report: at most ``EXCERPT_LINES`` lines and 4,000 characters, and how much was left."""
    text = prompt_text(skill).strip("\n")
    lines = text.split("\n") if text else []
    shown = "\n".join(lines[:EXCERPT_LINES])[:4000]
    return {"text": shown, "lines": len(lines), "chars": len(text), "cut": shown != text}


def leak_summary(
    cfg: Config, history: Sequence[StepRecord], best: Sequence[Leak]
) -> dict[str, Any]:
    """The answer-leak check's part of summary.json: the best skill's lines copying train/val
    data, and the steps whose candidate copied data (refused or only flagged)."""
    return {
        "reject_leaks": cfg.train.reject_leaks,
        "ngram": cfg.train.leak_ngram,
        "best_skill": [x.to_json() for x in best],
        "steps": [
            {"step": r.step, "kind": r.kind, "refused": r.leak_refused, "lines": len(r.leaks)}
            for r in history
            if r.leaks
        ],
    }


def check_summary(
    cfg: Config, history: Sequence[StepRecord], tests: Sequence[dict[str, Any]]
) -> dict[str, Any] | None:
    """The check targets' part of summary.json (None without check targets): the tolerance,
    each target's initial vs best test score (none when the run has no test scores), and the
    steps whose candidate a check target refused."""
    t = cfg.train
    if not t.check_targets:
        return None
    refused = [
        {"step": r.step, "kind": r.kind, "target": c.target, "reason": c.reason}
        for r in history
        for c in r.check_targets
        if c.verdict == "refused"
    ]
    return {
        "tolerance": t.check_targets_tolerance,
        "rule": t.check_targets_rule,
        "targets": [dict(row) for row in tests],
        "refused_steps": refused,
    }


def gate_summary(
    cfg: Config, history: Sequence[StepRecord], power: dict[str, Any] | None
) -> dict[str, Any]:
    """The gate's part of summary.json: rule, power check, missing items, accepted steps with
    their paired difference, interval and attribution."""
    t = cfg.train
    return {
        "gate_rule": t.gate_rule,
        "gate_confidence": t.gate_confidence,
        "samples_per_item": t.samples_per_item,
        "power_check": power,
        "gate_missing": sum(r.gate_missing for r in history),
        "accepted_steps": [
            {
                "step": r.step,
                "kind": r.kind,
                "mean_diff": r.mean_diff,
                "diff_low": r.diff_low,
                "diff_high": r.diff_high,
                "within_noise": within_noise(r),
                "fixed": list(r.fixed),
                "broken": list(r.broken),
                "missing": r.gate_missing,
            }
            for r in history
            if r.accepted
        ],
    }


def within_noise(r: StepRecord) -> bool | None:
    """Whether an accepted step's interval reaches 0 or below (None: no paired data)."""
    return None if r.diff_low is None else r.diff_low <= 0.0


def _package_files(initial: str, best: str) -> dict[str, list[int]] | None:
    """A package's length per file (and ``(total)``): [initial, best] approximate tokens."""
    before, after = file_lengths(initial) or {}, file_lengths(best)
    if after is None:
        return None
    names = [n for n in after if n != "(total)"] + [n for n in before if n not in after]
    return {n: [before.get(n, 0), after.get(n, 0)] for n in [*names, "(total)"]}


def example_summary(
    mode: str, accepted: Sequence[Mapping[str, Any]], best: str, count: Callable[[str], int]
) -> dict[str, Any]:
    """summary.json's ``examples``: ``train.examples``, the best skill's demonstrations with the
    train item each came from (``TrainState.examples``; a self-found one with its ``origin``
    and exploration ``attempt``), and their share of its length."""
    blocks = example_blocks(best)
    tokens = sum(count(b) for b in blocks)
    total = count(best) if best else 0
    rows = [
        {"item_id": x["item_id"], "step": x["step"]}
        | {k: x[k] for k in ("origin", "attempt") if k in x}
        for x in accepted
        if str(x.get("content", "")).strip() in blocks
    ]
    return {
        "mode": mode,
        "best_skill": rows,
        "tokens": tokens,
        "share": tokens / total if total else 0.0,
    }


def stalled_steps(history: Sequence[Any]) -> list[dict[str, Any]]:
    """summary.json's ``stalled_steps``: each step that could not learn, with why."""
    return [{"step": r.step, "reason": r.stall_reason} for r in history if r.stall_reason]


__all__ = [
    "build_summary",
    "check_summary",
    "example_summary",
    "gate_summary",
    "leak_summary",
    "skill_excerpt",
    "stalled_steps",
    "warnings_for",
    "within_noise",
]
