"""The console's router: how a REST route is declared (routes.py, routes_actions.py, routes_logs.py declare them)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import GraphLemonError, invalid_param
from .shared import error_response


class Router:
    """The routes as they are declared: `@router.route(method, path, Body)` makes a JSON endpoint (path parameters
    and the validated body as arguments; domain errors as `error` JSON); `router.raw` adds a plain Starlette one."""

    def __init__(self) -> None:
        self.routes: list[Route] = []

    def route(self, method: str, path: str, body: type[BaseModel] | None = None):
        routes = self.routes

        def register(handler):
            async def endpoint(request: Request) -> Response:
                try:
                    kwargs = dict(request.path_params)
                    if body is not None:
                        kwargs["body"] = body.model_validate(await _json(request))
                    result = await handler(**kwargs)
                except GraphLemonError as exc:
                    return error_response(exc)
                except ValidationError as exc:
                    first = exc.errors()[0]
                    where = ".".join(str(p) for p in first.get("loc", ())) or "request"
                    return error_response(invalid_param(f"{where}: {first.get('msg', 'invalid')}"))
                return result if isinstance(result, Response) else JSONResponse(result)

            routes.append(Route(path, endpoint, methods=[method]))
            return handler

        return register

    def raw(self, path: str, endpoint: Callable[[Request], Awaitable[Response]], method: str = "GET") -> None:
        self.routes.append(Route(path, endpoint, methods=[method]))


async def _json(request: Request) -> Any:
    try:
        return await request.json()
    except ValueError:
        raise invalid_param("the request body is not JSON") from None
