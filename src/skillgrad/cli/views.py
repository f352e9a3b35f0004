"""CLI commands that view runs: ``diff``, ``blame``, ``trace``, ``compare``, ``dashboard``.

``register(app)`` adds them to the main Typer app (cli/main.py calls it). They only read run
directories; errors are printed as one clear line and exit with status 2.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from skillgrad.cli.console import exits, fail, missing_extra
from skillgrad.cli.console import out as stdout
from skillgrad.runs.io import atomic_write_text, json_line
from skillgrad.skill.document import text_lines
from skillgrad.types import Trajectory, to_json

RunDirArg = Annotated[Path, typer.Argument(help="A run directory (<output_root>/<run_name>).")]


def color_diff(text: str) -> Text:
    """Rich-colored unified diff: additions green, removals red, hunk headers cyan."""
    out = Text()
    for line in text_lines(text):
        style = ""
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        out.append(line + "\n", style=style)
    return out


@exits()
def diff_cmd(
    run_dir: RunDirArg,
    step_a: Annotated[int | None, typer.Option("--from", help="Step (default: initial).")] = None,
    step_b: Annotated[int | None, typer.Option("--to", help="Step (default: best).")] = None,
    html: Annotated[Path | None, typer.Option(help="Also write an HTML rendering here.")] = None,
) -> None:
    """Show how the skill changed between two steps (default: initial vs best)."""
    from skillgrad.report.provenance import skill_diff, skill_diff_html

    text = skill_diff(run_dir, step_a, step_b)
    if html is not None:
        atomic_write_text(html, skill_diff_html(run_dir, step_a, step_b))
    stdout.print(color_diff(text) if text else "[dim]no differences[/]")


@exits()
def blame_cmd(
    run_dir: RunDirArg,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """Annotate each line of best_skill.md with the step and edit that produced it."""
    from skillgrad.report.provenance import blame

    lines = blame(run_dir)
    if as_json:
        for b in lines:
            typer.echo(json_line(asdict(b)), nl=False)
        return
    table = Table(show_header=True, box=None, pad_edge=False)
    for col in ("#", "origin", "step", "edit", "line"):
        table.add_column(col, overflow="fold")
    for b in lines:
        style = {"initial": "dim", "unattributed": "yellow"}.get(b.source, "")
        edit = f"{b.op} [{b.section}]" if b.op else ""
        step = f"{b.step} (ep {b.epoch})" if b.step is not None else ""
        table.add_row(str(b.line_no), b.source, step, edit, Text(b.text), style=style)
    stdout.print(table)


TRACE_CHARS = 2000
"""What ``trace`` prints of one message unless ``--full``: an environment's observation or a
model's runaway reply can be very long."""


@exits()
def trace_cmd(
    run_dir: RunDirArg,
    item_id: Annotated[str, typer.Argument(help="An item id of the run (one of its splits).")],
    step: Annotated[
        int | None,
        typer.Option(
            help="Trace what step STEP's gate compared: the skill it started from, its candidate "
            "(and what it committed, when the prune changed it). Default: initial and best."
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(help="A check target's rollouts (its provider:model, train.check_targets)."),
    ] = None,
    sample: Annotated[int, typer.Option(help="Which sample (train.samples > 1).")] = 0,
    full: Annotated[bool, typer.Option("--full", help="Print every message whole.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """Show what the target did on one item under each skill version: its transcript, score and
    feedback, read from the run's result cache (nothing is re-run)."""
    from skillgrad.report.trace import NOT_SCORED, trace_item

    traced = trace_item(run_dir, item_id, step=step, target=target, sample=sample)
    for t in traced:
        if as_json:
            shown = None if t.trajectory is None else to_json(t.trajectory)
            row = {"label": t.label, "skill_hash": t.skill_hash, "trajectory": shown}
            typer.echo(json_line(row), nl=False)
            continue
        stdout.print(Text(f"{t.label} (skill {t.skill_hash})", style="bold"))
        if t.trajectory is None:
            stdout.print(Text(f"  {NOT_SCORED}", style="dim"))
        else:
            stdout.print(transcript_text(t.trajectory, None if full else TRACE_CHARS))
        stdout.print()


def transcript_text(traj: Trajectory, limit: int | None) -> Text:
    """A stored trajectory as plain lines (never read as markup): score, feedback, evidence,
    error, then each message by role; each text cut at ``limit`` characters, saying how much."""

    def cut(text: str) -> str:
        if limit is None or len(text) <= limit:
            return text
        return f"{text[:limit]} … ({len(text) - limit} more characters; --full shows them)"

    s = traj.score
    out = Text()
    out.append(f"  score {s.value:.3f} ({'passed' if s.passed else 'failed'})\n")
    for name, value in (("feedback", s.feedback), ("evidence", s.evidence)):
        if value:
            out.append(f"  {name}: {cut(value)}\n")
    if traj.error:
        out.append(f"  error: {cut(traj.error)}\n", style="red")
    for m in traj.messages:
        out.append(f"  [{m.role}] ", style="cyan")
        out.append(cut(m.content) + "\n")
        for call in m.tool_calls:
            out.append(f"    tool call: {cut(json_line(call).strip())}\n")
    return out


@exits()
def compare_cmd(
    run_dirs: Annotated[list[Path], typer.Argument(help="Two or more run directories.")],
    out: Annotated[Path | None, typer.Option(help="Write compare.html + PNG here.")] = None,
) -> None:
    """Compare runs: final scores, cost, differing config settings, overlaid curves."""
    try:
        from skillgrad.report.compare import compare_runs, write_compare_html
        from skillgrad.report.text import fmt
    except ImportError as exc:
        raise fail(missing_extra(exc, "report")) from exc

    result = compare_runs(run_dirs)
    table = Table(title="Final numbers")
    columns = list(result.rows[0])
    for col in columns:
        table.add_column(col)
    for row in result.rows:
        table.add_row(*(fmt(row[c]) for c in columns))
    stdout.print(table)
    diff = Table(title="Config settings that differ")
    diff.add_column("setting")
    for name in result.names:
        diff.add_column(name)
    for key, values in result.config_diff.items():
        diff.add_row(key, *(fmt(v) for v in values))
    stdout.print(diff if result.config_diff else "[dim]configs are identical[/]")
    if out is not None:
        page = write_compare_html(result, out / "compare.html")
        stdout.print(f"wrote {page}")


@exits(interrupted="dashboard stopped")
def dashboard_cmd(
    runs_root: Annotated[Path, typer.Argument(help="Folder of run directories.")] = Path("runs"),
    host: Annotated[str, typer.Option(help="Bind address (loopback only by default).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote",
            help="Allow a non-loopback bind address and any Host header (no DNS-rebinding check).",
        ),
    ] = False,
) -> None:
    """Serve a live dashboard of the runs under RUNS_ROOT (reads the run directories only)."""
    try:
        from skillgrad.dashboard.app import check_host, serve
    except ImportError as exc:
        raise fail(missing_extra(exc, "dashboard")) from exc
    check_host(host, allow_remote)  # refuse before announcing anything
    stdout.print(f"dashboard on http://{host}:{port}/ (Ctrl-C to stop)")
    serve(runs_root, host=host, port=port, allow_remote=allow_remote)


def register(app: typer.Typer) -> None:
    """Add the viewing commands to the main CLI."""
    app.command("diff")(diff_cmd)
    app.command("blame")(blame_cmd)
    app.command("trace")(trace_cmd)
    app.command("compare")(compare_cmd)
    app.command("dashboard")(dashboard_cmd)


__all__ = ["color_diff", "register"]
