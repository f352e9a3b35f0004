"""``skillgrad export``: install a run's best skill where an agent reads skills, with its card.

skillgrad export RUN_DIR --to claude-code|codex|cursor|gemini|agents-md [--dest DIR] [--force]
                 [--sweep SWEEP_DIR] [--name NAME] [--description TEXT]

Exit 0: written; 2: bad input (not a finished run, a damaged checkpoint, an unknown format, a
bad name, something already there without --force, a link in the way): nothing written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from skillgrad.cli.console import err, exits, out
from skillgrad.runs.layout import RunPaths

FORMAT_HELP = "claude-code, codex, cursor, gemini or agents-md (docs/export.md)."


@exits()
def export_command(
    run_dir: Annotated[Path, typer.Argument(help="A finished run directory.")],
    to: Annotated[str, typer.Option("--to", metavar="FORMAT", help=FORMAT_HELP)],
    dest: Annotated[
        Path, typer.Option("--dest", help="The project folder to install into.")
    ] = Path("."),
    force: Annotated[
        bool, typer.Option("--force", help="Replace what an earlier export wrote there.")
    ] = False,
    sweep: Annotated[
        Path | None,
        typer.Option(
            "--sweep",
            metavar="SWEEP_DIR",
            help="The sweep the run belongs to: its interval over seeds and placebo arm go on "
            "the skill card.",
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(help="Skill name (default: the package's name, else the run's task)."),
    ] = None,
    description: Annotated[
        str | None,
        typer.Option(help="What the agent reads to decide when to use the skill."),
    ] = None,
) -> None:
    """Write the run's best skill where the agent reads skills (for claude-code:
    .claude/skills/NAME/SKILL.md), and beside it a skill card: task, models, data sizes, val
    and test initial -> best, the sweep's interval and placebo arm, the config digest."""
    from skillgrad.export import export_run

    result = export_run(
        run_dir, to, dest, force=force, sweep_dir=sweep, name=name, description=description
    )
    if result.best_file_edited:
        err.print(
            f"warning: {RunPaths(run_dir).best_skill} differs from the skill the run committed; "
            "exported the committed one (the card's numbers are about it)",
            markup=False,
        )
    for item in result.written:
        verb = "replaced" if item.replaced else "wrote"
        out.print(f"{verb} {result.dest / item.path}{'/' * item.folder}", markup=False)
    out.print(f"skill card: {result.dest / result.card_path}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``skillgrad export`` to the main CLI."""
    app.command("export")(export_command)


__all__ = ["export_command", "register"]
