"""The dashboard app through Starlette's test client (the browser test drives the real thing)."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from fixtures_runs import append_step
from skillgrad.dashboard import check_host, create_app
from skillgrad.errors import ConfigError
from skillgrad.runs.io import append_jsonl


def test_runs_list_and_api(run_dir: Path, live_run: Path) -> None:
    client = TestClient(create_app(run_dir.parent), base_url="http://127.0.0.1")
    page = client.get("/").text
    assert 'href="/run/demo"' in page and 'href="/run/live"' in page
    runs = {r["name"]: r for r in client.get("/api/runs").json()}
    assert runs["demo"]["status"] == "finished" and runs["demo"]["steps"] == 7
    assert runs["demo"]["best_score"] == 1.0
    assert runs["live"]["status"] == "running" and runs["live"]["steps"] == 2


def test_live_points_follow_history_and_events(live_run: Path) -> None:
    client = TestClient(create_app(live_run.parent), base_url="http://127.0.0.1")
    assert len(client.get("/api/run/live").json()["points"]) == 2
    append_step(live_run, 0.9)  # history.json and events.jsonl both grow
    data = client.get("/api/run/live").json()
    assert [p["step"] for p in data["points"]] == [1, 2, 3]
    assert data["points"][-1]["val_score"] == 0.9 and data["best_score"] == 0.9
    # a step_end event that history.json does not have yet still shows up
    rec = dict(data["points"][-1], step=4, val_score=0.95, best_score=0.95)
    append_jsonl(live_run / "events.jsonl", {"t": "x", "event": "step_end", "record": rec})
    assert [p["step"] for p in client.get("/api/run/live").json()["points"]] == [1, 2, 3, 4]


def test_run_page_shows_skills_edits_and_diff_form(run_dir: Path) -> None:
    client = TestClient(create_app(run_dir.parent), base_url="http://127.0.0.1")
    page = client.get("/run/demo").text
    assert 'id="curve"' in page and 'data-api="/api/run/demo"' in page
    assert "http://" not in page.replace('"http://www.w3.org/2000/svg"', "")
    assert "https://" not in page and "<script src" not in page
    assert "Ignore surrounding whitespace" in page.split('id="current-skill"')[1].split("</pre>")[0]
    assert "Ignore surrounding" not in page.split('id="best-skill"')[1].split("</pre>")[0]
    accepted = page.split('id="accepted"')[1].split("</table>")[0]
    assert accepted.count("<tr><td>") == 5 and "slow_update" in accepted
    edits = page.split('id="step-edits"')[1]
    assert "early reject: cannot catch up" in edits and "k=1 reached" in edits
    assert "<strong>dropped</strong>" in edits and "applied" in edits
    assert page.count('<option value="') >= 2 * 8


def test_diff_view_and_errors(run_dir: Path) -> None:
    client = TestClient(create_app(run_dir.parent), base_url="http://127.0.0.1")
    page = client.get("/run/demo/diff", params={"a": "3", "b": "7"}).text
    assert "step 3 (skill_v0003.md) → step 7 (skill_v0007.md)" in page
    assert '<span class="add">+ - Ignore surrounding whitespace.</span>' in page
    dels = page.split('id="diff"')[1].count('<span class="del">')
    assert dels == 1 and '<span class="del">- Repeat the word given by the user.' in page
    best = client.get("/run/demo/diff", params={"a": "0", "b": "best"}).text
    assert "best (v0006)" in best
    assert client.get("/run/demo/diff", params={"a": "x"}).status_code == 400
    assert client.get("/run/nope").status_code == 404
    assert client.get("/run/..%2F..%2Fetc").status_code == 404


def test_root_that_is_itself_a_run(run_dir: Path) -> None:
    client = TestClient(create_app(run_dir), base_url="http://127.0.0.1")
    assert [r["name"] for r in client.get("/api/runs").json()] == ["demo"]


def test_bind_address_policy() -> None:
    assert check_host("127.0.0.1", False) is None
    assert check_host("::1", False) is None and check_host("localhost", False) is None
    with pytest.raises(ConfigError, match="--allow-remote"):
        check_host("0.0.0.0", False)
    warning = check_host("0.0.0.0", True)
    assert warning is not None and "without authentication" in warning


def test_dashboard_does_not_need_matplotlib() -> None:
    # the [dashboard] extra has no matplotlib: importing the app must not pull it in
    import subprocess
    import sys

    code = "import sys, skillgrad.dashboard.app; sys.exit('matplotlib' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
