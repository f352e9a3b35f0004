"""The report of a sweep: ``sweep_summary.json`` as text for the terminal (no plotting imports)
(the HTML page with figures, the ``report`` extra, is ``report/sweep_html.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillgrad.errors import RunDirError
from skillgrad.report.text import fmt, p_text
from skillgrad.runs.provenance import describe
from skillgrad.sweep.worker import COMPLETE
from skillgrad.tasks.episode import ends_text

SHOWN = ("val_best", "test_initial", "test_best", "test_gain", "skill_tokens", "calls", "cost_usd")


def params_label(params: dict[str, Any]) -> str:
    """``key=value, ...`` of a grid configuration (an empty string as ``""``, not as "no
    value")."""
    shown = ('""' if v == "" else fmt(v) for v in params.values())
    return ", ".join(f"{k}={v}" for k, v in zip(params, shown, strict=True)) or "(base config)"


def interval_text(stat: dict[str, Any]) -> str:
    """``0.512 [0.401, 0.623]``; one seed: ``0.512 (1 seed)``; none: ``–``."""
    if not stat or stat.get("mean") is None:
        return "–"
    if stat.get("single_seed"):
        return f"{fmt(stat['mean'])} (1 seed)"
    return f"{fmt(stat['mean'])} [{fmt(stat['ci_low'])}, {fmt(stat['ci_high'])}]"


def paired_text(test: dict[str, Any]) -> str:
    if not test or test.get("p_value") is None:
        return "no test pairs yet"
    return (
        f"mean diff {fmt(test['mean_diff'])} over {test['n_pairs']} pairs "
        f"(+{test['wins']} / -{test['losses']} / ={test['ties']}), "
        f"{p_text(test['p_value'])} ({test['method']} sign-flip)"
        + (f", {test['missing_pairs']} missing" if test.get("missing_pairs") else "")
    )


def render_sweep_text(summary: dict[str, Any]) -> str:
    """Markdown-ish text: one block per grid configuration, mean [95% CI] over seeds."""
    s = summary
    lines = [
        f"# skillgrad sweep: {s['sweep_dir']}",
        "",
        f"- runs finished: {s['runs_finished']} of {s['runs_total']}"
        + ("" if s["complete"] else " (re-run the same sweep command to finish the rest)"),
        f"- seeds: {s['seeds']} · split varied with the seed: {bool(s['vary_split'])}",
        f"- intervals: {s['interval']}",
        f"- paired test: {s['paired_test']}",
    ]
    for c in s["configs"]:
        lines += ["", f"## {params_label(c['params'])}  ({c['runs_finished']} seeds finished)", ""]
        lines += ["| metric | mean [95% CI] | per seed |", "|---|---|---|"]
        controls = ("test_gain_vs_empty", "test_gain_vs_placebo")
        shown_controls = tuple(k for k in controls if (c.get(k) or {}).get("values"))
        for key in ("val_initial", *SHOWN, *shown_controls):
            stat = c.get(key) or {}
            per_seed = ", ".join(fmt(v) for v in stat.get("values", []))
            lines.append(f"| {key} | {interval_text(stat)} | {per_seed} |")
        for target, stats in (c.get("check_targets") or {}).items():
            for key, stat in stats.items():
                per_seed = ", ".join(fmt(v) for v in stat.get("values", []))
                lines.append(f"| check {target}: {key} | {interval_text(stat)} | {per_seed} |")
        lines += ["", f"test best vs initial: {paired_text(c.get('paired_test') or {})}"]
        if isinstance(c.get("runs_code"), list):  # absent from summaries written before it
            lines.append("code of its runs: " + "; ".join(describe(x) for x in c["runs_code"]))
        if shown_controls:
            worse = c.get("made_worse") or []
            listed = ", ".join(f"{w['item_id']} (seed {w['seed']})" for w in worse[:8])
            more = f", and {len(worse) - 8} more" if len(worse) > 8 else ""
            lines.append(f"test items the best skill made worse: {listed + more or 'none'}")
        explored = exploration_text(c.get("exploration"))  # absent from older summaries
        if explored:
            lines.append(explored)
        lines += run_lines(c.get("per_run"))  # absent from older summaries
        unfinished = {k: v for k, v in (c.get("status") or {}).items() if v not in COMPLETE}
        if unfinished:
            lines.append("not finished: " + ", ".join(f"{k} ({v})" for k, v in unfinished.items()))
    lines += arm_lines(s.get("arms") or [])
    return "\n".join(lines) + "\n"


def exploration_text(record: Any) -> str | None:
    """One line for the sweep report; None without a record, or with one whose counts are not
    whole numbers (a summary is read as stored)."""
    if not isinstance(record, dict):
        return None
    keys = ("attempts", "items", "found", "runs", "best_skills_with_self_found")
    counts = {k: v for k in keys if type(v := record.get(k)) is int}
    none = record.get("seeds_without_a_find")
    if len(counts) < len(keys) or not isinstance(none, list):
        return None
    missed = f" (none found: seed {', '.join(map(str, none))})" if none else ""
    text = ends_text(record.get("ends"))
    ended = f"; the attempts ended: {text}" if text else ""
    return (
        f"exploration: {counts['found']} of {counts['items']} failed train items solved in "
        f"{counts['attempts']} attempts; runs with a success: "
        f"{counts['runs'] - len(none)} of {counts['runs']}{missed}; best skills holding a "
        f"self-found example: {counts['best_skills_with_self_found']}{ended}"
    )


RUN_COLUMNS = ("seed (split)", "exploration: failed train items solved, per step",
               "steps accepted", "val initial → best", "test initial → best", "test vs placebo",
               "check targets, test initial → best", "calls", "minutes")  # fmt: skip


def run_cells(rows: Any) -> list[tuple[str, ...]]:
    """The configuration's finished runs (``sweep/run_rows.py``), a row of ``RUN_COLUMNS``
    cells each; none for a summary without them. A summary is read as stored: a row or value of
    the wrong type prints as missing (an en dash), never as an error."""
    out: list[tuple[str, ...]] = []
    for r in rows if isinstance(rows, list) else ():
        if not isinstance(r, dict):
            continue
        split = f" ({fmt(r.get('split'))})" if r.get("split") is not None else ""
        checks, calls = (_dict(r.get(k)) for k in ("checks", "calls"))
        out.append((
            f"{fmt(r.get('seed'))}{split}",
            _explore_cell(r.get("explore")),
            ", ".join(fmt(x) for x in _list(r.get("accepted"))) or "none",
            _pair(r.get("val")),
            _pair(r.get("test")),
            _signed(r.get("vs_placebo")),
            "; ".join(f"{_short(t)} {_pair(v)}" for t, v in checks.items()) or "–",
            ", ".join(f"{fmt(role)} {fmt(n)}" for role, n in calls.items()) or "–",
            _number(r.get("minutes"), "{:.0f}"),
        ))  # fmt: skip
    return out


def run_lines(rows: Any) -> list[str]:
    """``run_cells`` as a Markdown table (nothing when there are no rows)."""
    cells = run_cells(rows)
    if not cells:
        return []
    head = ["", "| " + " | ".join(RUN_COLUMNS) + " |", "|" + "---|" * len(RUN_COLUMNS)]
    return head + ["| " + " | ".join(row) + " |" for row in cells]


def _dict(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _number(value: Any, form: str = "{:.2f}") -> str:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return form.format(value) if ok else "–"


def _signed(value: Any) -> str:
    return _number(value, "{:+.2f}")


def _pair(value: Any) -> str:
    """``[initial, best]`` as "0.00 → 0.96"."""
    pair = _list(value)
    return f"{_number(pair[0])} → {_number(pair[1])}" if len(pair) == 2 else "–"


def _short(target: Any) -> str:
    """A check target's name without its provider (``llamacpp:qwen2.5-coder-0.5b``)."""
    return str(target).rsplit(":", 1)[-1]


def _explore_cell(steps: Any) -> str:
    """Per step: "1 of 4 in 14" (solved of the failed train items, in so many attempts); a step
    with no failed item: "nothing failed"; none explored at all: "–"."""
    out = []
    for s in _list(steps):
        if not isinstance(s, dict):
            continue
        if s.get("items") == 0:
            out.append("nothing failed")
        else:
            found, items, attempts = (fmt(s.get(k)) for k in ("found", "items", "attempts"))
            out.append(f"{found} of {items} in {attempts}")
    return "; ".join(out) or "–"


def arm_lines(arms: list[dict[str, Any]]) -> list[str]:
    """The grid's configurations against its first, paired on the seeds both finished (none
    for a sweep without a grid, or a summary written before arms were compared)."""
    if not arms:
        return []
    lines = ["", f"## Against {params_label(arms[0]['reference'])} (same seeds, same test items)",
             "", "| configuration | seeds paired | test_best minus the reference, mean [95% CI] "
             "| per seed | per test item |", "|---|---|---|---|---|"]  # fmt: skip
    for arm in arms:
        diff = arm.get("test_best_diff") or {}
        per_seed = ", ".join(fmt(v) for v in diff.get("values", []))
        seeds = ", ".join(str(x) for x in arm.get("seeds", [])) or "none yet"
        item = paired_text(arm.get("paired_test") or {})
        lines.append(
            f"| {params_label(arm['params'])} | {seeds} | {interval_text(diff)} | {per_seed} "
            f"| {item} |"
        )
    return lines


TRANSFER_COLUMNS = ("target", "initial", "best", "gain mean [95% CI]", "gain per seed",
                    "best vs initial, per item")  # fmt: skip


def transfer_rows(config: dict[str, Any]) -> list[tuple[str, ...]]:
    """One row per target of one grid configuration of ``transfer_summary.json``, and under it
    the row of the best skill's rules alone when the transfer scored them (``--rules-alone``)."""
    rows: list[tuple[str, ...]] = []
    for target, cell in (config.get("targets") or {}).items():
        name = f"{target} (main target)" if cell.get("main") else target
        rows.append(_transfer_row(name, cell.get("initial") or {}, cell))
        rules = cell.get("rules_alone")
        if isinstance(rules, dict):
            rows.append(_transfer_row(f"{target}: rules alone", cell.get("initial") or {}, rules))
    return rows


def _transfer_row(name: str, initial: dict[str, Any], cell: dict[str, Any]) -> tuple[str, ...]:
    gain = cell.get("gain") or {}
    test = cell.get("paired_test") or {}
    paired = "no pairs" if test.get("p_value") is None else (
        f"+{test['wins']} / -{test['losses']} / ={test['ties']}, {p_text(test['p_value'])}"
    )  # fmt: skip
    return (
        name,
        interval_text(initial),
        interval_text(cell.get("best") or {}),
        interval_text(gain),
        ", ".join(fmt(v) for v in gain.get("values", [])),
        paired,
    )


def render_transfer_text(summary: dict[str, Any]) -> str:
    """The transfer matrix (``skillgrad transfer``) as Markdown: a table per configuration."""
    s = summary
    rules = (
        "- rules alone: each best skill with its worked examples cut (its run's "
        "_eval/best_skill.rules_alone), against the same initial skill"
    )
    lines = [
        f"# Transfer: {s['sweep_dir']} ({s['split']} split)",
        "",
        f"- runs scored: {s['runs_finished']} finished of {s['runs_total']}"
        + ("" if s["complete"] else " (the others are not finished: left out)"),
        "- per target: the initial and the best skill of every run, on the run's own split; "
        "(main target): the sweep's own target, from the runs themselves (no calls)",
        f"- intervals: {s['interval']}; per item: {s['paired_test']}",
    ]
    lines += [rules] if s.get("rules_alone") else []
    for c in s["configs"]:
        lines += ["", f"## {params_label(c['params'])}  ({c['runs_finished']} seeds)", ""]
        lines += ["| " + " | ".join(TRANSFER_COLUMNS) + " |", "|---" * len(TRANSFER_COLUMNS) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in transfer_rows(c)]
    return "\n".join(lines) + "\n"


def load_summary_or_fail(sweep_dir: Path) -> dict[str, Any]:
    from skillgrad.sweep.summary import build_sweep_summary, load_sweep_summary

    summary = load_sweep_summary(sweep_dir)
    if summary is None:  # interrupted before it was written: compute it from the runs
        summary = build_sweep_summary(sweep_dir)
    if not summary.get("configs"):
        raise RunDirError(f"{sweep_dir}: the sweep has no configurations")
    return summary


__all__ = [
    "TRANSFER_COLUMNS",
    "arm_lines",
    "exploration_text",
    "interval_text",
    "load_summary_or_fail",
    "paired_text",
    "params_label",
    "render_sweep_text",
    "render_transfer_text",
    "transfer_rows",
]
