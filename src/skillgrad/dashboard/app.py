"""The Starlette app of ``skillgrad dashboard``: server-rendered pages plus one JSON endpoint.

Routes: ``/`` runs under the root; ``/run/{name}`` live curve, steps, skills, edits, diff form;
``/run/{name}/diff?a=&b=``; ``/api/runs`` and ``/api/run/{name}`` (polled by the page's script).
Requests whose ``Host`` header names another host are refused unless remote access was allowed
(a page on another site must not reach the loopback server through DNS rebinding). Run
directories are re-read only when their files change (``RunCache``).
"""

from __future__ import annotations

import ipaddress
import logging
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from skillgrad.dashboard.data import (
    RunCache,
    accepted_edits,
    gate_steps,
    leak_view,
    live_history,
    run_overview,
    run_points,
    step_edits,
    sweep_overviews,
)
from skillgrad.errors import ConfigError, SkillgradError
from skillgrad.report.provenance import diff_html, skill_at
from skillgrad.report.text import fmt, p_text
from skillgrad.runs.view import RunData, list_runs
from skillgrad.skill.text import visible

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
LOOPBACK_NAMES = ("localhost",)


def check_host(host: str, allow_remote: bool) -> str | None:
    """Refuse a non-loopback bind unless allowed; return the warning to log when allowed."""
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
        f"the dashboard is listening on {host}, reachable from the network without "
        "authentication; anyone who can connect can read your runs' skills and trajectories."
    )


def allowed_hosts(host: str) -> frozenset[str]:
    """Host names a request to a server bound to ``host`` may carry: loopback names and it."""
    return frozenset({"127.0.0.1", "localhost", "::1", _host_name(host)})


def _host_name(value: str) -> str:
    """``"[::1]:8765"`` -> ``"::1"``, ``"LocalHost.:80"`` -> ``"localhost"``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


class HostCheck:
    """ASGI middleware: refuse requests whose ``Host`` header is not one of ``allowed``."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = dict(scope.get("headers") or [])
            host = headers.get(b"host", b"").decode("latin-1")
            if _host_name(host) not in self.allowed:
                response = PlainTextResponse(
                    f"Host {host!r} is not served here. Open the dashboard as "
                    f"http://{sorted(self.allowed)[0]}:<port>/ (or start it with --allow-remote "
                    "to serve other host names).",
                    status_code=400,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=jinja2.select_autoescape(default=True),
        undefined=jinja2.ChainableUndefined,
    )
    env.globals["fmt"] = fmt
    env.globals["p_text"] = p_text
    env.filters["visible"] = visible  # skill text as the target receives it (<U+200B>)
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
        self.runs = RunCache()

    def _page(self, template: str, **ctx: Any) -> HTMLResponse:
        ctx.setdefault("poll_ms", self.poll_ms)
        return HTMLResponse(self.env.get_template(template).render(root=self.root, **ctx))

    def _run(self, name: str) -> RunData:
        # Only names listed under the root are served: no path traversal through {name}.
        for p in list_runs(self.root):
            if p.name == name:
                try:
                    return self.runs.load(p)
                except SkillgradError as exc:
                    raise HTTPException(500, str(exc)) from exc
        raise HTTPException(404, f"no run named {name!r} under {self.root}")

    def _overviews(self) -> list[dict[str, Any]]:
        out = []
        for p in list_runs(self.root):
            try:
                out.append(self.runs.overview(p))
            except SkillgradError as exc:
                out.append({"name": p.name, "status": "unreadable", "error": str(exc)})
        return out

    async def index(self, request: Request) -> HTMLResponse:
        return self._page("index.html", runs=self._overviews(), sweeps=sweep_overviews(self.root))

    async def api_runs(self, request: Request) -> JSONResponse:
        return JSONResponse(self._overviews())

    async def api_run(self, request: Request) -> JSONResponse:
        return JSONResponse(run_points(self._run(request.path_params["name"])))

    def _steps(self, run: RunData) -> list[int]:
        return [0, *(r.step for r in live_history(run))]

    async def run_page(self, request: Request) -> HTMLResponse:
        run = self._run(request.path_params["name"])
        current = run.skills[max(run.skills)] if run.skills else None
        return self._page(
            "run.html",
            run=run,
            overview=run_overview(run),
            history=live_history(run),
            current_skill=current,
            steps=self._steps(run),
            step_edits=step_edits(run),
            accepted=accepted_edits(run),
            gate_steps=gate_steps(run),
            leaks=leak_view(run),
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


def create_app(
    root: Path, poll_ms: int = 1000, *, host: str = "127.0.0.1", allow_remote: bool = False
) -> Starlette:
    """The dashboard app over ``root`` (a folder of runs, or one run directory), served on
    ``host``: only loopback names and ``host`` are accepted in the Host header unless
    ``allow_remote``."""
    d = Dashboard(root, poll_ms)
    middleware = [] if allow_remote else [Middleware(HostCheck, allowed=allowed_hosts(host))]
    return Starlette(middleware=middleware, routes=[
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
        log.warning("%s", warning)
    if not Path(root).is_dir():
        raise ConfigError(f"dashboard: runs root {root} does not exist; pass a folder of runs.")
    app = create_app(Path(root), poll_ms, host=host, allow_remote=allow_remote)
    uvicorn.run(app, host=host, port=port, log_level="warning")


__all__ = ["Dashboard", "HostCheck", "allowed_hosts", "check_host", "create_app", "serve"]
