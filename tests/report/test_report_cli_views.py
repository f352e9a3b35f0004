"""The viewing commands registered by ``cli.views.register`` on a Typer app."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import typer
from typer.testing import CliRunner

from fixtures_runs import build_run
from skillgrad.cli.main import app as main_app
from skillgrad.cli.views import color_diff, register


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.command("noop")
    def noop() -> None:  # a second command keeps Typer in multi-command mode
        """Nothing."""

    return app


def test_diff_and_html(run_dir: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(_app(), ["diff", str(run_dir), "--from", "3", "--to", "6",
                                      "--html", str(tmp_path / "d.html")])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "+Repeat exactly the single word given by the user." in res.output
    assert "+- Keep the original spelling." in res.output
    assert 'class="add"' in (tmp_path / "d.html").read_text()
    styled = color_diff("--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n same")
    styles = [str(s.style) for s in styled.spans]
    assert styles == ["bold", "bold", "cyan", "red", "green"]


def test_blame_json(run_dir: Path) -> None:
    res = CliRunner().invoke(_app(), ["blame", str(run_dir), "--json"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in res.output.splitlines()]
    assert rows[0]["source"] == "initial" and len(rows) == 13
    assert {r["step"] for r in rows if r["source"] == "reflect"} == {1, 3, 4, 6}
    table = CliRunner().invoke(_app(), ["blame", str(run_dir)])
    assert table.exit_code == 0 and "insert_after [Rules]" in table.output


def test_compare(tmp_path: Path) -> None:
    a = build_run(tmp_path, "a")
    b = build_run(tmp_path, "b", lr=1.0)
    res = CliRunner().invoke(_app(), ["compare", str(a), str(b), "--out", str(tmp_path / "o")],
                             env={"COLUMNS": "200"})  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "optimizer.lr" in res.output and (tmp_path / "o" / "compare.html").exists()


def test_report_html_is_an_option_of_report(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(Path(__file__).parents[1] / "fixtures/old_run_b45e323/old_run", run)
    res = CliRunner().invoke(main_app, ["report", str(run), "--html"])
    assert res.exit_code == 0, res.output
    assert (run / "report.html").exists() and (run / "figures").is_dir()
    gone = CliRunner().invoke(main_app, ["report-html", str(run)])  # was its alias
    assert gone.exit_code == 2 and "No such command" in gone.output


def test_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(_app(), ["diff", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "no such run directory" in res.output
    res = CliRunner().invoke(_app(), ["dashboard", str(tmp_path), "--host", "0.0.0.0"])
    assert res.exit_code == 2 and "--allow-remote" in res.output
    assert "dashboard on" not in res.output
