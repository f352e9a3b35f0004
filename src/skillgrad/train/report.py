"""report.md: the human-readable report of a run, from the numbers of ``summary.json``
(``train/summary.py``): scores, the learned skill, the gate, check targets, answer leaks,
persistent failures, steps that could not learn, control arms and zero-shot transfers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skillgrad.runs.provenance import describe
from skillgrad.runs.records import StepRecord
from skillgrad.skill.text import fence_for
from skillgrad.tasks.episode import ends_text


def excerpt_lines(excerpt: dict[str, Any] | None) -> list[str]:
    """The report's "Learned skill" section (absent from summaries written before it existed)."""
    if not excerpt:
        return []
    if not excerpt["text"]:
        return ["", "## Learned skill", "", "The best skill is empty (the initial skill was kept)."]
    fence = fence_for(excerpt["text"])
    more = (
        f" (the first lines of {excerpt['lines']}; the rest is in best_skill)"
        if excerpt["cut"]
        else ""
    )
    return ["", f"## Learned skill{more}", "", f"{fence}markdown", excerpt["text"], fence]


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
        *([f"- code: {describe(s['code'])}"] if "code" in s else []),  # older: not recorded
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
    lines += stall_lines(s)
    lines += prune_lines(history)
    lines += kept_lines(history)
    lines += adherence_lines(s)
    lines += control_lines(s.get("controls"))
    lines += example_report_lines(s)
    lines += exploration_lines(history)
    lines += ["", "## Persistent failures", "", persistent_failures_text(s)]
    if s.get("nondeterministic_scorers"):
        lines += ["", "Note: a scorer of this task is an LLM judge (non-deterministic)."]
    if s["warnings"]:
        lines += ["", "## Warnings", "", *(f"- {w}" for w in s["warnings"])]
    if transfer:
        lines += ["", "## Transfer evaluations (zero-shot, other setups)", ""]
        lines += ["| skill | setup | split | items | missing | mean score | pass rate |"]
        lines += ["|---|---|---|---:|---:|---:|---:|"]
        lines += [_transfer_row(t) for t in transfer]
    return "\n".join(lines) + "\n"


def _transfer_row(t: dict[str, Any]) -> str:
    """One ``transfer.jsonl`` row of the report's table; ``missing`` (items left unscored) is
    blank for a row written before it was recorded, and the scores are over the scored items."""
    missing = t.get("missing", "")
    return (
        f"| {Path(str(t['skill'])).name} | {t['setup']} | {t['split']} | {t['n']} | {missing} | "
        f"{t['mean_score']:.3f} | {t['pass_rate']:.3f} |"
    )


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
    if "noise_floor" in s:  # absent from summaries written before it existed
        lines += noise_lines(s["noise_floor"])
    steps = s.get("accepted_steps") or []
    if steps:
        conf = float(s["gate_confidence"])
        floor = (s.get("noise_floor") or {}).get("noise_threshold") or 0.0
        noise = floor > 0  # a column only when the measured noise raised the gate's margin
        lines += [
            "",
            f"Accepted steps: mean paired difference (candidate - incumbent) with its interval "
            f"(each end a one-sided {conf:.0%} sign-flip bound); *within noise* when the lower "
            "end is at or below 0"
            + (
                "; the noise floor is the A/A threshold a difference had to exceed."
                if noise
                else "."
            ),
            "",
            "| step | kind | difference | interval | "
            + ("noise floor | " if noise else "")
            + "verdict | fixed (fail->pass) | broken (pass->fail) |",
            "|---:|---|---:|---|" + ("---:|" if noise else "") + "---|---|---|",
        ]
        for a in steps:
            verdict = {True: "within noise", False: "signal", None: "n/a"}[a["within_noise"]]
            lines.append(
                f"| {a['step']} | {a['kind']} | {_num(a['mean_diff'])} | "
                f"[{_num(a['diff_low'])}, {_num(a['diff_high'])}] | "
                + (f"{_num(floor)} | " if noise else "")
                + f"{verdict} | {_ids(a['fixed'])} | {_ids(a['broken'])} |"
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


def control_lines(controls: dict[str, Any] | None) -> list[str]:
    """The report's "Control arms" section (absent without ``train.controls``)."""
    if not controls:
        return []

    def num(x: float | None, sign: bool = False) -> str:
        return "n/a" if x is None else (f"{x:+.3f}" if sign else f"{x:.3f}")

    worse = controls["worse_than_initial"]
    return [
        "",
        "## Control arms (test split)",
        "",
        f"The best skill against the empty skill and a placebo of {controls['placebo_tokens']} "
        f"tokens (the best skill: {controls['best_tokens']}; no task content, "
        f"skillgrad.train.trust.placebo) on the same {controls['items']} test items:",
        "",
        "| arm | test score | best minus arm (per item) |",
        "|---|---:|---:|",
        f"| empty | {num(controls['test_empty'])} | {num(controls['test_gain_vs_empty'], True)} |",
        f"| placebo | {num(controls['test_placebo'])} | "
        f"{num(controls['test_gain_vs_placebo'], True)} |",
        "",
        f"- items the best skill made worse than the initial skill: "
        f"{', '.join(worse) if worse else 'none'}",
    ]


def stall_lines(summary: dict[str, Any]) -> list[str]:
    """The report's "Steps that could not learn" section (absent when none stalled)."""
    stalled = summary.get("stalled_steps") or []
    if not stalled:
        return []
    lines = [
        "",
        "## Steps that could not learn",
        "",
        f"{len(stalled)} step(s) produced no candidate because nothing the optimizer said "
        "reached the skill (replies: steps/step_NNNN/reflections.json):",
        "",
    ]
    return lines + [f"- step {x['step']}: {x['reason']}" for x in stalled]


def prune_lines(history: Sequence[StepRecord]) -> list[str]:
    """The report's "Lines removed after the gate" section (absent when none were)."""
    rows = [(r.step, line) for r in history for line in r.pruned]
    if not rows:
        return []
    return [
        "",
        "## Lines removed after the gate",
        "",
        "New lines of accepted candidates that no val item the candidate fixed depends on "
        "(train.prune; steps/step_NNNN/prune.json):",
        "",
        *(f"- step {step}: `{line.strip()}`" for step, line in rows),
    ]


def kept_lines(history: Sequence[StepRecord]) -> list[str]:
    """The report's "Lines kept after the gate" section: each line the prune tried to remove
    and kept, with the target that needs it (absent when none were kept)."""
    rows = [(r.step, k) for r in history for k in r.prune_kept]
    if not rows:
        return []
    return [
        "",
        "## Lines kept after the gate, and the target that needs each",
        "",
        "New lines of accepted candidates that val items the candidate fixed depend on: without "
        "the line they score lower on the target named (the run's target is asked first, then "
        "each check target; steps/step_NNNN/prune.json):",
        "",
        *(
            f"- step {step}: `{k.line.strip()}` — {k.target}"
            f"{' (check target)' if k.check_target else ''}: {k.lowered} of the {k.fixed} val "
            "items it fixed there score lower without it"
            for step, k in rows
        ),
    ]


def adherence_lines(summary: Mapping[str, Any]) -> list[str]:
    """The report's "What the target ignores" table (absent with train.adherence off)."""
    rows = summary.get("adherence") or []
    if not rows:
        return []
    return [
        "",
        "## What the target ignores",
        "",
        "Each rule judged on the train tasks of the steps it was in force (train.adherence; "
        "steps/step_NNNN/adherence.json): how many tasks it applied to and how many broke it.",
        "",
        "| rule | applies | broken | steps | in the best skill |",
        "|---|---:|---:|---:|---|",
        *(
            f"| {str(r['rule']).lstrip('-*+ ').replace('|', '/')} | {r['applies']} | "
            f"{r['broken']} | {r['steps']} | {'yes' if r.get('in_best') else 'no'} |"
            for r in rows
        ),
    ]


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


def example_report_lines(summary: Mapping[str, Any]) -> list[str]:
    """The report's worked-examples section (absent when examples are off and none are shown)."""
    x = summary.get("examples")
    if not x or (x["mode"] == "off" and not x["best_skill"]):
        return []
    rows = [
        f"- from train item `{r['item_id']}` (step {r['step']}"
        + (f"; self-found: exploration attempt `{r['attempt']}`)" if r.get("attempt") else ")")
        for r in x["best_skill"]
    ]
    return [
        "",
        "## Worked examples",
        "",
        f"- train.examples: {x['mode']}; the best skill shows {len(x['best_skill'])} "
        f"({x['tokens']} tokens, {x['share']:.0%} of its length)",
        *rows,
    ]


def exploration_lines(history: Sequence[StepRecord]) -> list[str]:
    """The report's exploration section (``train.explore``; absent when nothing was explored):
    per step, the attempts, the failed train items they solved and those they only improved."""
    steps = [r for r in history if r.explore_attempts]
    if not steps:
        return []
    rows = [_exploration_row(r) for r in steps]
    if not any(r.explore_found for r in steps):
        tried = sum(r.explore_attempts for r in steps)
        better = sum(r.explore_better for r in steps)
        compared = (
            f" (only {better} better-scoring attempts to compare: train.contrast_partial)"
            if better
            else ""
        )
        rows.append(
            f"- no attempt passed ({tried} in all): the run had no demonstration of its own to "
            f"learn from{compared}. More attempts per item (train.explore_attempts, at most 8) "
            "or more items per step (train.batch_size) give exploration more chances, at the "
            "cost of target calls."
        )
    return ["", "## Exploration", "", *rows]


def _exploration_row(r: StepRecord) -> str:
    row = f"- step {r.step}: {r.explore_found} failed train items solved"
    row += f" in {r.explore_attempts} attempts"
    if r.explore_repeats:
        row += f" ({r.explore_repeats} repeated an earlier attempt exactly)"
    if r.explore_better:
        row += f"; {r.explore_better} more scored higher than their failure without passing"
    if r.explore_resumed or r.explore_redrawn:
        row += (
            f"; {r.explore_resumed} resumed where an earlier attempt peaked, "
            f"{r.explore_redrawn} replies drawn again past a command known to lose points"
        )
    if ends := ends_text(r.explore_ends):
        fell = f" ({r.explore_fell} below a score they had reached)" if r.explore_fell else ""
        row += f"; the attempts ended: {ends}{fell}"
    return row


__all__ = [
    "adherence_lines",
    "check_lines",
    "control_lines",
    "example_report_lines",
    "excerpt_lines",
    "exploration_lines",
    "gate_lines",
    "kept_lines",
    "leak_lines",
    "noise_lines",
    "persistent_failures_text",
    "prune_lines",
    "render_report",
    "stall_lines",
]
