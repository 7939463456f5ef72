"""The Starlette application behind `ioweather serve` and `ioweather watch` (served by services/runtime/server.py)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gzip
import threading
import time
from collections.abc import Callable
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ioweather import __version__
from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.services.answers.changes import keep_marks, load_libraries
from ioweather.services.answers.metrics import CONTENT_TYPE_LATEST, ProbeMetrics
from ioweather.web.context import WebConfig, WebContext
from ioweather.web.errors import exception_handlers, json_response
from ioweather.web.latest import Latest, Rendered
from ioweather.web.pages import load_pages
from ioweather.web.pages import jobs_common
from ioweather.web.pages import workload as workload_page
from ioweather.web.registry import Page
from ioweather.web.templating import Renderer, environment

HERE = Path(__file__).resolve().parent
SECURITY_HEADERS = [
    # Plotly injects <style> elements, hence 'unsafe-inline' for styles only; no inline scripts anywhere.
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                 b"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


def plotly_js_path() -> Path:
    # lazy: plotly, loaded only when this runs
    import plotly

    return Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


class _Timing:
    """Pure ASGI middleware: `Server-Timing: app;dur=<ms>` (time to the response head) and security headers.

    Wraps the whole application (see _App), not only the routes: Starlette's ServerErrorMiddleware, which
    answers the 500s, is the outermost layer of its own stack, so a user middleware never saw those.
    `on_answer` is called once each response has gone out."""

    def __init__(self, app, on_answer: Callable[[], object] | None = None, ctx: WebContext | None = None):
        self.app = app
        self.on_answer = on_answer
        #: Told when a request starts and when it has been answered (`WebContext.busy`: the warm-up yields to it).
        self.ctx = ctx

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0 = time.perf_counter()
        ended = False

        def end() -> None:
            nonlocal ended
            if not ended and self.ctx is not None:
                self.ctx.request_ended()
            ended = True

        async def wrapped(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"server-timing", f"app;dur={(time.perf_counter() - t0) * 1000:.1f}".encode()))
                headers.extend(SECURITY_HEADERS)
                message = {**message, "headers": headers}
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                end()
                if self.on_answer is not None:
                    self.on_answer()

        if self.ctx is not None:
            self.ctx.request_started()
        try:
            await self.app(scope, receive, wrapped)
        finally:
            end()


def _available(ctx: WebContext, pages: list[Page]) -> list[Page]:
    """The pages with something to show; a page whose check fails on the store is left out."""
    out = []
    for p in pages:
        try:
            if p.available(ctx):
                out.append(p)
        except UserError:
            pass
    return out


def _html(ctx: WebContext, page: Page, render: Renderer, data, url_query: str, nav: list | None = None):
    query = f"?{url_query}" if url_query else ""
    # a file system without the page's kind of data: its note and the form, not empty charts
    template = "fs_none.html" if isinstance(data, dict) and data.get("no_data") else page.template
    extra = {} if nav is None else {"nav": nav}
    return render(template, page=page, data=data, api_url=f"/api/{page.slug}{query}",
                  parts={name: path + query for name, path in page.part_paths().items()}, config=ctx.config, **extra)


def _page_html(ctx: WebContext, page: Page, render: Renderer):
    def endpoint(request: Request):
        latest = ctx.latest.get(page.slug)
        if latest is None:
            return _html(ctx, page, render, page.data(ctx, request.query_params), request.url.query)
        answer = latest.get(request.query_params, "html")
        nav = render.nav()
        # rendered once per answer (and navigation): 1.4 MB of HTML for 100 Status cards
        return HTMLResponse(answer.html(_html_key(nav, request.url.query), lambda: _html(
            ctx, page, render, answer.data, request.url.query, nav).body))
    return endpoint


def _api(ctx: WebContext, data, page: Page | None = None):
    def endpoint(request: Request):
        latest = ctx.latest.get(page.slug) if page is not None else None
        if latest is None:
            return json_response(data(ctx, request.query_params))
        return Response(latest.get(request.query_params, "json").json(), media_type="application/json")
    return endpoint


def _api_index(ctx: WebContext, pages: list[Page]):
    def endpoint(request: Request):
        avail = {p.slug for p in _available(ctx, pages)}
        return json_response({"version": __version__, "metrics": "/metrics",
                              "pages": [{"slug": p.slug, "title": p.title, "html": f"/{p.slug}",
                                         "json": f"/api/{p.slug}", "available": p.slug in avail,
                                         "parts": p.part_paths(),
                                         "description": p.description} for p in pages]})
    return endpoint


def _metrics(ctx: WebContext):
    holder: dict = {}
    lock = threading.Lock()
    # Counting starts when the server does, as docs/dashboard.md says: the collector is made at the first
    # scrape, and counted from then its counters stayed 0 until 90 s after that scrape. (A test's frozen
    # clock may stand before the real start: the earlier of the two.)
    started_ns = time.time_ns()

    def endpoint(request: Request):
        if not ctx.settings.store_exists():
            body = ("# HELP ioweather_store_up 1 if every probe target could be read from the store.\n"
                    "# TYPE ioweather_store_up gauge\nioweather_store_up 0.0\n")
            return Response(body, media_type=CONTENT_TYPE_LATEST)
        with lock:
            if "m" not in holder:
                holder["m"] = ProbeMetrics(ctx.cache, count_since_ns=min(started_ns, ctx.cache.clock()))
        return Response(holder["m"].exposition(), media_type=CONTENT_TYPE_LATEST)
    return endpoint


def _plotly_js():
    path = plotly_js_path()
    cache: dict = {}

    def endpoint(request: Request):
        # Precompressed once: 4.8 MB of JavaScript is 1.4 MB gzipped, and GZipMiddleware would redo it per request.
        headers = {"cache-control": "public, max-age=86400", "vary": "accept-encoding"}
        if "gzip" in request.headers.get("accept-encoding", ""):
            if "gz" not in cache:
                cache["gz"] = gzip.compress(path.read_bytes(), 6)
            return Response(cache["gz"], media_type="text/javascript",
                            headers={**headers, "content-encoding": "gzip"})
        return Response(path.read_bytes(), media_type="text/javascript", headers=headers)
    return endpoint


def _routes(ctx: WebContext, pages: list[Page], render: Renderer) -> list:
    index = _api_index(ctx, pages)
    routes = [Route("/", lambda r: RedirectResponse("/status", 307)),
              Route("/api", index), Route("/api/", index),
              Route("/metrics", _metrics(ctx)),
              Route("/static/plotly.min.js", _plotly_js()),
              Route("/favicon.ico", lambda r: RedirectResponse("/static/favicon.svg", 301))]
    for p in pages:
        routes += [Route(f"/{p.slug}", _page_html(ctx, p, render)), Route(f"/api/{p.slug}", _api(ctx, p.data, p))]
        routes += [Route(path, _api(ctx, p.parts[name])) for name, path in p.part_paths().items()]
    routes.append(Mount("/static", StaticFiles(directory=HERE / "static"), name="static"))
    return routes


def _lifespan(ctx: WebContext, warm: bool, render: Renderer):
    @contextlib.asynccontextmanager
    async def lifespan(app):
        if warm:
            # the warm-up first: its reads of the kept files and the store (I/O, SQLite: the GIL released) go on
            # beside the imports and the templates' compilation instead of after them, before the first request
            ctx.warm_up = threading.Thread(target=_warm, args=(ctx,), name="ioweather-warm", daemon=True)
            ctx.warm_up.start()
            if ctx.latest:
                keeper = threading.Thread(target=_keep_latest, args=(ctx,), name="ioweather-latest", daemon=True)
                ctx.background.append(keeper)
                keeper.start()
            _preload(ctx)
            _compile_templates(render)
        yield
        ctx.close()
    return lifespan


class _App(Starlette):
    def build_middleware_stack(self):
        return _Timing(super().build_middleware_stack(), self.state.ctx.answered.set, self.state.ctx)


#: zlib's level for the pages' answers. Starlette's default, 9, took 3.0 s of CPU for a 2.9 MB History
#: answer of 100 targets at load (1.12 MB out); 4 took 0.46 s for 1.16 MB, 1 0.17 s for 1.23 MB (issue 40).
GZIP_LEVEL = 4


#: The Host names a request may carry when the caller names none (services.runtime.server.allowed_hosts adds --host).
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def create_app(settings: Settings, config: WebConfig | None = None, *, warm: bool = True,
               ctx: WebContext | None = None, allowed_hosts: list[str] | tuple[str, ...] = LOOPBACK_HOSTS) -> Starlette:
    """`allowed_hosts`: the Host header names answered, anything else is a 400, so that a page on another
    site cannot read the dashboard through a victim's browser by pointing its own name at 127.0.0.1
    (DNS rebinding). A proxy in front passes its public name, which must be in the list."""
    ctx = ctx or WebContext(settings, config)
    pages = load_pages()
    render = Renderer(environment(), lambda: [p for p in _available(ctx, pages) if p.in_nav])
    app = _App(routes=_routes(ctx, pages, render), lifespan=_lifespan(ctx, warm, render),
               middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts), www_redirect=False),
                           Middleware(GZipMiddleware, minimum_size=2048, compresslevel=GZIP_LEVEL)],
               exception_handlers=exception_handlers(render))
    app.state.ctx = ctx
    for p in pages:
        if p.fresh_s > 0:
            latest = ctx.latest[p.slug] = Latest(ctx, p.data, p.fresh_s)
            latest.prerender = functools.partial(_prerender, ctx, p, render)
    return app


def _prerender(ctx: WebContext, page: Page, render: Renderer, answer: Rendered) -> None:
    """The default view's HTML of `answer` with the navigation of now, as its request would make it."""
    nav = render.nav()
    answer.html(_html_key(nav, ""), lambda: _html(ctx, page, render, answer.data, "", nav).body)


def _html_key(nav: list[Page], query: str) -> tuple:
    """What a kept answer's HTML depends on besides the answer: the navigation shown and the query (one key for
    the request and the prerender, else the prerender's HTML is never found)."""
    return (tuple(p.slug for p in nav), query)


#: How often (s) `_keep_latest` looks whether a page's newest answer needs computing again.
LATEST_EVERY_S = 0.5


def _keep_latest(ctx: WebContext) -> None:
    """Keep the pages' newest answers (web/latest.py) computed in the background once the warm-up has the probe
    cache's baselines and kept hours: the first Status answer after a restart, then its default view again before
    requests would find it too old, while it is being asked for. Waits while other pages are answered (at most
    WARM_YIELD_S a time), as the warm-up does."""
    while not ctx.warmed.wait(LATEST_EVERY_S):
        if ctx.closing.is_set():
            return
    while not ctx.closing.is_set():
        for latest in list(ctx.latest.values()):
            deadline = time.monotonic() + WARM_YIELD_S
            while ctx.busy() and not ctx.closing.is_set() and time.monotonic() < deadline:
                ctx.idle.wait(0.02)
            try:
                latest.refresh()
            except Exception:  # noqa: BLE001 - an optimisation only: a request computes its answer itself
                pass
        ctx.closing.wait(LATEST_EVERY_S)


def _preload(ctx: WebContext) -> None:
    """Before the server listens: the Workload page's libraries when the store has telemetry to show
    (web/pages/workload.load_libraries), so that no request imports them."""
    try:
        if ctx.settings.store_exists() and workload_page.has_telemetry(ctx):
            workload_page.load_libraries()
            # every page's navigation asks whether there are jobs (services/jobs/presence.py): its first count
            # made here, not by the first page after a restart (issue 40)
            jobs_common.has_jobs(ctx)
    except Exception:  # noqa: BLE001 - an optimisation only: the page imports what it needs itself
        pass


def _compile_templates(render: Renderer) -> None:
    """Before the server listens: every template compiled (~0.25 s of CPU for all), which Jinja does at a
    template's first use: the first Status page after a restart spent ~0.35 s of its answer on it (issue 40)."""
    for name in render.env.list_templates():
        render.env.get_template(name)


#: How long the warm-up's background work waits for the first answer to go out (see _warm).
WARM_HOLD_S = 5.0
#: At most this long (s) the warm-up's background work waits, before each target, for the pages being answered
#: (see _warm); then it goes on beside them.
WARM_YIELD_S = 1.0


def _warm(ctx: WebContext) -> None:
    """Fill the probe cache in the background so the first page view and scrape are fast, then load the
    change-point libraries (ruptures and scipy, ~0.7 s) for the pages' level-change marks, and search the
    marks of the pages' default windows then and each time an interval settles (`keep_marks`).

    The baselines come first: the first Status answer and scrape wait for them. What follows holds the
    GIL beside a request, so it waits for the first answer to go out (at most WARM_HOLD_S after the
    baselines): after a restart the Status page then answers in the time of its baselines
    (benchmarks/bench_web.py); and before each target it waits while a page is being answered (at most
    WARM_YIELD_S each time). A server shutting down meanwhile stops it."""
    deadline = None

    def hold() -> None:
        nonlocal deadline
        ctx.warmed.set()  # the baselines and kept hours are there: the pages' newest answers can be computed
        deadline = deadline or time.monotonic() + WARM_HOLD_S  # one hold, however often it is asked
        while not ctx.answered.is_set() and not stop.is_set() and time.monotonic() < deadline:
            ctx.answered.wait(0.1)

    def yield_to_requests() -> None:
        deadline = time.monotonic() + WARM_YIELD_S
        while ctx.busy() and not stop.is_set() and time.monotonic() < deadline:
            ctx.idle.wait(0.02)

    try:
        if ctx.problem() is not None:  # before ctx.cache, which would create a store that is not there
            return
        stop = ctx.cache.stop_event
        # the work after the first answer (the month's 4-hour rows, the baselines past their TTL, the marks'
        # search) waits before each target while a page is being answered: it held the GIL beside the first
        # views after a restart (a first Workload view 0.78 s for 0.06 s of its own work, issue 40)
        ctx.cache.yield_to = yield_to_requests
        ctx.cache.warm(hold=hold)
        hold()  # the rollups held already, or a store without pieces (their fill was the baselines' pass)
        if stop.is_set():
            return
        _release_free_memory()
        # History's marks search 600 series for 100 targets (~1.5 s): kept per settled interval, searched
        # here after a restart and whenever an interval settles rather than by the next view. A restart finds
        # its searches kept (store/probe_changes_file.py) and needs no library for them: they are looked up
        # before the libraries load (~0.7 s of CPU beside the first views), which any search not kept imports.
        wait = keep_marks(ctx.cache, ctx.cache.clock())
        load_libraries()
        while not stop.wait(wait):
            wait = keep_marks(ctx.cache, ctx.cache.clock())
    except Exception:  # noqa: BLE001 - an optimisation only: requests compute what they need themselves
        pass
    finally:
        # a warm-up that failed before its hold (a locked database) must not leave the first Status request
        # waiting WARM_WAIT_S for baselines that will not come: it computes them itself
        ctx.warmed.set()


def _release_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's malloc_trim). A first start summarizes
    the store's whole history into pieces (docs/probe-pieces.md): the arrays it frees stay in glibc's
    heap, ~140 MiB held for the life of a server that runs for months (benchmarks/bench_web.py)."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim, or the allocator returns memory itself
        pass
