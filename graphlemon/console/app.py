"""The console's web app, assembled: the security guard (`security.py`) in front of the page, the REST routes
(`routes.py`) and the live WebSockets (`live.py`), which share the settings and one hub per project (`state.py`)."""

from __future__ import annotations

import contextlib
from importlib import resources

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from .live import live_routes
from .log_stream import LogTails
from .routes import api_routes
from .security import TOKEN_HEADER, Guard, page_routes
from .shared import ConsoleSettings, Hubs

__all__ = ["TOKEN_HEADER", "ConsoleSettings", "create_app"]


def create_app(settings: ConsoleSettings | None = None) -> Starlette:
    """Starlette (not FastAPI: no OpenAPI models to build, so the console starts in well under a second)."""
    settings = settings or ConsoleSettings()
    static = resources.files("graphlemon.console") / "static"
    hubs = Hubs(settings)
    app = Starlette(
        routes=[*page_routes(settings, static), Mount("/static", StaticFiles(directory=str(static))),
                *api_routes(settings, hubs), *live_routes()],
        middleware=[Middleware(Guard, settings=settings)],
        lifespan=_lifespan,
    )  # fmt: skip
    app.state.settings = settings
    app.state.hubs = hubs
    app.state.log_tails = LogTails()
    return app


@contextlib.asynccontextmanager
async def _lifespan(app: Starlette):
    yield
    await app.state.hubs.close()
    await app.state.log_tails.close()
