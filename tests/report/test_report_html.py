"""The self-contained HTML report and its PNG figures."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from skillgrad.errors import RunDirError
from skillgrad.report.html import write_html_report
from skillgrad.report.plots import acceptance_curve, cumulative_by_role, render_figures
from skillgrad.runs.view import load_run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_report_is_self_contained_with_all_sections(run_dir: Path) -> None:
    out = write_html_report(run_dir)
    assert out == run_dir / "report.html"
    page = out.read_text()
    # No external resources of any kind: no URLs at all in the report.
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<(script|link)\b", page)
    srcs = re.findall(r'src="([^"]+)"', page)
    assert len(srcs) == 6 and all(s.startswith("data:image/png;base64,") for s in srcs)
    for s in srcs:
        assert base64.b64decode(s.split(",", 1)[1]).startswith(PNG_MAGIC)
    assert 'id="test-scores">0.5 → 0.833<' in page
    assert "<li><code>val-2</code></li>" in page  # persistent failures
    steps_table = page.split('id="steps"')[1].split("</table>")[0]
    assert steps_table.count("<tr class=") == 7
    assert steps_table.count('class="rejected') == 2
    assert "early-rejected" in steps_table
    assert "Missing files" not in page


def test_figures_saved_as_png(run_dir: Path) -> None:
    write_html_report(run_dir)
    names = {p.stem for p in (run_dir / "figures").glob("*.png")}
    assert names == {"scores", "skill_tokens", "lr", "acceptance", "usage", "slow_categories"}
    for p in (run_dir / "figures").glob("*.png"):
        assert p.read_bytes().startswith(PNG_MAGIC) and p.stat().st_size > 2000


def test_run_in_progress_shows_what_exists(live_run: Path, tmp_path: Path) -> None:
    out = write_html_report(live_run, tmp_path / "elsewhere" / "r.html")
    page = out.read_text()
    assert out.parent.name == "elsewhere"
    assert 'id="missing"' in page and "<code>summary.json</code>" in page
    assert "still in progress" in page
    assert "No summary.json yet" in page and "Latest step 2" in page
    assert "Known once the run finishes" in page
    # figures that have data are there; the slow-update one is not (no slow update yet)
    assert "fig-scores" in page and "fig-slow_categories" not in page


def test_empty_run_and_missing_dir(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="no such run directory"):
        write_html_report(tmp_path / "nope")
    (tmp_path / "bare").mkdir()
    with pytest.raises(RunDirError, match="not a skillgrad run directory"):
        write_html_report(tmp_path / "bare")
    started = tmp_path / "started"
    started.mkdir()
    (started / "config.json").write_text('{"run_name": "started"}')
    page = write_html_report(started).read_text()
    assert (
        "No step records yet: nothing to plot." in page and "history.json has no steps yet" in page
    )
    assert "best_skill.md not written yet" in page


def test_corrupt_history_is_a_clear_error(run_dir: Path) -> None:
    (run_dir / "history.json").write_text("[{")
    with pytest.raises(RunDirError, match=r"history.json: the step history is not valid JSON"):
        load_run(run_dir)


def test_torn_last_event_line_is_tolerated(run_dir: Path) -> None:
    with (run_dir / "events.jsonl").open("a") as fh:
        fh.write('{"t": "x", "event": "step_st')
    run = load_run(run_dir)
    assert run.events[-1]["event"] == "run_end"


def test_curve_helpers(run_dir: Path) -> None:
    run = load_run(run_dir)
    xs, ys = acceptance_curve(run.history)
    assert xs == [1, 2, 3, 4, 5, 6, 7]
    assert ys[0] == 1.0 and ys[1] == 0.5 and ys[-1] == pytest.approx(5 / 7)
    cum = cumulative_by_role(run.history, "calls")
    assert cum["optimizer"] == [2.0 * i for i in range(1, 8)]
    assert cum["target"][-1] == 70.0
    assert set(render_figures(run)) == {
        "scores", "skill_tokens", "lr", "acceptance", "usage", "slow_categories"
    }  # fmt: skip
