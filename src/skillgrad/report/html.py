"""The self-contained HTML report of one run: inline CSS, figures as base64 PNG, no URLs.

``write_html_report(run_dir)`` renders ``report.html`` next to the run and saves every figure
as ``run_dir/figures/<name>.png``. It works on a run still in progress and says what is missing.
"""

from __future__ import annotations

import base64
from pathlib import Path

import jinja2

from skillgrad.errors import SkillgradError
from skillgrad.report.plots import CATEGORY_COLORS, render_figures
from skillgrad.report.provenance import blame, diff_html, skill_at
from skillgrad.report.text import fmt
from skillgrad.runs.io import atomic_write_text
from skillgrad.runs.view import RunData, load_run
from skillgrad.skill.text import visible

TEMPLATES = Path(__file__).parent / "templates"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        undefined=jinja2.ChainableUndefined,
    )
    env.globals["fmt"] = fmt
    # skill text as the target receives it: a zero-width character shows as <U+200B>
    env.filters["visible"] = visible
    return env


def _initial_vs_best(run: RunData) -> str | None:
    if 0 not in run.skills:
        return None
    best, _ = skill_at(run, None, default="best")
    return diff_html(run.skills[0], best)


def render_html_report(run: RunData, figures: dict[str, bytes]) -> str:
    """Render the report page for an already loaded run and its PNG figures."""
    blame_lines, blame_error = [], ""
    try:
        blame_lines = blame(run.root)
    except SkillgradError as exc:  # a run too young to blame is shown, not fatal
        blame_error = str(exc)
    cats = list(CATEGORY_COLORS) + sorted(
        {c for d in run.slow_categories.values() for c in d.get("counts", {})}
        - set(CATEGORY_COLORS)
    )
    return (
        environment()
        .get_template("report.html.j2")
        .render(
            run=run,
            figures={k: base64.b64encode(v).decode("ascii") for k, v in figures.items()},
            diff=_initial_vs_best(run),
            blame=blame_lines,
            blame_error=blame_error,
            slow=run.slow_categories,
            slow_cats=cats,
        )
    )


def write_html_report(run_dir: Path, out: Path | None = None) -> Path:
    """Write the HTML report (default ``run_dir/report.html``) and ``run_dir/figures/*.png``."""
    run = load_run(Path(run_dir))
    figures = render_figures(run, run.paths.figures)
    target = Path(out) if out is not None else run.paths.report_html
    atomic_write_text(target, render_html_report(run, figures))
    return target


__all__ = ["environment", "fmt", "render_html_report", "write_html_report"]
