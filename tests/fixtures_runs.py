"""Build a realistic run directory exactly as docs/run-directory.md describes it.

Used by the report, provenance, compare, tracker and dashboard tests so they run without the
training loop. ``build_run`` writes a finished (or in-progress) run; ``append_step`` adds one more
step to a run the way the loop would while it is still writing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from skillgrad.runs.io import append_jsonl, atomic_write_json, atomic_write_text, write_jsonl
from skillgrad.runs.layout import RunPaths
from skillgrad.types import Edit, Message, Score, Trajectory, to_json

INITIAL_SKILL = """# Echo skill

## Task
Repeat the word given by the user.

## Output format
Answer with the word only.
"""

_T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


@dataclass(frozen=True)
class PlannedStep:
    """One step of the scripted run: the edits proposed and whether the gate accepts them."""

    step: int
    epoch: int
    kind: str
    edits: tuple[Edit, ...]
    accepted: bool
    val_score: float
    source: str = "reflect"


def _edit(op: str, section: str, content: str, anchor: str = "", why: str = "") -> Edit:
    return Edit(
        op=op,  # type: ignore[arg-type]
        section=section,
        content=content,
        anchor=anchor,
        rationale=why or f"failures show the skill lacks: {content[:40]}",
        support=2,
        trajectory_ids=("train-1", "train-3"),
    )


PLAN: tuple[PlannedStep, ...] = (
    PlannedStep(1, 1, "step", (_edit("add", "Output format", "Write the word in UPPER CASE."),),
                True, 0.5),
    PlannedStep(2, 1, "step", (_edit("add", "Task", "Think step by step first."),), False, 0.5),
    PlannedStep(3, 1, "step",
                (_edit("add", "Rules", "- Never add punctuation.\n- Do not explain."),),
                True, 0.667),
    PlannedStep(4, 2, "step", (_edit("replace", "Task", "Repeat exactly the single word given by "
                                     "the user.", anchor="Repeat the word given by the user."),),
                True, 0.833),
    PlannedStep(5, 2, "step", (_edit("delete", "Rules", "", anchor="- Do not explain."),),
                False, 0.833),
    PlannedStep(6, 2, "step", (_edit("insert_after", "Rules", "- Keep the original spelling.",
                                     anchor="- Never add punctuation."),), True, 1.0),
    PlannedStep(7, 2, "slow_update", (_edit("add", "Rules", "- Ignore surrounding whitespace."),),
                True, 0.833, source="slow_update"),
)  # fmt: skip


def apply_edit(skill: str, edit: Edit) -> str:
    """A small, deterministic editor good enough for the planned edits above."""
    lines = skill.rstrip("\n").split("\n")
    if edit.op == "replace":
        return skill.replace(edit.anchor, edit.content)
    if edit.op == "delete":
        return "\n".join(x for x in lines if x != edit.anchor) + "\n"
    if edit.op == "insert_after":
        i = lines.index(edit.anchor)
        return "\n".join([*lines[: i + 1], *edit.content.split("\n"), *lines[i + 1 :]]) + "\n"
    heading = f"## {edit.section.split('>')[-1].strip()}"
    if heading not in lines:
        return "\n".join([*lines, "", heading, edit.content]) + "\n"
    i = lines.index(heading) + 1
    while i < len(lines) and not lines[i].startswith("#") and lines[i].strip():
        i += 1
    return "\n".join([*lines[:i], *edit.content.split("\n"), *lines[i:]]) + "\n"


def _tokens(text: str) -> int:
    return len(text.split())


def _ts(i: int) -> str:
    return (_T0 + timedelta(seconds=30 * i)).isoformat()


def _config(name: str, lr: float, overrides: dict[str, Any] | None) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "run_name": name,
        "task": {"name": "toy", "n_train": 8},
        "target": {"model": "function:fake", "temperature": 0.0},
        "optimizer": {"model": "function:fake", "lr": lr, "lr_decay": 0.5, "batch_size": 4},
        "train": {"epochs": 2, "steps_per_epoch": 3, "slow_update": True, "seed": 0},
        "env": {"output_root": "runs", "api_key": "***"},
        "no_gate": False,
        "resolved_at": _T0.isoformat(),
    }
    for key, value in (overrides or {}).items():
        node = cfg
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return cfg


def _step_files(paths: RunPaths, plan: PlannedStep, before: str, candidate: str, lr: float) -> None:
    d = paths.step_dir(plan.step) if plan.kind == "step" else paths.slow_dir(plan.epoch)
    trajs = [
        Trajectory(
            item_id=f"train-{i}",
            skill_hash=f"h{plan.step}",
            messages=(Message("system", before), Message("user", f"Word: w{i}")),
            output=f"W{i}" if i % 2 else f"w{i}",
            score=Score(float(i % 2), bool(i % 2), "correct" if i % 2 else "expected upper case"),
        )
        for i in range(4)
    ]
    edits = [to_json(e) for e in plan.edits]
    if plan.kind == "slow_update":
        write_jsonl(d / "pairs.jsonl", [{"item_id": "val-2", "before": 0.0, "after": 1.0}])
        cats = {"val-0": "stable_success", "val-1": "improved", "val-2": "persistent_fail"}
        cats |= {"val-3": "regressed", "val-4": "stable_success"}
        counts: dict[str, int] = {}
        for c in cats.values():
            counts[c] = counts.get(c, 0) + 1
        atomic_write_json(d / "categories.json", {"counts": counts, "items": cats})
        atomic_write_json(d / "guidance.json", {"guidance": "keep rules short", "edits": edits})
    else:
        write_jsonl(d / "trajectories.jsonl", trajs)
        reflections = [{"minibatch": ["train-1", "train-3"], "mode": "reflect", "output": edits}]
        atomic_write_json(d / "reflections.json", reflections)
        merged = [e | {"support": 2} for e in edits]
        atomic_write_json(d / "aggregate.json", {"edits": merged, "conflicts": []})
        dropped = [{"edit": to_json(_edit("add", "Task", "Be verbose.")), "reason": "k=1 reached"}]
        sel = {"lr": lr, "k": max(1, round(lr)), "selected": edits, "dropped": dropped}
        atomic_write_json(d / "selection.json", sel)
        apply = [{"edit": e, "status": "applied", "reason": ""} for e in edits]
        atomic_write_json(d / "apply_report.json", apply)
    atomic_write_text(d / "candidate.md", candidate)
    result = {
        "accepted": plan.accepted,
        "incumbent_score": round(plan.val_score - 0.1, 3),
        "candidate_score": plan.val_score if plan.accepted else round(plan.val_score - 0.2, 3),
        "evaluated": 6 if plan.accepted else 3,
        "total": 6,
        "early_rejected": not plan.accepted,
        "reason": "candidate better" if plan.accepted else "early reject: cannot catch up",
    }
    gate = {"result": result, "items": {f"val-{i}": float(i % 3 != 2) for i in range(6)}}
    atomic_write_json(d / "gate.json", gate)


def _record(
    plan: PlannedStep,
    lr: float,
    skill: str,
    cand: str,
    version: int,
    best: float,
    cum: dict[str, float],
) -> dict[str, Any]:
    calls = {"optimizer": 2, "target": 10}
    cost = {"optimizer": 0.002, "target": 0.001}
    cum["cost"] += sum(cost.values())
    cum["calls"] += sum(calls.values())
    n = len(plan.edits)
    return {
        "step": plan.step, "epoch": plan.epoch, "kind": plan.kind, "lr": lr,
        "k": max(1, round(lr)), "train_score": round(plan.val_score - 0.125, 3),
        "n_failures": 0, "n_reflections": 2, "n_failed_reflections": 0, "n_proposed": n + 1,
        "n_merged": n + 1, "n_conflicts": 0, "n_selected": n, "n_applied": n,
        "accepted": plan.accepted,
        "incumbent_score": round(plan.val_score - 0.1, 3),
        "candidate_score": plan.val_score if plan.accepted else round(plan.val_score - 0.2, 3),
        "gate_evaluated": 6 if plan.accepted else 3, "gate_total": 6,
        "early_rejected": not plan.accepted, "val_score": plan.val_score, "best_score": best,
        "skill_version": version, "skill_tokens": _tokens(skill),
        "candidate_tokens": _tokens(cand), "calls": calls,
        "tokens": {"optimizer": 900, "target": 400}, "cost": cost,
        "cum_cost": round(cum["cost"], 6), "cum_calls": int(cum["calls"]),
        "timings": {"rollout": 0.5, "reflect": 1.0, "gate": 0.7},
    }  # fmt: skip


def build_run(
    root: Path,
    name: str = "demo",
    *,
    n_steps: int = len(PLAN),
    finished: bool = True,
    lr: float = 2.0,
    score_shift: float = 0.0,
    config_overrides: dict[str, Any] | None = None,
) -> Path:
    """Write a run directory with the first ``n_steps`` planned steps; returns its path.

    ``finished=False`` leaves it as a run still in progress: no summary.json / report.md.
    ``score_shift`` lowers every score (to make two runs differ for ``compare``).
    """
    paths = RunPaths(root / name)
    cfg = _config(name, lr, config_overrides)
    atomic_write_json(paths.config, cfg)
    atomic_write_json(paths.splits, {s: [f"{s}-{i}" for i in range(6)] for s in ("train", "val")})
    atomic_write_json(paths.conflicts, [])
    atomic_write_text(paths.skill_version(0), INITIAL_SKILL)
    append_jsonl(paths.events, {"t": _ts(0), "event": "run_start", "run_dir": str(paths.root),
                                "config": cfg, "resumed": False})  # fmt: skip
    skill, version, best, best_version, best_step = INITIAL_SKILL, 0, 0.5 - score_shift, 0, 0
    cum = {"cost": 0.0, "calls": 0.0}
    history: list[dict[str, Any]] = []
    for plan in PLAN[:n_steps]:
        plan = PlannedStep(**{**plan.__dict__, "val_score": plan.val_score - score_shift})
        cur_lr = lr * (0.5 ** sum(1 for r in history if not r["accepted"]))
        candidate = skill
        for e in plan.edits:
            candidate = apply_edit(candidate, e)
        _step_files(paths, plan, skill, candidate, cur_lr)
        # Like the loop: every step writes the skill in force after it (version = step).
        version = plan.step
        if plan.accepted:
            skill = candidate
        atomic_write_text(paths.skill_version(version), skill)
        if plan.accepted:
            for e in plan.edits:
                append_jsonl(paths.patch_log, {
                    "step": plan.step, "epoch": plan.epoch, "source": plan.source,
                    "edit": to_json(e), "match": "exact",
                    "gate_before": round(plan.val_score - 0.1, 3),
                    "gate_after": plan.val_score, "skill_version": version,
                })  # fmt: skip
            if plan.val_score > best:
                best, best_version, best_step = plan.val_score, version, plan.step
                atomic_write_text(paths.best_skill, skill)
        rec = _record(plan, cur_lr, skill, candidate, version, best, cum)
        history.append(rec)
        _emit_step_events(paths, plan, rec, skill)
    if not paths.best_skill.exists():
        atomic_write_text(paths.best_skill, INITIAL_SKILL)
    atomic_write_json(paths.history, history)
    if finished:
        _finish(paths, name, history, best_version, best_step, score_shift)
    return paths.root


def _emit_step_events(paths: RunPaths, plan: PlannedStep, rec: dict[str, Any], skill: str) -> None:
    i = plan.step * 3
    if plan.kind == "slow_update":
        cats = json.loads((paths.slow_dir(plan.epoch) / "categories.json").read_text())
        append_jsonl(
            paths.events,
            {
                "t": _ts(i),
                "event": "slow_update",
                "epoch": plan.epoch,
                "categories": cats["counts"],
                "accepted": plan.accepted,
            },
        )
    else:
        append_jsonl(
            paths.events,
            {
                "t": _ts(i),
                "event": "step_start",
                "step": plan.step,
                "epoch": plan.epoch,
                "lr": rec["lr"],
                "k": rec["k"],
            },
        )
        append_jsonl(
            paths.events,
            {"t": _ts(i + 1), "event": "stage", "step": plan.step, "stage": "gate", "info": {}},
        )
    append_jsonl(paths.events, {"t": _ts(i + 2), "event": "step_end", "record": rec,
                                "skill": skill})  # fmt: skip


def append_step(run_dir: Path, val_score: float, accepted: bool = True) -> dict[str, Any]:
    """Append one more step to history.json and events.jsonl, as a live run would."""
    paths = RunPaths(run_dir)
    history = json.loads(paths.history.read_text())
    last = history[-1]
    step = int(last["step"]) + 1
    rec = dict(last, step=step, kind="step", accepted=accepted, val_score=val_score,
               best_score=max(float(last["best_score"]), val_score))  # fmt: skip
    history.append(rec)
    atomic_write_json(paths.history, history)
    append_jsonl(paths.events, {"t": _ts(step * 3), "event": "step_end", "record": rec,
                                "skill": paths.best_skill.read_text()})  # fmt: skip
    return rec


def _finish(
    paths: RunPaths,
    name: str,
    history: list[dict[str, Any]],
    best_version: int,
    best_step: int,
    shift: float,
) -> None:
    accepted = [r for r in history if r["accepted"]]
    applied = sum(r["n_applied"] for r in history)
    n_acc = sum(r["n_applied"] for r in accepted)
    summary = {
        "run_name": name, "status": "finished", "stop_reason": "all epochs done",
        "steps": len(history), "epochs_completed": max(r["epoch"] for r in history),
        "val_initial": 0.5 - shift, "val_best": max(r["best_score"] for r in history),
        "best_step": best_step, "best_version": best_version,
        "test_initial": 0.5 - shift, "test_best": 0.833 - shift,
        "skill_tokens_initial": _tokens(INITIAL_SKILL),
        "skill_tokens_best": _tokens(paths.best_skill.read_text()),
        "edits_proposed": sum(r["n_proposed"] for r in history), "edits_applied": applied,
        "edits_accepted": n_acc, "acceptance_rate": n_acc / applied if applied else 0.0,
        "steps_accepted": len(accepted), "persistent_failures": ["val-2"],
        "usage": {
            "optimizer": {"calls": 14, "prompt_tokens": 5000, "completion_tokens": 1300,
                          "cost": 0.014},
            "target": {"calls": 70, "prompt_tokens": 2400, "completion_tokens": 400,
                       "cost": 0.007},
            "all": {"calls": 84, "prompt_tokens": 7400, "completion_tokens": 1700,
                    "cost": 0.021},
        },
        "no_gate": False, "warnings": [], "nondeterministic_scorers": [],
    }  # fmt: skip
    atomic_write_json(paths.summary, summary)
    atomic_write_text(paths.report, f"# Run {name}\n\nbest val {summary['val_best']}\n")
    append_jsonl(paths.events, {"t": _ts(999), "event": "run_end", "summary": summary})


__all__ = ["INITIAL_SKILL", "PLAN", "append_step", "apply_edit", "build_run"]
