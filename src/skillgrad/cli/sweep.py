"""``skillgrad sweep``: every grid combination x seed as a run directory in one sweep directory.

skillgrad sweep CONFIG --seeds N [--grid KEY=V1,V2,... | --ablate KEY=V,...]... [--out DIR]
                [--executor local|ray]
                [--workers W] [--ray-address ADDR] [--vary-split] [--set KEY=VALUE]...

Re-running the same command resumes; raising ``--seeds`` extends the sweep in place (its finished
runs are kept, the new seeds run). Exit 0: every run finished; 1: some runs did not finish
(listed; re-run to resume); 2: bad input (config, grid, a different sweep in --out); 130: Ctrl-C.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from skillgrad.cli.console import err, exits, out
from skillgrad.sweep.worker import RunOutcome


@exits()
def sweep_command(
    config: Annotated[Path, typer.Argument(help="YAML config file (the base of every run).")],
    seeds: Annotated[
        int, typer.Option(metavar="N", help="Runs per configuration: train.seed, +1, ...")
    ] = 1,
    grid: Annotated[
        list[str] | None,
        typer.Option(
            "--grid",
            metavar="KEY=V1,V2,...",
            help="KEY=V1,V2,... (repeatable; the grid is their product).",
        ),
    ] = None,
    ablate: Annotated[
        list[str] | None,
        typer.Option(
            "--ablate",
            metavar="KEY=V,...",
            help="KEY=V,... (repeatable): the base config, and one configuration per value that "
            "changes only KEY; each is compared with the base config on the same seeds and test "
            "items. Instead of --grid.",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--out", metavar="DIR", help="Sweep directory (default <output_root>/<config>-sweep)."
        ),
    ] = None,
    executor: Annotated[
        str, typer.Option(metavar="local|ray", help="local (process pool) or ray.")
    ] = "local",
    workers: Annotated[
        int | None, typer.Option(metavar="W", help="Runs at once (default: the number of CPUs).")
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option("--ray-address", metavar="HOST:PORT", help="Attach to this Ray cluster."),
    ] = None,
    vary_split: Annotated[
        bool, typer.Option("--vary-split", help="Also vary the data split (env.options.seed).")
    ] = False,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set", metavar="SECTION.KEY=VALUE", help="Override for every run: section.key=value."
        ),
    ] = None,
    controls: Annotated[
        bool,
        typer.Option(
            "--controls",
            help="Also score the empty skill and a placebo skill on each run's test items "
            "(train.controls): test_gain_vs_empty and test_gain_vs_placebo per configuration.",
        ),
    ] = False,
) -> None:
    """Run a config over seeds and a grid; re-running the same command resumes the sweep."""
    from skillgrad.report.sweep import render_sweep_text
    from skillgrad.sweep.plan import build_plan
    from skillgrad.sweep.run import check_plan_models, make_pool, run_sweep

    plan = build_plan(
        config,
        seeds=seeds,
        grid=grid or [],
        ablate=ablate or [],
        sets=[*(set_ or []), *(["train.controls=true"] if controls else [])],
        out=output,
        vary_split=vary_split,
    )
    pool = make_pool(executor, workers or os.cpu_count() or 1, ray_address, plan.run_configs)
    if not ray_address:  # the runs use this machine's models (a cluster has its own)
        check_plan_models(plan)
    total = len(plan.jobs)
    ended: list[RunOutcome] = []

    def on_done(outcome: RunOutcome) -> None:
        ended.append(outcome)
        err.print(_line(len(ended), total, outcome), markup=False)

    err.print(f"sweep {plan.sweep_dir}: {total} runs on {pool.name}", markup=False)
    result = run_sweep(plan, pool, on_done)
    out.print(render_sweep_text(result.summary), markup=False)
    out.print(f"sweep summary: {result.sweep_dir / 'sweep_summary.json'}", markup=False)
    if result.failed:
        err.print(
            f"{len(result.failed)} of {total} runs did not finish: "
            + ", ".join(o.name for o in result.failed)
            + ". Re-run the same command to resume them.",
            markup=False,
        )
        raise typer.Exit(1)


def _line(n: int, total: int, o: RunOutcome) -> str:
    took = f" in {o.seconds:.1f}s" if o.seconds else ""
    why = f": {o.error}" if o.error else ""
    return f"[{n}/{total}] {o.name} {o.status}{took}{why}"


def register(app: typer.Typer) -> None:
    """Add ``skillgrad sweep`` to the main CLI."""
    app.command("sweep")(sweep_command)


__all__ = ["register", "sweep_command"]
