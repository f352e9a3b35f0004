"""Callbacks: observers of the training loop (progress, trackers, early stopping).

A callback receives every event that is also written to ``events.jsonl`` and may only *request*
things through ``Control`` (stop the run); it never touches the training state.

Events (``event["event"]``) and their main fields:
    run_start    run_dir, config, resumed
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

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


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


__all__ = ["Callback", "Control"]
