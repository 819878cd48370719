"""The console's security guard (REQ-12).

A state-changing request needs the console token in the `X-GraphLemon-Token` header (a cross-site page can neither
read the token nor set the header, so this is also the CSRF guard) and, when it sends an Origin, the console's own
origin; without it the answer is PERMISSION_DENIED. The page learns the token only from the HttpOnly cookie set by
opening the printed URL `/?token=...` (so a local process that never saw that URL can neither read nor steer a
loopback console: a sandboxed agent on the same machine included). Every read of the API (`/api/...`) and every
WebSocket needs the token too (header, cookie or, for a WebSocket, the query); bound beyond loopback, every request
does. On loopback the Host header must name the loopback (no DNS rebinding). A WebSocket passes the same Host and
Origin checks.
"""

from __future__ import annotations

import hmac
from importlib.abc import Traversable

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.websockets import WebSocket

from ..errors import ErrorCode, GraphLemonError, invalid_param
from .shared import ConsoleSettings, error_response

TOKEN_HEADER = "X-GraphLemon-Token"
TOKEN_COOKIE = "graphlemon_console"
# the cookie outlives the browser session (a person closes the browser and comes back to the same console); it is
# HttpOnly, and a console restarted with a new token no longer accepts it (revoked)
COOKIE_DAYS = 30
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


class Guard:
    """ASGI middleware: every HTTP request passes `check_request` first (WebSockets check in their handler)."""

    def __init__(self, app, settings: ConsoleSettings) -> None:
        self.app, self.settings = app, settings

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            refusal = check_request(Request(scope), self.settings)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def check_request(request: Request, settings: ConsoleSettings) -> Response | None:
    """None when the request may go on; otherwise the refusal."""
    host = request.headers.get("host", "")
    if settings.loopback and _host_name(host) not in LOOPBACK_HOSTS:
        return error_response(invalid_param(f"host {host!r} is not this console's"), status=421)
    header = request.headers.get(TOKEN_HEADER)
    authorised = _same(header, settings.token)
    needs_token = not settings.loopback or (request.method in ("GET", "HEAD") and _reads_data(request.url.path))
    if needs_token and not authorised and not _same(request.cookies.get(TOKEN_COOKIE), settings.token):
        if request.url.path == "/" and "token" in request.query_params:
            return None  # the token login (checked by the page handler)
        stale = request.cookies.get(TOKEN_COOKIE) is not None  # a cookie of a token this console no longer has
        return error_response(_token_refused("this console needs its token: open the URL it printed"), status=401,
                              extra={"token": "stale" if stale else "missing"})  # fmt: skip
    if request.method not in ("GET", "HEAD", "OPTIONS"):
        origin = request.headers.get("origin")
        if origin is not None and origin.split("://", 1)[-1] != host:
            return error_response(invalid_param(f"cross-origin request from {origin!r} refused"), status=403)
        if not authorised:
            why = (f"this page's {TOKEN_HEADER} is not this console's: the console restarted with a new token; "
                   "reload the page" if header else f"a state-changing request needs the {TOKEN_HEADER} header: "
                   "open the URL `graphlemon console` printed (it carries the token)")  # fmt: skip
            return error_response(_token_refused(why), status=403, extra={"token": "stale" if header else "missing"})
    return None


def ws_authorised(ws: WebSocket, settings: ConsoleSettings) -> bool:
    host = ws.headers.get("host", "")
    if settings.loopback and _host_name(host) not in LOOPBACK_HOSTS:
        return False
    origin = ws.headers.get("origin")
    if origin is not None and origin.split("://", 1)[-1] != host:  # cross-site WebSocket hijacking
        return False
    return _same(ws.cookies.get(TOKEN_COOKIE), settings.token) or _same(ws.query_params.get("token"), settings.token)


def _reads_data(path: str) -> bool:
    """The API's reads (the project's data); `/api/token` checks its own cookie, the page and its assets hold none."""
    return path.startswith("/api/") and path != "/api/token"


def page_routes(settings: ConsoleSettings, static: Traversable) -> list[Route]:
    """The page and the token's way into it: `/` (the token login) and `/api/token` (the token, to its cookie)."""

    async def index(request: Request) -> Response:
        """The page. Opening the printed URL (`/?token=...`) keeps the token in an HttpOnly cookie and drops it
        from the URL; the page gets the token only with that cookie, so a local process that did not see the
        printed URL gets a page that can read but never steer (docs/console.md, "Who may steer a console")."""
        given = request.query_params.get("token")
        if given is not None:
            if not _same(given, settings.token):
                return error_response(_token_refused("the token in this URL is not this console's"), status=401)
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(TOKEN_COOKIE, settings.token, httponly=True, samesite="strict",
                                max_age=COOKIE_DAYS * 86400)  # fmt: skip
            return response
        html = (static / "index.html").read_text(encoding="utf-8")
        token = settings.token if _same(request.cookies.get(TOKEN_COOKIE), settings.token) else ""
        return HTMLResponse(html.replace("{{TOKEN}}", token), headers=_page_headers())

    async def page_token(request: Request) -> Response:
        """A page opened before the console restarted asks for the current token: given to its cookie only."""
        if not _same(request.cookies.get(TOKEN_COOKIE), settings.token):
            return error_response(
                _token_refused(
                    "this browser has no token of this console (it restarted with a "
                    "new one?): open the URL `graphlemon console` printed"
                ),
                status=403,
            )
        return JSONResponse({"token": settings.token}, headers={"Cache-Control": "no-store"})

    return [Route("/", index), Route("/api/token", page_token)]


def _page_headers() -> dict[str, str]:
    return {
        "Content-Security-Policy": "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; "
        "style-src 'self'; script-src 'self'; frame-ancestors 'none'",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }


def _same(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def _host_name(host_header: str) -> str:
    if host_header.startswith("["):
        return host_header.split("]")[0] + "]"
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


def _token_refused(message: str) -> GraphLemonError:
    return GraphLemonError(ErrorCode.PERMISSION_DENIED, message)
