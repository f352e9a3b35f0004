"""The Starlette app of ``skillgrad dashboard``: server-rendered pages plus one JSON endpoint.

Routes: ``/`` runs under the root; ``/run/{name}`` live curve, steps, skills, edits, diff form;
``/run/{name}/diff?a=&b=``; ``/api/runs`` and ``/api/run/{name}`` (polled by the page's script).
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from skillgrad.dashboard import data
from skillgrad.errors import ConfigError, SkillgradError
from skillgrad.report.load import RunData, list_runs
from skillgrad.report.provenance import diff_html, skill_at
from skillgrad.report.text import fmt

HERE = Path(__file__).parent
LOOPBACK_NAMES = ("localhost",)


def check_host(host: str, allow_remote: bool) -> str | None:
    """Refuse a non-loopback bind unless allowed; return a warning to print when allowed."""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host in LOOPBACK_NAMES
    if loopback:
        return None
    if not allow_remote:
        raise ConfigError(
            f"dashboard: refusing to bind to {host!r}, which is reachable from other machines; "
            "the dashboard has no authentication. Use --host 127.0.0.1, or pass --allow-remote "
            "if you really want to expose it."
        )
    return (
        f"WARNING: the dashboard is listening on {host}, reachable from the network without "
        "authentication; anyone who can connect can read your runs' skills and trajectories."
    )


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=jinja2.select_autoescape(default=True),
        undefined=jinja2.ChainableUndefined,
    )
    env.globals["fmt"] = fmt
    env.globals["live_js"] = (HERE / "static" / "live.js").read_text(encoding="utf-8")
    shared = HERE.parent / "report" / "templates" / "_style.css"  # one stylesheet for both
    env.globals["style_css"] = shared.read_text(encoding="utf-8") + (
        HERE / "static" / "style.css"
    ).read_text(encoding="utf-8")
    return env


class Dashboard:
    """Holds the runs root; each request re-reads the run directory (it may be growing)."""

    def __init__(self, root: Path, poll_ms: int = 1000) -> None:
        self.root = Path(root)
        self.poll_ms = poll_ms
        self.env = _env()

    def _page(self, template: str, **ctx: Any) -> HTMLResponse:
        ctx.setdefault("poll_ms", self.poll_ms)
        return HTMLResponse(self.env.get_template(template).render(root=self.root, **ctx))

    def _run(self, name: str) -> RunData:
        # Only names listed under the root are served: no path traversal through {name}.
        for p in list_runs(self.root):
            if p.name == name:
                try:
                    return data.load(p)
                except SkillgradError as exc:
                    raise HTTPException(500, str(exc)) from exc
        raise HTTPException(404, f"no run named {name!r} under {self.root}")

    def _overviews(self) -> list[dict[str, Any]]:
        out = []
        for p in list_runs(self.root):
            try:
                out.append(data.run_overview(data.load(p)))
            except SkillgradError as exc:
                out.append({"name": p.name, "status": "unreadable", "error": str(exc)})
        return out

    async def index(self, request: Request) -> HTMLResponse:
        return self._page("index.html", runs=self._overviews())

    async def api_runs(self, request: Request) -> JSONResponse:
        return JSONResponse(self._overviews())

    async def api_run(self, request: Request) -> JSONResponse:
        return JSONResponse(data.run_points(self._run(request.path_params["name"])))

    def _steps(self, run: RunData) -> list[int]:
        return [0, *(r.step for r in data.live_history(run))]

    async def run_page(self, request: Request) -> HTMLResponse:
        run = self._run(request.path_params["name"])
        current = run.skills[max(run.skills)] if run.skills else None
        return self._page(
            "run.html",
            run=run,
            overview=data.run_overview(run),
            history=data.live_history(run),
            current_skill=current,
            steps=self._steps(run),
            step_edits=data.step_edits(run),
            accepted=data.accepted_edits(run),
        )

    async def diff_page(self, request: Request) -> HTMLResponse:
        run = self._run(request.path_params["name"])
        a, b = _int_param(request, "a"), _int_param(request, "b")
        try:
            text_a, label_a = skill_at(run, a, default="initial")
            text_b, label_b = skill_at(run, b, default="best")
        except SkillgradError as exc:
            raise HTTPException(400, str(exc)) from exc
        return self._page(
            "diff.html", run=run, steps=self._steps(run), a=a, b=b,
            label_a=label_a, label_b=label_b, diff=diff_html(text_a, text_b),
        )  # fmt: skip


def _int_param(request: Request, key: str) -> int | None:
    raw = request.query_params.get(key, "")
    if raw in ("", "best", "initial"):
        return None if raw != "initial" else 0
    try:
        return int(raw)
    except ValueError as exc:
        raise HTTPException(400, f"query parameter {key}={raw!r} must be a step number") from exc


def create_app(root: Path, poll_ms: int = 1000) -> Starlette:
    """The dashboard app over ``root`` (a folder of runs, or one run directory)."""
    d = Dashboard(root, poll_ms)
    return Starlette(routes=[
        Route("/", d.index),
        Route("/api/runs", d.api_runs),
        Route("/api/run/{name}", d.api_run),
        Route("/run/{name}", d.run_page),
        Route("/run/{name}/diff", d.diff_page),
    ])  # fmt: skip


def serve(root: Path, host: str = "127.0.0.1", port: int = 8765, allow_remote: bool = False,
          poll_ms: int = 1000) -> None:  # fmt: skip
    """Run the dashboard with uvicorn until interrupted (checks the bind address first)."""
    import uvicorn

    warning = check_host(host, allow_remote)
    if warning:
        print(warning)
    if not Path(root).is_dir():
        raise ConfigError(f"dashboard: runs root {root} does not exist; pass a folder of runs.")
    uvicorn.run(create_app(Path(root), poll_ms), host=host, port=port, log_level="warning")


__all__ = ["Dashboard", "check_host", "create_app", "serve"]
