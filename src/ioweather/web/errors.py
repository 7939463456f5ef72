"""How the dashboard answers a request that fails: JSON for /api and clients asking for it, an HTML
page otherwise; the status says whose fault it is (400 bad parameters, 404 nothing there, 503 the
store, 500 a bug, whose traceback goes to the server's log only)."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import Response

from ioweather.errors import UserError
from ioweather.views.output import to_json
from ioweather.web.params import BadRequest, NotFound
from ioweather.web.registry import Page


def json_response(obj, status_code: int = 200) -> Response:
    return Response(to_json(obj), status_code=status_code, media_type="application/json")


def wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api") or "application/json" in request.headers.get("accept", "")


def exception_handlers(render: Callable[..., Response]) -> dict:
    """Starlette's exception_handlers, rendering HTML errors with `render` (a templating.Renderer)."""

    def error_response(request: Request, status: int, title: str, message: str) -> Response:
        if wants_json(request):
            return json_response({"error": message, "status": status}, status)
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

    return {BadRequest: bad_request, NotFound: not_found, UserError: store_error, 404: http_404, 405: http_404,
            Exception: internal}
