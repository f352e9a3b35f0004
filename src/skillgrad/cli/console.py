"""Console output: the one pair of consoles (``out`` for results, ``err`` for messages), the one
exit-code rule of every command (``exits``), Rich progress bars per stage, and the ``skillgrad``
logger drawn on ``err`` (a line per step and run event, warnings and errors)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
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
from rich.text import Text

from skillgrad.errors import BudgetExceeded, SkillgradError
from skillgrad.redact import redact_message

# Rich reads sys.stdout / sys.stderr at each print, so module-level consoles follow redirection.
# Lines are never re-wrapped (logs and CI stay greppable, reports and YAML keep their lines).
out = Console(emoji=False, soft_wrap=True)
err = Console(stderr=True, emoji=False, soft_wrap=True)

P = ParamSpec("P")
R = TypeVar("R")
RESUME_HINT = "interrupted; re-run the same command to resume"


def print_error(exc: BaseException) -> None:
    """One error line on stderr: not re-wrapped (greppable), brackets in ids kept literally."""
    err.print(f"[bold red]error:[/] {escape(redact_message(str(exc)))}")


def fail(exc: BaseException, code: int = 2) -> typer.Exit:
    """Print ``exc`` as one error line; the ``typer.Exit`` to raise with ``code``."""
    print_error(exc)
    return typer.Exit(code)


def exits(interrupted: str = RESUME_HINT) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """The exit codes of every command: ``SkillgradError`` -> 2, ``BudgetExceeded`` -> 3,
    ``KeyboardInterrupt`` -> 130 (saying ``interrupted``), each as one error line."""

    def wrap(command: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(command)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return command(*args, **kwargs)
            except KeyboardInterrupt:
                raise fail(KeyboardInterrupt(interrupted), 130) from None
            except BudgetExceeded as exc:
                raise fail(exc, 3) from None
            except SkillgradError as exc:
                raise fail(exc, 2) from None

        return run

    return wrap


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


LEVEL_STYLE = {logging.WARNING: "yellow", logging.ERROR: "red", logging.DEBUG: "dim"}


class ConsoleLogHandler(logging.Handler):
    """The console view of a run: a logging handler for the ``skillgrad`` logger that prints
    each record as one line on a Rich console (plain text: brackets are never markup)."""

    def __init__(self, console: Console, level: int = logging.INFO) -> None:
        super().__init__(level)
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = redact_message(self.format(record))
            if record.levelno >= logging.WARNING:
                text = f"{record.levelname.lower()}: {text}"
            style = LEVEL_STYLE.get(record.levelno if record.levelno < 40 else logging.ERROR, "")
            self.console.print(Text(text, style=style), soft_wrap=True)
        except Exception:  # a display failure must never stop a run
            self.handleError(record)


def setup_logging(console: Console, verbosity: int = 0) -> ConsoleLogHandler:
    """Route the ``skillgrad`` logger to ``console``: verbosity -1 (``--quiet``) shows warnings
    and errors, 0 adds the run's progress lines (INFO), 1 (``-v``) adds DEBUG. Replaces a handler
    installed by an earlier call, so it is safe to call once per command."""
    level = {-1: logging.WARNING, 0: logging.INFO}.get(verbosity, logging.DEBUG)
    logger = logging.getLogger("skillgrad")
    for old in [h for h in logger.handlers if isinstance(h, ConsoleLogHandler)]:
        logger.removeHandler(old)
    handler = ConsoleLogHandler(console, level)
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return handler


__all__ = [
    "ConsoleLogHandler",
    "RichProgress",
    "err",
    "exits",
    "fail",
    "missing_extra",
    "out",
    "print_error",
    "setup_logging",
]
