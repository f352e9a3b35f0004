"""What the dashboard shows, computed from a run directory on every request.

Live runs: ``history.json`` is rewritten atomically by the loop, and ``step_end`` events carry
the same records earlier, so both are merged (history wins, events fill in newer steps).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillgrad.report.load import RunData, load_run, step_details

POINT_KEYS = ("step", "epoch", "kind", "val_score", "best_score", "train_score", "accepted",
              "lr", "n_applied", "skill_tokens", "cum_cost")  # fmt: skip


def live_history(run: RunData) -> list[dict[str, Any]]:
    """history.json records plus newer ``step_end`` records from events.jsonl, by step."""
    by_step: dict[int, dict[str, Any]] = {}
    for ev in run.events:
        rec = ev.get("record") if ev.get("event") == "step_end" else None
        if isinstance(rec, dict) and isinstance(rec.get("step"), int):
            by_step[rec["step"]] = rec
    for rec in run.history:
        if isinstance(rec.get("step"), int):
            by_step[rec["step"]] = rec
    return [by_step[k] for k in sorted(by_step)]


def run_overview(run: RunData) -> dict[str, Any]:
    hist = live_history(run)
    best = next((r.get("best_score") for r in reversed(hist) if r.get("best_score") is not None),
                None)  # fmt: skip
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
    points = [{k: r.get(k) for k in POINT_KEYS} for r in live_history(run)]
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
        if rec.get("kind") == "slow_update":
            continue
        step = int(rec["step"])
        det = step_details(run.root, step)
        gate = det["gate"] or {}
        # {"result": GateResult | null (no candidate to gate), "items": {...}}
        gate = (gate.get("result") or {}) if "result" in gate else gate
        out.append({
            "step": step,
            "accepted": bool(rec.get("accepted")),
            "gate_reason": gate.get("reason") or rec.get("gate_reason", ""),
            "incumbent": gate.get("incumbent_score", rec.get("incumbent_score")),
            "candidate": gate.get("candidate_score", rec.get("candidate_score")),
            "selected": _edits_of(det["selection"], "selected"),
            "dropped": _edits_of(det["selection"], "dropped"),
            "applied": _apply_rows(det["apply_report"]),
        })  # fmt: skip
    return out


def accepted_edits(run: RunData) -> list[dict[str, Any]]:
    """patch_log.jsonl flattened for display, newest first."""
    rows = []
    for e in run.patch_log:
        edit = e.get("edit") or {}
        rows.append({k: e.get(k) for k in ("step", "epoch", "source", "skill_version")} | {
            k: edit.get(k) for k in ("op", "section", "content", "rationale", "trajectory_ids")
        })  # fmt: skip
    return list(reversed(rows))


def load(run_dir: Path) -> RunData:
    return load_run(run_dir)


__all__ = ["accepted_edits", "live_history", "load", "run_overview", "run_points", "step_edits"]
