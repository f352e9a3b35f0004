"""Callbacks: observers of the training loop (progress, trackers, early stopping).

A callback receives every event that is also written to ``events.jsonl`` and may only *request*
things through ``Control`` (stop the run); it never touches the training state.

Events (``event["event"]``) and their main fields:
    run_start    run_dir, config, resumed
    noise_floor  repeats, items, calls, flip_rate, noise_threshold, ..., message (A/A)
    headroom     items, val_score, at_ceiling, at_floor, saturated, detectable, ok, message
    step_start   step, epoch, lr, k
    stage        step, stage ("rollout" | "reflect" | "aggregate" | "select" | "gate" | ...), info
    step_end     record (a StepRecord as dict), skill (text in force after the step)
    slow_update  epoch, categories, accepted
    meta_skill   epoch, memo
    epoch_end    epoch
    warning      message
    run_end      summary (as written to summary.json)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from skillgrad.runs.records import PowerCheck
from skillgrad.tasks.episode import ends_text


@dataclass
class Control:
    """What a callback may ask of the loop."""

    stop_requested: bool = False
    stop_reason: str = ""
    notes: list[str] = field(default_factory=list)

    def request_stop(self, reason: str) -> None:
        self.stop_requested = True
        self.stop_reason = reason


@runtime_checkable
class Callback(Protocol):
    """Contract: ``on_event`` is called synchronously, in order, for every event; it must not
    raise for events it does not know, and must not block for long (hand work to a thread)."""

    def on_event(self, event: dict[str, Any], control: Control) -> None: ...


def describe_event(event: dict[str, Any]) -> tuple[int, str] | None:
    """The log level and one plain-text line for an event (None: only logged at DEBUG).

    The run logs every event under the ``skillgrad.events`` logger with this text; the console
    view is a logging handler on it (``skillgrad.cli.console``)."""
    name = event.get("event")
    if name == "run_start":
        verb = "resuming" if event.get("resumed") else "starting"
        return logging.INFO, f"{verb} run in {event['run_dir']}"
    if name == "preflight":
        return logging.INFO, _preflight_line(event)
    if name == "power_check":
        return logging.INFO, PowerCheck.from_json(event).line()
    if name == "baseline":
        return logging.INFO, f"baseline val score {event['val_score']:.3f}"
    if name in ("noise_floor", "headroom"):  # train/trust/noise.py, train/trust/headroom.py
        level = logging.INFO if event.get("ok", True) else logging.WARNING
        return level, str(event["message"])
    if name == "step_end":
        return logging.INFO, _step_line(event["record"])
    if name == "slow_update":
        return logging.INFO, f"slow update epoch {event['epoch']}: {event['categories']}"
    if name == "meta_skill":
        return logging.INFO, f"meta skill epoch {event['epoch']} ({len(event['memo'])} chars)"
    if name == "explore":  # train/explore.py
        return logging.INFO, (
            f"step {event['step']} exploration: {event['found']} of {event['items']} failed "
            f"train items solved in {event['attempts']} attempts"
            + (f", {event['repeats']} repeating an earlier one" if event.get("repeats") else "")
            + (f"; ended: {ends}" if (ends := ends_text(event.get("ends"))) else "")
        )
    if name == "warning":
        return logging.WARNING, str(event["message"])
    if name == "stopped":
        return logging.ERROR, f"stopped ({event['status']}): {event['error']}"
    return None


def _preflight_line(e: dict[str, Any]) -> str:
    calls, tokens, cost = e["calls"], e["tokens"], e["cost_usd"]
    unpriced = [r for r, ok in e["priced"].items() if not ok]
    note = f" ({', '.join(unpriced)} unpriced: local or unknown model)" if unpriced else ""
    checks = (
        f", check targets {calls['check_target']} calls / {tokens['check_target']:,} tok"
        if "check_target" in calls
        else ""
    )
    return (
        f"preflight (upper bound, {e['steps']} steps): optimizer {calls['optimizer']} calls / "
        f"{tokens['optimizer']:,} tok, target {calls['target']} calls / {tokens['target']:,} tok"
        f"{checks}, cost <= ${sum(cost.values()):.2f}{note}"
    )


def _gate_text(r: dict[str, Any]) -> str:
    """The gate's verdict with both scores named: which one is the candidate's matters."""
    cand, inc = r.get("candidate_score"), r["incumbent_score"]
    if r.get("leak_refused"):
        return "candidate refused (copies train/val data), not evaluated"
    if cand is None and r.get("stall_reason"):
        return f"could not learn: {r['stall_reason']}"
    if cand is None:
        return "no candidate (no edit applied)" if not r.get("n_applied") else "not evaluated"
    refusal = next((c for c in r.get("check_targets") or [] if c["verdict"] == "refused"), None)
    if refusal is not None:  # the main gate accepted it; another target lost too much
        return f"val candidate {cand:.3f} vs incumbent {inc:.3f}: {refusal['reason']}"
    if r.get("early_rejected"):
        done, total = r.get("gate_evaluated"), r.get("gate_total")
        if not done:
            return f"rejected before evaluation (incumbent {inc:.3f}: not beatable on val)"
        return (
            f"val candidate {cand:.3f} vs incumbent {inc:.3f} on {done}/{total} items: "
            "rejected early (cannot win)"
        )
    return f"val candidate {cand:.3f} vs incumbent {inc:.3f}: " + (
        "accepted" if r["accepted"] else "rejected"
    )


def _step_line(r: dict[str, Any]) -> str:
    tokens = sum(r.get("tokens", {}).values())
    return (
        f"step {r['step']:>3} ep {r['epoch']} {r['kind']:<11} lr {r['lr']:.2f} "
        f"train {r['train_score']:.3f} | edits {r['n_proposed']}->{r['n_applied']} | "
        f"{_gate_text(r)} | best {r['best_score']:.3f} | "
        f"{r['skill_tokens']} tok skill | {tokens} tok | ${r.get('cum_cost', 0):.4f}"
    )


__all__ = ["Callback", "Control", "describe_event"]
