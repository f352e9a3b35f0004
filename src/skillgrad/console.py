"""Console output during training: Rich progress bars per stage and a line per step."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from skillgrad.callbacks import Control
from skillgrad.errors import SkillgradError


def print_error(exc: BaseException) -> None:
    """One error line on stderr: not re-wrapped (greppable), brackets in ids kept literally."""
    Console(stderr=True, soft_wrap=True, emoji=False).print(
        f"[bold red]error:[/] {escape(str(exc))}"
    )


def missing_extra(exc: ImportError, extra: str) -> SkillgradError:
    """The error for a command whose optional dependencies are not installed."""
    return SkillgradError(
        f"this needs the '{extra}' extra ({exc}); install it: pip install 'skillgrad[{extra}]'"
    )


class RichProgress:
    """The ``train.progress.Progress`` seam drawn as Rich bars (items done, ETA, last score)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._bars = Progress(
            TextColumn("[bold]{task.description:<14}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[info]}"),
            console=console,
            transient=True,
        )
        self._tasks: dict[str, TaskID] = {}
        self._sums: dict[str, tuple[float, int]] = {}
        self.usage: Callable[[], dict[str, float]] | None = None  # the run's ledger totals

    def set_usage_source(self, usage: Callable[[], dict[str, float]]) -> None:
        """Show the run's tokens and cost so far beside every bar (set once the run exists)."""
        self.usage = usage

    def __enter__(self) -> RichProgress:
        self._bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bars.stop()

    def start(self, stage: str, total: int) -> None:
        if stage in self._tasks:
            self._bars.remove_task(self._tasks.pop(stage))
        self._tasks[stage] = self._bars.add_task(stage, total=total, info="")
        self._sums[stage] = (0.0, 0)

    def advance(self, stage: str, n: int = 1, info: str = "") -> None:
        if stage not in self._tasks:
            return
        total, count = self._sums[stage]
        try:
            total, count = total + float(info), count + 1
            info = f"mean score {total / count:.3f}"
        except ValueError:
            pass
        if self.usage is not None:
            u = self.usage()
            tokens = int(u["prompt_tokens"] + u["completion_tokens"])
            info = f"{info} · {tokens:,} tok · ${u['cost']:.4f}"
        self._sums[stage] = (total, count)
        self._bars.update(self._tasks[stage], advance=n, info=info)

    def finish(self, stage: str) -> None:
        if stage in self._tasks:
            self._bars.remove_task(self._tasks.pop(stage))


class ConsoleCallback:
    """One line per step (score, verdict, lr, length, tokens, cost) and key run events."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def on_event(self, event: dict[str, Any], control: Control) -> None:
        name = event.get("event")
        if name == "run_start":
            verb = "resuming" if event.get("resumed") else "starting"
            self.console.print(f"[bold]{verb}[/] run in {event['run_dir']}")
        elif name == "preflight":
            self.console.print(_preflight_line(event))
        elif name == "baseline":
            self.console.print(f"baseline val score {event['val_score']:.3f}")
        elif name == "step_end":
            self.console.print(_step_line(event["record"]))
        elif name == "slow_update":
            self.console.print(f"slow update epoch {event['epoch']}: {event['categories']}")
        elif name == "meta_skill":
            self.console.print(f"meta skill epoch {event['epoch']} ({len(event['memo'])} chars)")
        elif name == "warning":
            self.console.print(f"[yellow]warning:[/] {event['message']}")
        elif name == "stopped":
            self.console.print(f"[red]stopped[/] ({event['status']}): {event['error']}")


def _preflight_line(e: dict[str, Any]) -> str:
    calls, tokens, cost = e["calls"], e["tokens"], e["cost_usd"]
    unpriced = [r for r, ok in e["priced"].items() if not ok]
    note = f" ({', '.join(unpriced)} unpriced: local or unknown model)" if unpriced else ""
    return (
        f"preflight (upper bound, {e['steps']} steps): optimizer {calls['optimizer']} calls / "
        f"{tokens['optimizer']:,} tok, target {calls['target']} calls / {tokens['target']:,} tok, "
        f"cost <= ${cost['optimizer'] + cost['target']:.2f}{note}"
    )


def _step_line(r: dict[str, Any]) -> str:
    verdict = "[green]accepted[/]" if r["accepted"] else "[dim]rejected[/]"
    tokens = sum(r.get("tokens", {}).values())
    cand = r.get("candidate_score")
    cand_text = "-" if cand is None else f"{cand:.3f}"
    return (
        f"step {r['step']:>3} ep {r['epoch']} {r['kind']:<11} lr {r['lr']:.2f} "
        f"train {r['train_score']:.3f} | edits {r['n_proposed']}->{r['n_applied']} | gate "
        f"{r['incumbent_score']:.3f} vs {cand_text} {verdict} | best {r['best_score']:.3f} | "
        f"{r['skill_tokens']} tok skill | {tokens} tok | ${r.get('cum_cost', 0):.4f}"
    )


__all__ = ["ConsoleCallback", "RichProgress", "missing_extra", "print_error"]
