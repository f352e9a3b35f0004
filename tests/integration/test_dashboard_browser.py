"""A real browser (Debian chromium via Playwright) against the real dashboard server.

Starts ``skillgrad.dashboard`` with uvicorn on 127.0.0.1, opens it in headless chromium, watches
the curve grow while a step is appended to a run, renders a diff, and saves screenshots of the
dashboard and of the HTML report to tests/artifacts/.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ holds fixtures_runs

from fixtures_runs import append_step, build_run
from skillgrad.dashboard import create_app
from skillgrad.report.html import write_html_report

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "runs"
    build_run(root, "demo")
    build_run(root, "live", n_steps=3, finished=False)
    port = _free_port()
    config = uvicorn.Config(create_app(root, poll_ms=250), host="127.0.0.1", port=port,
                            log_level="warning", lifespan="off")  # fmt: skip
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "dashboard did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", root
    srv.should_exit = True
    thread.join(timeout=10)


def test_dashboard_live_curve_and_diff_in_chromium(server: tuple[str, Path]) -> None:
    from playwright.sync_api import sync_playwright

    base, root = server
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    requested: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("request", lambda r: requested.append(r.url))
            page.goto(base + "/")
            rows = page.locator("#runs tr").all_inner_texts()
            assert any(r.startswith("demo") and "finished" in r for r in rows)
            assert any(r.startswith("live") and "running" in r for r in rows)
            page.screenshot(path=str(ARTIFACTS / "dashboard_runs.png"), full_page=True)

            page.click('a[href="/run/live"]')
            page.wait_for_selector("svg#curve[data-points='3']", state="attached", timeout=15_000)
            assert page.locator("svg#curve circle.pt").count() == 3
            assert page.locator("#steps-body tr").count() == 3
            rec = append_step(root / "live", 0.95)  # the run writes a new step while we watch
            version = root / "live" / "skills" / f"skill_v{rec['step']:04d}.md"
            version.write_text("# Echo skill\n\nNEW RULE FROM THE LIVE STEP\n")
            page.wait_for_selector("svg#curve[data-points='4']", state="attached", timeout=15_000)
            assert page.locator("svg#curve circle.pt").count() == 4
            assert page.locator("#steps-body tr").count() == 4
            assert page.inner_text("#best") == "0.95"
            page.wait_for_function(
                "document.getElementById('current-skill').textContent.includes('NEW RULE')",
                timeout=15_000,
            )  # the current skill is live too
            page.screenshot(path=str(ARTIFACTS / "dashboard_run_live.png"), full_page=True)

            page.goto(base + "/run/demo")
            page.select_option("#diff-a", "3")
            page.select_option("#diff-b", "7")
            page.click("#diff-go")
            page.wait_for_selector("#diff pre.diff")
            assert "step 3 (skill_v0003.md) → step 7 (skill_v0007.md)" in page.inner_text(
                "#diff-label"
            )
            added = page.locator("#diff .add").all_inner_texts()
            assert "+ - Ignore surrounding whitespace." in added
            page.screenshot(path=str(ARTIFACTS / "dashboard_diff.png"), full_page=True)

            report = write_html_report(root / "demo")
            page.goto(report.as_uri())
            assert page.locator("img.fig").count() == 6
            widths = page.eval_on_selector_all("img.fig", "els => els.map(e => e.naturalWidth)")
            assert all(w > 200 for w in widths)  # every embedded PNG decoded
            page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
        finally:
            browser.close()
    # Only our server and the local report file were ever requested: no CDN, no network.
    foreign = [u for u in requested if not u.startswith((base, "file://", "data:"))]
    assert foreign == []
    for name in ("dashboard_runs", "dashboard_run_live", "dashboard_diff", "report"):
        assert (ARTIFACTS / f"{name}.png").stat().st_size > 10_000
