"""Serving the console: bind checks, the token rule, uvicorn."""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
from dataclasses import dataclass

from ..errors import GraphLemonError, invalid_param

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8766
TOKEN_ENV = "GRAPHLEMON_CONSOLE_TOKEN"
MIN_TOKEN_CHARS = 16
# no permessage-deflate: a followed execution log is megabytes a second per viewer, and deflating every message
# for every viewer costs the console more CPU than the loopback or LAN link it saves (benchmarks/bench_logs.py)
WS_DEFLATE = False


PORT_TRIES = 50  # a console whose port is busy takes the next free one, up to this many further (as Jupyter does)


@dataclass(frozen=True)
class Binding:
    host: str
    port: int
    token: str
    loopback: bool
    token_given: bool
    asked_port: int | None = None  # the port asked for, when it was busy and `port` is the next free one

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/?token={self.token}"  # opening it gives this browser the right to steer


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def plan_binding(host: str, port: int, token: str | None, *, next_free: bool = False) -> Binding:
    """INVALID_PARAM for a port out of range, a short token, or a port already taken. `next_free` (the console): a
    busy port moves to the next free one after it (at most PORT_TRIES further), and the binding says so."""
    if not 0 < port < 65536:
        raise invalid_param(f"port {port} is not between 1 and 65535")
    given = token if token is not None else os.environ.get(TOKEN_ENV)
    if given is not None and len(given.strip()) < MIN_TOKEN_CHARS:
        raise invalid_param(f"the console token must have at least {MIN_TOKEN_CHARS} characters")
    token = (given or "").strip() or secrets.token_urlsafe(24)
    first_error: GraphLemonError | None = None
    for candidate in range(port, min(port + PORT_TRIES, 65535) + 1 if next_free else port + 1):
        try:
            _check_free(host, candidate)
        except GraphLemonError as exc:
            first_error = first_error or exc
            continue
        return Binding(host, candidate, token, is_loopback(host), bool(given), port if candidate != port else None)
    if next_free and first_error is not None:
        raise invalid_param(f"{first_error.message}, nor on the next {PORT_TRIES} ports; give a free one: --port N")
    raise first_error  # type: ignore[misc]


def _check_free(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise invalid_param(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def serve(binding: Binding, *, force_polling: bool | None = None, registry=None, health=None) -> None:
    """Serve the console until stopped. `registry`: the projects it lists (default: the user's registry);
    `health`: what GET /healthz adds to its answer (`graphlemon serve`)."""
    import uvicorn

    from .app import ConsoleSettings, create_app

    settings = ConsoleSettings(token=binding.token, loopback=binding.loopback, force_polling=force_polling,
                               health=health)  # fmt: skip
    if registry is not None:
        settings.registry = registry
    app = create_app(settings)
    uvicorn.run(app, host=binding.host, port=binding.port, log_level="warning", ws="websockets-sansio", lifespan="on",
                ws_per_message_deflate=WS_DEFLATE)  # fmt: skip


class BackgroundServer:
    """The console served by uvicorn in a thread of this process (tests, benchmarks): start, stop, start again."""

    def __init__(self, settings, host: str = DEFAULT_HOST, port: int = 0) -> None:
        self.settings, self.host = settings, host
        self.port = port or free_port(host)
        self._server = None
        self._thread = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> BackgroundServer:
        import threading
        import time

        import uvicorn

        from .app import create_app

        config = uvicorn.Config(create_app(self.settings), host=self.host, port=self.port, log_level="warning",
                                ws="websockets-sansio", lifespan="on", ws_per_message_deflate=WS_DEFLATE)  # fmt: skip
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"the console did not start on {self.url}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Close the listening socket and every open WebSocket (as a killed server would)."""
        if self._server is None:
            return
        self._server.should_exit = True  # uvicorn closes the listener and every WebSocket (close code 1012)
        self._thread.join(timeout=15)
        self._server = None


def free_port(host: str = DEFAULT_HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
