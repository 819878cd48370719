"""The process of GraphLemon's local Prefect server (graphlemon/local_server.py starts it; docs/prefect.md).

Prefect's own server application (`prefect.server.api.server.create_app`, what `prefect server start` serves: API, UI
and services) on 127.0.0.1, with two additions around it:

- **SQLite lock retries, server-side.** Prefect's server on SQLite writes a run's state in a DEFERRED transaction:
  it reads, then writes. When another request writes in between, SQLite refuses the upgrade at once ("database is
  locked": no busy wait applies) and the server answers 503, which the client retries after 2, 4, 8 … s. Two unit
  loops starting subflows at the same moment meet this a few times per run. A 503 without `Retry-After` is tried
  again here after 20, 50, 100, 200 and 400 ms (the request body replayed; a 503 means nothing was written, the same
  reason the client may retry it) before it is passed on and the client's own back-off takes over unchanged.
- **Idle stop.** The server exits when no request came for its idle minutes and no command holds a lease
  (`leases/<pid>` of a live process), or when its `server.json` no longer names it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import threading
import time
from pathlib import Path

QUICK_S = (0.02, 0.05, 0.1, 0.2, 0.4)
WATCH_S = 15.0


class Activity:
    def __init__(self) -> None:
        self.last = time.monotonic()

    def touch(self) -> None:
        self.last = time.monotonic()


class RetryLocked:
    """ASGI middleware: quick server-side retries of a 503 that names no `Retry-After` (SQLite's lock)."""

    def __init__(self, app, activity: Activity) -> None:
        self.app, self.activity = app, activity

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        self.activity.touch()
        body = await _read_body(receive)
        for delay in QUICK_S:
            if await self._attempt(scope, body, send, retryable=True):
                return
            await asyncio.sleep(delay)
        await self._attempt(scope, body, send, retryable=False)

    async def _attempt(self, scope, body: bytes, send, retryable: bool) -> bool:
        """Run the app once: True when its response went out; False for a retryable 503, held back (not sent)."""
        state = {"hold": False}
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:  # the app reads past the body: wait as a finished request would (a disconnect)
                await asyncio.Event().wait()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def relay(message):
            if message["type"] == "http.response.start":
                headers = {k.lower() for k, _ in message.get("headers", [])}
                state["hold"] = retryable and message["status"] == 503 and b"retry-after" not in headers
            if not state["hold"]:
                await send(message)

        try:
            await self.app(dict(scope), replay, relay)  # routing rewrites its scope's path: each attempt a copy
        except Exception:
            if not state["hold"]:
                raise  # Starlette re-raises after sending its error response: a held 503 is retried instead
        return not state["hold"]


async def _read_body(receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _watch(server, activity: Activity, state_dir: Path, idle_s: float) -> None:
    from graphlemon.local_server import live_leases, read_info

    while not server.should_exit:
        time.sleep(min(WATCH_S, idle_s / 3))
        info = read_info(state_dir)
        if info is None or info.pid != os.getpid():
            server.should_exit = True  # stopped or replaced: `graphlemon server stop`, or its folder removed
        elif time.monotonic() - activity.last > idle_s and not live_leases(state_dir):
            server.should_exit = True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m graphlemon.flows.local_server")
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--idle-minutes", type=float, required=True)
    args = parser.parse_args(argv)

    import uvicorn
    from prefect.server.api.server import create_app

    activity = Activity()
    app = RetryLocked(create_app(final=True), activity)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning"))
    threading.Thread(target=_watch, args=(server, activity, args.state_dir, args.idle_minutes * 60),
                     name="graphlemon-idle-stop", daemon=True).start()  # fmt: skip
    try:
        server.run()
    finally:
        from graphlemon.local_server import INFO_FILE, read_info

        info = read_info(args.state_dir)
        if info is not None and info.pid == os.getpid():
            (args.state_dir / INFO_FILE).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
