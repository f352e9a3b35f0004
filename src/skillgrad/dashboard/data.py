"""What the dashboard shows, computed from a run directory when its files change.

Live runs: ``history.json`` is rewritten atomically by the loop, and ``step_end`` events carry
the same records earlier, so both are merged (history wins, events fill in newer steps).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillgrad.runs.layout import RunPaths
from skillgrad.runs.records import StepRecord
from skillgrad.runs.view import RunData, load_run, parse_history, step_details


def point(r: StepRecord) -> dict[str, Any]:
    """The compact JSON of one step the run page plots."""
    return {
        "step": r.step, "epoch": r.epoch, "kind": r.kind, "val_score": r.val_score,
        "best_score": r.best_score, "train_score": r.train_score, "accepted": r.accepted,
        "lr": r.lr, "n_applied": r.n_applied, "skill_tokens": r.skill_tokens,
        "cum_cost": r.cum_cost, "verdict": r.verdict, "n_leaks": len(r.leaks),
    }  # fmt: skip


def live_history(run: RunData) -> list[StepRecord]:
    """history.json records plus newer ``step_end`` records from events.jsonl, by step."""
    events = [
        ev["record"]
        for ev in run.events
        if ev.get("event") == "step_end" and isinstance(ev.get("record"), dict)
    ]
    by_step: dict[int, StepRecord] = {}
    for rec in parse_history(events, f"{run.paths.events} (step_end records)"):
        by_step[rec.step] = rec
    for rec in run.history:
        by_step[rec.step] = rec
    return [by_step[k] for k in sorted(by_step)]


def run_overview(run: RunData) -> dict[str, Any]:
    hist = live_history(run)
    best = hist[-1].best_score if hist else None
    last = run.events[-1] if run.events else {}
    return {
        "name": run.root.name,
        "status": run.status,
        "steps": len(hist),
        "best_score": best,
        "last_event": {k: last.get(k) for k in ("t", "event", "step", "stage") if k in last},
    }


def run_points(run: RunData) -> dict[str, Any]:
    """The JSON the run page polls: overview plus one compact point per step."""
    points = [point(r) for r in live_history(run)]
    current = run.skills[max(run.skills)] if run.skills else None
    skills = {"current_skill": current, "best_skill": run.best_skill}
    return run_overview(run) | {"points": points} | skills


def _edits_of(sel: dict[str, Any] | None, key: str) -> list[dict[str, Any]]:
    rows = (sel or {}).get(key) or []
    out = []
    for row in rows:
        if isinstance(row, dict) and "edit" in row:
            out.append(dict(row["edit"]) | {"reason": row.get("reason", "")})
        elif isinstance(row, dict):
            out.append(dict(row))
    return out


def _apply_rows(report: Any) -> list[dict[str, Any]]:
    rows = report.get("results", report.get("edits", [])) if isinstance(report, dict) else report
    return [r for r in (rows or []) if isinstance(r, dict)]


def step_edits(run: RunData) -> list[dict[str, Any]]:
    """Per step: selected/dropped edits (with reasons), apply statuses and the gate verdict."""
    out = []
    for rec in live_history(run):
        if rec.kind == "slow_update":
            continue
        step = rec.step
        det = step_details(run.root, step)
        gate = det["gate"] or {}
        # {"result": GateResult | null (no candidate to gate), "items": {...}}
        gate = (gate.get("result") or {}) if "result" in gate else gate
        out.append({
            "step": step,
            "accepted": rec.accepted,
            "gate_reason": gate.get("reason") or rec.gate_reason,
            "incumbent": gate.get("incumbent_score", rec.incumbent_score),
            "candidate": gate.get("candidate_score", rec.candidate_score),
            "selected": _edits_of(det["selection"], "selected"),
            "dropped": _edits_of(det["selection"], "dropped"),
            "applied": _apply_rows(det["apply_report"]),
        })  # fmt: skip
    return out


def gate_steps(run: RunData) -> list[dict[str, Any]]:
    """Every accepted step's paired difference (candidate - incumbent on the val items both
    were scored on) with its interval, whether that is within noise (the lower end at or below
    0), and the items it flipped; records from before the paired fields show n/a."""
    out = []
    for r in live_history(run):
        if not r.accepted:
            continue
        out.append({
            "step": r.step, "kind": r.kind, "rule": r.gate_rule, "mean_diff": r.mean_diff,
            "diff_low": r.diff_low, "diff_high": r.diff_high,
            "within_noise": None if r.diff_low is None else r.diff_low <= 0.0,
            "fixed": list(r.fixed), "broken": list(r.broken), "missing": r.gate_missing,
        })  # fmt: skip
    return out


def leak_view(run: RunData) -> dict[str, Any]:
    """The answer-leak check (``train/screens/leaks.py``) for the run page: every step whose
    candidate
    copied train/val data verbatim (refused or only flagged), live from the step records, and
    the best skill's copied lines from ``summary.json`` (``best`` is None until the run has
    finished, or for runs written before the check existed)."""
    leaks = (run.summary or {}).get("leaks")
    steps = [
        {
            "step": r.step, "kind": r.kind, "refused": r.leak_refused, "accepted": r.accepted,
            "lines": [x.to_json() for x in r.leaks],
        }
        for r in live_history(run)
        if r.leaks
    ]  # fmt: skip
    if not isinstance(leaks, dict):
        return {"best": None, "reject": None, "ngram": None, "steps": steps}
    return {
        "best": list(leaks.get("best_skill") or []),
        "reject": bool(leaks.get("reject_leaks")),
        "ngram": leaks.get("ngram"),
        "steps": steps,
    }


def accepted_edits(run: RunData) -> list[dict[str, Any]]:
    """patch_log.jsonl flattened for display, newest first."""
    rows = []
    for e in run.patch_log:
        edit = e.get("edit") or {}
        rows.append({k: e.get(k) for k in ("step", "epoch", "source", "skill_version")} | {
            k: edit.get(k)
            for k in ("op", "file", "section", "content", "rationale", "trajectory_ids")
        })  # fmt: skip
    return list(reversed(rows))


def run_signature(run_dir: Path) -> tuple[tuple[str, int, int, int], ...]:
    """(name, inode, mtime_ns, size) of every file a loaded run depends on: equal signatures,
    equal RunData (writers replace files atomically, a new inode, or append to them)."""
    files = list(RunPaths(run_dir).read_by_view())
    for folder, pattern in (("skills", "skill_v*.md"), ("slow_update", "*/categories.json")):
        files += sorted((run_dir / folder).glob(pattern))
    sig = []
    for path in files:
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        sig.append((str(path.relative_to(run_dir)), st.st_ino, st.st_mtime_ns, st.st_size))
    return tuple(sig)


class RunCache:
    """Loaded runs (and their list overviews) kept until a file they depend on changes, so a
    page polling every second re-reads only the runs that are being written."""

    def __init__(self) -> None:
        self._runs: dict[Path, tuple[Any, RunData, dict[str, Any]]] = {}

    def load(self, run_dir: Path) -> RunData:
        return self._entry(run_dir)[0]

    def overview(self, run_dir: Path) -> dict[str, Any]:
        return self._entry(run_dir)[1]

    def _entry(self, run_dir: Path) -> tuple[RunData, dict[str, Any]]:
        sig = run_signature(run_dir)
        hit = self._runs.get(run_dir)
        if hit is not None and hit[0] == sig:
            return hit[1], hit[2]
        run = load_run(run_dir)
        self._runs[run_dir] = (sig, run, run_overview(run))
        return run, self._runs[run_dir][2]


def sweep_overviews(root: Path) -> list[dict[str, Any]]:
    """The sweeps at ``root`` (itself, or folders directly under it), summarised from their runs
    now (mean and 95% interval per grid configuration; runs still going are counted as such)."""
    from skillgrad.report.sweep import interval_text, params_label
    from skillgrad.sweep.plan import is_sweep_dir
    from skillgrad.sweep.summary import build_sweep_summary

    root = Path(root)
    dirs = [root] if is_sweep_dir(root) else sorted(p for p in root.glob("*") if is_sweep_dir(p))
    out = []
    for d in dirs:
        s = build_sweep_summary(d)
        configs = [
            {
                "params": params_label(c["params"]),
                "seeds": c["runs_finished"],
                "test_best": interval_text(c["test_best"]),
                "test_gain": interval_text(c["test_gain"]),
                "p_value": c["paired_test"]["p_value"],
            }
            for c in s["configs"]
        ]
        out.append({"name": d.name, "finished": s["runs_finished"], "total": s["runs_total"],
                    "configs": configs})  # fmt: skip
    return out


__all__ = [
    "RunCache",
    "accepted_edits",
    "gate_steps",
    "live_history",
    "point",
    "run_overview",
    "run_points",
    "run_signature",
    "step_edits",
    "sweep_overviews",
]
