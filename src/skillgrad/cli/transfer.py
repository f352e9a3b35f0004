"""``skillgrad transfer``: the skills of a sweep scored on other targets, as a matrix.

skillgrad transfer SWEEP_DIR --target_model PROVIDER:MODEL [--target_model ...] [--split test]
    [--rules-alone]

Exit 0: every finished run scored and transfer_summary.json written; 1: a model stayed unreachable
or the budget ran out mid-way (what was answered is cached: re-run the same command to resume);
2: bad input (not a sweep, a damaged run, an unknown or uninstalled model: nothing written, as
everything is checked before the first call) or a model that refuses (auth, bad name); 130:
Ctrl-C (re-run to resume).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from skillgrad.cli.console import err, exits, out, print_error
from skillgrad.errors import BudgetExceeded, SystemicFailure, TransientModelError

if TYPE_CHECKING:
    from skillgrad.models.spec import ModelSpec
    from skillgrad.sweep.transfer import TransferPlan, TransferRun


@exits()
def transfer_command(
    sweep_dir: Annotated[Path, typer.Argument(help="A sweep directory (skillgrad sweep --out).")],
    target_model: Annotated[
        list[str] | None,
        typer.Option(
            "--target_model",
            "--target-model",
            metavar="PROVIDER:MODEL",
            help="A target to score every run's skills on (repeatable).",
        ),
    ] = None,
    split: Annotated[str, typer.Option(metavar="val|test", help="The split to score.")] = "test",
    rules_alone: Annotated[
        bool,
        typer.Option(
            "--rules-alone",
            help="Also score each best skill with its worked examples cut, on every target "
            "(the sweep's own included): does a target follow the rules in words, or copy the "
            "demonstration?",
        ),
    ] = False,
) -> None:
    """Score the initial and the best skill of every finished run of a sweep on other targets,
    each on the run's own split, and write the matrix (transfer_summary.json). Re-running the
    same command resumes: nothing already answered is paid again."""
    from skillgrad.report.sweep import render_transfer_text
    from skillgrad.sweep.transfer import prepare_transfer, run_transfer
    from skillgrad.sweep.transfer_matrix import TRANSFER_FILE, write_transfer_summary

    plan = prepare_transfer(sweep_dir, target_model or [], split, rules_alone)
    _announce(plan)
    try:
        summary = write_transfer_summary(plan, asyncio.run(run_transfer(plan, _Progress(plan))))
    except (TransientModelError, SystemicFailure, BudgetExceeded) as exc:
        print_error(exc)  # not the input's fault: exit 1, and the next run resumes
        err.print("What was answered is cached: re-run the same command to resume.")
        raise typer.Exit(1) from None
    out.print(render_transfer_text(summary), markup=False)
    out.print(f"transfer summary: {plan.sweep_dir / TRANSFER_FILE}", markup=False)


def _announce(plan: TransferPlan) -> None:
    from skillgrad.sweep.worker import COMPLETE  # finished, or stopped by patience

    own = sorted({t.name for r, t in _own(plan)})
    rules = "; the rules alone are scored on it" if any(r.rules for r in plan.runs) else ""
    for name in own:
        err.print(
            f"{name} is the sweep's own target: its values come from the runs (no calls){rules}",
            markup=False,
        )
    left_out = {k: v for k, v in plan.status.items() if v not in COMPLETE}
    if left_out:
        err.print(
            "not finished, left out: " + ", ".join(f"{k} ({v})" for k, v in left_out.items()),
            markup=False,
        )
    err.print(
        f"transfer {plan.sweep_dir}: {len(plan.runs)} finished runs, "
        f"{plan.evaluations()} evaluations on the {plan.split} split",
        markup=False,
    )


def _own(plan: TransferPlan) -> list[tuple[TransferRun, ModelSpec]]:
    return [(r, t) for r in plan.runs for t in plan.targets if t.name == r.main_target]


class _Progress:
    """One line per scored skill: ``[3/8] seed1 on llamacpp:smollm2-135m: best 0.625``."""

    def __init__(self, plan: TransferPlan) -> None:
        self.total = plan.evaluations()
        self.done = 0

    def __call__(
        self, run: TransferRun, target: ModelSpec, kind: str, result: dict[str, Any]
    ) -> None:
        self.done += 1
        err.print(
            f"[{self.done}/{self.total}] {run.name} on {target.name}: {kind} "
            f"{result['mean_score']:.4f} over {result['n']} items",
            markup=False,
        )


def register(app: typer.Typer) -> None:
    """Add ``skillgrad transfer`` to the main CLI."""
    app.command("transfer")(transfer_command)


__all__ = ["register", "transfer_command"]
