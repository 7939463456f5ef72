"""The Starlette application behind `ioweather serve` and `ioweather watch` (served by services/server.py)."""

from __future__ import annotations

import contextlib
import gzip
import sys
import threading
import time
import traceback
from pathlib import Path

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ioweather import __version__
from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.units import format_age, format_bytes, format_seconds
from ioweather.views.output import to_json
from ioweather.web.context import WebConfig, WebContext
from ioweather.web.pages import load_pages
from ioweather.web.params import BadRequest, NotFound, format_seconds_short
from ioweather.web.registry import Page

HERE = Path(__file__).resolve().parent
STATE_SYMBOLS = {"normal": "✓", "degraded": "▲", "severely degraded": "✖", "stale": "○", "unknown": "?"}
SECURITY_HEADERS = [
    # Plotly injects <style> elements, hence 'unsafe-inline' for styles only; no inline scripts anywhere.
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                 b"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


def plotly_js_path() -> Path:
    import plotly

    return Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


class _Timing:
    """Pure ASGI middleware: `Server-Timing: app;dur=<ms>` (time to the response head) and security headers."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0 = time.perf_counter()

        async def wrapped(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"server-timing", f"app;dur={(time.perf_counter() - t0) * 1000:.1f}".encode()))
                headers.extend(SECURITY_HEADERS)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, wrapped)


def _jinja() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    # |tojson escapes <, >, & and ' for <script> blocks; to_json also turns NaN into null (JSON has no NaN).
    env.policies["json.dumps_function"] = lambda obj, **_: to_json(obj)
    env.filters["secs"] = format_seconds
    env.filters["ratio"] = lambda v: "–" if v is None else f"{v:.2f}×"
    env.filters["dur"] = format_seconds_short
    env.filters["pct"] = lambda v: "–" if v is None else f"{v:.0f}%"
    env.filters["cls"] = lambda s: str(s).replace(" ", "-")
    env.filters["symbol"] = lambda s: STATE_SYMBOLS.get(s, "?")
    env.filters["ago"] = _ago
    env.filters["bytes"] = format_bytes
    env.filters["num"] = _num
    env.filters["share"] = lambda v: "–" if v is None else f"{100 * v:.1f}%"
    return env


def _num(v, digits: int = 0) -> str:
    """12345.678 -> '12,346' (digits=0), '–' for None: counts and rates in tables."""
    return "–" if v is None else f"{v:,.{digits}f}"


def _ago(s: float | None) -> str:
    return "never" if s is None else f"{format_age(s)} ago"


def _json(obj, status_code: int = 200) -> Response:
    return Response(to_json(obj), status_code=status_code, media_type="application/json")


def create_app(settings: Settings, config: WebConfig | None = None, *, warm: bool = True,
               ctx: WebContext | None = None) -> Starlette:
    ctx = ctx or WebContext(settings, config)
    pages = load_pages()
    env = _jinja()

    def available() -> list[Page]:
        out = []
        for p in pages:
            try:
                if p.available(ctx):
                    out.append(p)
            except UserError:
                pass
        return out

    def nav() -> list[Page]:
        return [p for p in available() if p.in_nav]

    def render(template: str, status_code: int = 200, **values) -> HTMLResponse:
        values.setdefault("nav", nav())
        values.setdefault("version", __version__)
        values.setdefault("api_url", None)
        return HTMLResponse(env.get_template(template).render(**values), status_code=status_code)

    def page_html(page: Page):
        def endpoint(request: Request):
            data = page.data(ctx, request.query_params)
            api = f"/api/{page.slug}" + (f"?{request.url.query}" if request.url.query else "")
            return render(page.template, page=page, data=data, api_url=api, config=ctx.config)
        return endpoint

    def page_api(page: Page):
        def endpoint(request: Request):
            return _json(page.data(ctx, request.query_params))
        return endpoint

    def api_index(request: Request):
        avail = {p.slug for p in available()}
        return _json({"version": __version__, "metrics": "/metrics",
                      "pages": [{"slug": p.slug, "title": p.title, "html": f"/{p.slug}", "json": f"/api/{p.slug}",
                                 "available": p.slug in avail, "description": p.description} for p in pages]})

    metrics_holder: dict = {}
    metrics_lock = threading.Lock()

    def metrics(request: Request):
        from ioweather.services.metrics import CONTENT_TYPE_LATEST, ProbeMetrics

        if not ctx.settings.store_exists():
            body = ("# HELP ioweather_store_up 1 if every probe target could be read from the store.\n"
                    "# TYPE ioweather_store_up gauge\nioweather_store_up 0.0\n")
            return Response(body, media_type=CONTENT_TYPE_LATEST)
        with metrics_lock:
            if "m" not in metrics_holder:
                metrics_holder["m"] = ProbeMetrics(ctx.cache)
        return Response(metrics_holder["m"].exposition(), media_type=CONTENT_TYPE_LATEST)

    plotly_path = plotly_js_path()
    plotly_cache: dict = {}

    def plotly_js(request: Request):
        # Precompressed once: 4.8 MB of JavaScript is 1.4 MB gzipped, and GZipMiddleware would redo it per request.
        headers = {"cache-control": "public, max-age=86400", "vary": "accept-encoding"}
        if "gzip" in request.headers.get("accept-encoding", ""):
            if "gz" not in plotly_cache:
                plotly_cache["gz"] = gzip.compress(plotly_path.read_bytes(), 6)
            return Response(plotly_cache["gz"], media_type="text/javascript",
                            headers={**headers, "content-encoding": "gzip"})
        return Response(plotly_path.read_bytes(), media_type="text/javascript", headers=headers)

    def wants_json(request: Request) -> bool:
        return request.url.path.startswith("/api") or "application/json" in request.headers.get("accept", "")

    def error_response(request: Request, status: int, title: str, message: str) -> Response:
        if wants_json(request):
            return _json({"error": message, "status": status}, status)
        return render("error.html", status_code=status, page=Page("error", title, lambda c, p: {}, "error.html",
                                                                  lambda c: False), title=title, message=message)

    async def bad_request(request, exc):
        return error_response(request, 400, "Bad request", str(exc))

    async def not_found(request, exc):
        return error_response(request, 404, "Nothing to show", str(exc))

    async def store_error(request, exc):
        return error_response(request, 503, "Store unavailable", f"{exc}")

    async def http_404(request, exc):
        code = getattr(exc, "status_code", 404)
        msg = "no such page" if code == 404 else getattr(exc, "detail", "error")
        return error_response(request, code, "Not found" if code == 404 else "Error", msg)

    async def internal(request, exc):
        traceback.print_exception(exc, file=sys.stderr)
        return error_response(request, 500, "Internal error",
                              "ioweather failed on this request (a bug: the traceback is in the server's log)")

    @contextlib.asynccontextmanager
    async def lifespan(app):
        if warm:
            threading.Thread(target=_warm, args=(ctx,), name="ioweather-warm", daemon=True).start()
        yield
        ctx.close()

    routes = [Route("/", lambda r: RedirectResponse("/status", 307)),
              Route("/api", api_index), Route("/api/", api_index),
              Route("/metrics", metrics),
              Route("/static/plotly.min.js", plotly_js),
              Route("/favicon.ico", lambda r: RedirectResponse("/static/favicon.svg", 301))]
    for p in pages:
        routes += [Route(f"/{p.slug}", page_html(p)), Route(f"/api/{p.slug}", page_api(p))]
    routes.append(Mount("/static", StaticFiles(directory=HERE / "static"), name="static"))
    app = Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(_Timing), Middleware(GZipMiddleware,
                                                                                                    minimum_size=2048)],
                    exception_handlers={BadRequest: bad_request, NotFound: not_found, UserError: store_error,
                                        404: http_404, 405: http_404, Exception: internal})
    app.state.ctx = ctx
    return app


def _warm(ctx: WebContext) -> None:
    """Fill the probe cache in the background so the first page view and scrape are fast."""
    try:
        if ctx.problem() is None:
            ctx.cache.warm()
    except Exception:  # noqa: BLE001 - an optimisation only: requests compute what they need themselves
        pass
