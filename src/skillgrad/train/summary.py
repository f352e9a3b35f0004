"""summary.json and report.md: the final numbers of a run and their human-readable report.

Validation score (initial -> best), held-out test score (initial vs best skill), skill length,
edit acceptance rate, steps, calls / tokens / cost per role, persistent failures, warnings.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillgrad.config import Config
from skillgrad.skill_package import file_lengths, prompt_text
from skillgrad.train.examples import example_report_lines
from skillgrad.types import Leak, StepRecord

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
    examples: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``examples``: the best skill's worked examples (``train/examples.py``);
    ``leaks``: lines of the best skill copying train/val data (``train/leaks.py``);
    ``check_tests``: each check target's test scores (``train/check_targets.py``)."""
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
        "leaks": leak_summary(cfg, history, leaks),
        "check_targets": check_summary(cfg, history, check_tests),
        **({"examples": examples} if examples is not None else {}),
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


def excerpt_lines(excerpt: dict[str, Any] | None) -> list[str]:
    """The report's "Learned skill" section (absent from summaries written before it existed)."""
    if not excerpt:
        return []
    if not excerpt["text"]:
        return ["", "## Learned skill", "", "The best skill is empty (the initial skill was kept)."]
    fence = "~~~~" if "~~~" in excerpt["text"] else "~~~"
    more = (
        f" (the first lines of {excerpt['lines']}; the rest is in best_skill)"
        if excerpt["cut"]
        else ""
    )
    return ["", f"## Learned skill{more}", "", f"{fence}markdown", excerpt["text"], fence]


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


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def render_report(
    summary: dict[str, Any],
    history: Sequence[StepRecord],
    transfer: Sequence[dict[str, Any]] = (),
) -> str:
    """The run's Markdown report; ``transfer`` rows (``<run>/transfer.jsonl``) add a section
    with the run's skills evaluated zero-shot in other harnesses or with other models."""
    s = summary
    lines = [
        f"# skillgrad report: {s['run_name']}",
        "",
        f"- status: **{s['status']}** " + (f"({s['stop_reason']})" if s["stop_reason"] else ""),
        f"- task: `{s['task']}` · optimizer `{s['optimizer_model']}` · "
        f"target `{s['target_model']}`",
        f"- validation score: {_fmt(s['val_initial'])} -> {_fmt(s['val_best'])} "
        f"(best at step {s['best_step']})",
        f"- test score (held out): initial {_fmt(s['test_initial'])} "
        f"vs best {_fmt(s['test_best'])}",
        f"- skill length: {s['skill_tokens_initial']} -> {s['skill_tokens_best']} tokens",
        *[f"  - `{name}`: {a} -> {b} tokens" for name, (a, b) in s.get("skill_files", {}).items()],
        f"- steps: {s['steps']} (+{s['slow_updates']} slow updates), "
        f"{s['steps_accepted']} accepted",
        f"- edits: {s['edits_proposed']} proposed, {s['edits_applied']} applied to candidates, "
        f"{s['edits_accepted']} accepted (acceptance rate {s['acceptance_rate']:.1%})",
        *excerpt_lines(s.get("best_skill_excerpt")),
        "",
        "## Cost and calls per role",
        "",
        "| role | calls | prompt tokens | completion tokens | cost (USD) |",
        "|---|---:|---:|---:|---:|",
    ]
    for role, u in s["usage"].items():
        lines.append(
            f"| {role} | {int(u['calls'])} | {int(u['prompt_tokens'])} | "
            f"{int(u['completion_tokens'])} | {u['cost']:.4f} |"
        )
    if s.get("usage_by_stage"):
        lines += ["", "| role / stage | calls | tokens | cost (USD) |", "|---|---:|---:|---:|"]
        for key, u in s["usage_by_stage"].items():
            lines.append(f"| {key} | {int(u['calls'])} | {int(u['tokens'])} | {u['cost']:.4f} |")
    lines += [
        "",
        "## Steps",
        "",
        "| step | epoch | kind | lr | k | applied | gate | val | tokens |",
        "|---:|---:|---|---:|---:|---:|---|---:|---:|",
    ]
    for r in history:
        lines.append(
            f"| {r.step} | {r.epoch} | {r.kind} | {r.lr:.2f} | {r.k} | "
            f"{r.n_applied} | {r.verdict} | {r.val_score:.3f} | {r.skill_tokens} |"
        )
    lines += gate_lines(s)
    lines += check_lines(s)
    lines += leak_lines(s)
    lines += example_report_lines(s)
    lines += ["", "## Persistent failures", "", persistent_failures_text(s)]
    if s.get("nondeterministic_scorers"):
        lines += ["", "Note: a scorer of this task is an LLM judge (non-deterministic)."]
    if s["warnings"]:
        lines += ["", "## Warnings", "", *(f"- {w}" for w in s["warnings"])]
    if transfer:
        lines += ["", "## Transfer evaluations (zero-shot, other setups)", ""]
        lines += ["| skill | setup | split | items | mean score | pass rate |"]
        lines += ["|---|---|---|---:|---:|---:|"]
        lines += [
            f"| {Path(str(t['skill'])).name} | {t['setup']} | {t['split']} | {t['n']} | "
            f"{t['mean_score']:.3f} | {t['pass_rate']:.3f} |"
            for t in transfer
        ]
    return "\n".join(lines) + "\n"


def _num(x: float | None, sign: bool = True) -> str:
    return "n/a" if x is None else (f"{x:+.3f}" if sign else f"{x:.3f}")


def gate_lines(s: dict[str, Any]) -> list[str]:
    """The report's gate section: rule, power check, and every accepted step's paired
    difference with its interval and the items it flipped (absent from older summaries)."""
    if "gate_rule" not in s:
        return []
    lines = ["", "## Gate", "", f"- rule: `{s['gate_rule']}` (confidence {s['gate_confidence']})"]
    if s.get("samples_per_item", 1) > 1:
        lines.append(f"- samples per val item: {s['samples_per_item']}")
    power = s.get("power_check")
    if power:
        gain = power.get("min_gain")
        gain_text = (
            "none can pass on this split"
            if gain is None
            else f"{gain:+.3f} ({power['min_items_flipped']} of {power['n_items']} items)"
        )
        needs = ", ".join(
            f"{float(e):+.2f}: {'more than 2000' if n is None else n}"
            for e, n in power.get("items_needed", {}).items()
        )
        lines += [
            f"- power check: smallest detectable gain {gain_text}; val items needed per "
            f"effect: {needs}"
        ]
    lines.append(f"- val items left out as missing (infrastructure failures): {s['gate_missing']}")
    steps = s.get("accepted_steps") or []
    if steps:
        conf = float(s["gate_confidence"])
        lines += [
            "",
            f"Accepted steps: mean paired difference (candidate - incumbent) with its interval "
            f"(each end a one-sided {conf:.0%} sign-flip bound); *within noise* when the lower "
            "end is at or below 0.",
            "",
            "| step | kind | difference | interval | verdict | fixed (fail->pass) | "
            "broken (pass->fail) |",
            "|---:|---|---:|---|---|---|---|",
        ]
        for a in steps:
            verdict = {True: "within noise", False: "signal", None: "n/a"}[a["within_noise"]]
            lines.append(
                f"| {a['step']} | {a['kind']} | {_num(a['mean_diff'])} | "
                f"[{_num(a['diff_low'])}, {_num(a['diff_high'])}] | {verdict} | "
                f"{_ids(a['fixed'])} | {_ids(a['broken'])} |"
            )
    return lines


def _ids(ids: list[str], shown: int = 4) -> str:
    """Item ids for a table cell: a count and the first few (the full lists are in
    ``summary.json`` and each step's ``gate.json``)."""
    if not ids:
        return "-"
    head = ", ".join(ids[:shown])
    return head if len(ids) <= shown else f"{len(ids)}: {head}, …"


def check_lines(s: dict[str, Any]) -> list[str]:
    """The report's check-target section: the tolerance, the refusals, and each check target's
    test score of the initial and the best skill (absent without check targets)."""
    checks = s.get("check_targets")
    if not checks:
        return []
    lines = [
        "",
        "## Check targets",
        "",
        f"- a candidate the main gate accepts is refused when it loses more than "
        f"{checks['tolerance']:g} (val mean) on any check target",
    ]
    refused = checks["refused_steps"]
    if refused:
        lines.append("- refused on a check target: " + "; ".join(
            f"step {x['step']} ({x['reason'].removeprefix('refused: ')})" for x in refused
        ))  # fmt: skip
    else:
        lines.append("- no candidate was refused on a check target")
    if not checks["targets"]:
        return [*lines, "- no test scores (the run has no test split or did not finish)"]
    lines += ["", "| check target | test initial | test best | change |", "|---|---:|---:|---:|"]
    lines += [
        f"| {x['target']} | {_fmt(x['test_initial'])} | {_fmt(x['test_best'])} | "
        f"{_num(x['test_change'])} |"
        for x in checks["targets"]
    ]
    return lines


def leak_lines(s: dict[str, Any]) -> list[str]:
    """The report's answer-leak section: the best skill's lines that copy train/val data
    verbatim, and the steps whose candidates did (absent from older summaries)."""
    leaks = s.get("leaks")
    if not leaks:
        return []
    mode = (
        "refused by the gate" if leaks["reject_leaks"] else "flagged only (train.reject_leaks off)"
    )
    best = leaks["best_skill"]
    lines = [
        "",
        "## Answer-leak check",
        "",
        f"- skill lines sharing {leaks['ngram']}+ words in a row with a train/val input or "
        f"reference (or a short item's input next to its answer): {mode}",
    ]
    steps = leaks["steps"]
    if steps:
        refused = [str(x["step"]) for x in steps if x["refused"]]
        flagged = [str(x["step"]) for x in steps if not x["refused"]]
        if refused:
            lines.append(f"- candidates refused for copying data: steps {', '.join(refused)}")
        if flagged:
            lines.append(f"- candidates that copied data (flagged): steps {', '.join(flagged)}")
    if not best:
        lines.append("- the best skill copies no train/val data")
        return lines
    lines += [
        f"- **the best skill copies train/val data on {len(best)} line(s)**:",
        "",
        "| file | line | copied text | item | split | copied |",
        "|---|---:|---|---|---|---|",
    ]
    for x in best:
        span = x["span"].replace("|", "\\|")
        lines.append(
            f"| {x['file'] or '-'} | {x['line']} | {span} | {x['item_id']} | {x['split']} | "
            f"{x['source']} |"
        )
    return lines


def persistent_failures_text(summary: dict[str, Any]) -> str:
    """What the run knows about validation items no skill version solved, and nothing more.

    ``val_items`` (the size of the selection split) is absent from summaries written before it
    existed; then only the list is stated.
    """
    failed = list(summary.get("persistent_failures") or [])
    total = summary.get("val_items")
    if not failed:
        return "None."
    if total is not None and len(failed) >= total:
        return (
            f"Every validation item ({len(failed)} of {total}) failed under every skill version "
            "evaluated, the initial skill included: no item was ever solved, so the run had no "
            "success to learn from. Check that the target model can do this task at all and "
            "that the scorer and the references are right."
        )
    head = f"{len(failed)} of {total}" if total is not None else str(len(failed))
    return f"{head} validation items failed under every skill version evaluated: " + ", ".join(
        failed
    )


__all__ = [
    "build_summary",
    "check_lines",
    "check_summary",
    "gate_lines",
    "gate_summary",
    "leak_lines",
    "leak_summary",
    "persistent_failures_text",
    "render_report",
    "within_noise",
]
