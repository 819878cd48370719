"""The console's live protocol: one WebSocket per subscription (REQ-12), with cursors so a reconnecting page gets
exactly what it missed, and one per followed execution log (REQ-13).

`/ws`: the client sends {"project", "task"?, "cursors"?}; the server answers with a `snapshot` (state and cursors)
or, for valid cursors, `resumed` events with exactly what was missed, then `events` as they come, each once.
`/ws/logs`: the hello of `log_stream.serve_log_tail`. A refusal says why, then closes with a code the page shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..errors import ErrorCode, GraphLemonError
from . import views
from .security import ws_authorised
from .shared import ConsoleSettings, Hubs, dashboard_state, with_run

WS_CLOSE_PROJECT_NOT_FOUND = 4404
WS_CLOSE_UNAUTHORISED = 4401
WS_CLOSE_BAD_REQUEST = 4400


def live_routes() -> list[WebSocketRoute]:
    return [WebSocketRoute("/ws", serve_subscription), WebSocketRoute("/ws/logs", serve_log_tail)]


async def serve_subscription(ws: WebSocket) -> None:
    settings: ConsoleSettings = ws.app.state.settings
    hubs: Hubs = ws.app.state.hubs
    if not await _accept_authorised(ws, settings):
        return
    try:
        hello = json.loads(await asyncio.wait_for(ws.receive_text(), timeout=10))
        project_id, task_id, cursors = hello["project"], hello.get("task"), hello.get("cursors")
        if not isinstance(project_id, str) or not (task_id is None or isinstance(task_id, str)):
            raise ValueError("project and task are strings")
        if cursors is not None and not isinstance(cursors, dict):
            raise ValueError("cursors is an object of file -> offset")
    except (TimeoutError, ValueError, KeyError, TypeError) as exc:
        await _refuse(ws, WS_CLOSE_BAD_REQUEST, "INVALID_PARAM", f"bad subscription: {exc}")
        return
    except WebSocketDisconnect:
        return
    try:
        hub = await hubs.get(project_id)
    except GraphLemonError as exc:
        await _refuse(ws, WS_CLOSE_PROJECT_NOT_FOUND if exc.code == ErrorCode.PROJECT_NOT_FOUND else 4400,
                      str(exc.code), exc.message)  # fmt: skip
        return
    sub = hub.subscribe(task_id)
    try:
        missed = hub.feed.since(cursors) if cursors else None
        if missed is None:
            snap_cursors, records, nodes = hub.feed.snapshot(task_id)
            if task_id is not None:
                detail = views.task_detail(records, task_id, nodes)
                if detail is None:
                    await _refuse(ws, 4404, "TASK_NOT_FOUND", f"no task {task_id!r} in project {project_id}")
                    return
                handle = settings.registry.get(project_id)
                state: Any = await asyncio.to_thread(with_run, handle, detail, records)
            else:
                state = await asyncio.to_thread(dashboard_state, settings.registry.get(project_id), records)
            # events already queued for this subscriber but covered by the snapshot are skipped by cursor
            await ws.send_json({"type": "snapshot", "cursors": snap_cursors, "state": state})
            floor = snap_cursors
        else:
            await ws.send_text(_events_message("resumed", [e for e in missed if sub.wants(e)]))
            floor = _max_cursors(cursors, missed)
        await _pump(ws, sub, floor)
    except WebSocketDisconnect:
        pass
    finally:
        hub.unsubscribe(sub)


async def serve_log_tail(ws: WebSocket) -> None:
    """c_ws_log_tail: the hello, then `log_stream.serve_log_tail`; refusals say why (NODE_EXEC_NOT_FOUND, 4404)."""
    from .log_stream import serve_log_tail as serve

    settings: ConsoleSettings = ws.app.state.settings
    if not await _accept_authorised(ws, settings):
        return
    try:
        hello = json.loads(await asyncio.wait_for(ws.receive_text(), timeout=10))
        if not isinstance(hello, dict):
            raise ValueError("the subscription is a JSON object")
        await serve(ws, settings.registry, ws.app.state.log_tails, hello)
    except (TimeoutError, ValueError) as exc:
        await _refuse(ws, WS_CLOSE_BAD_REQUEST, "INVALID_PARAM", f"bad log subscription: {exc}")
    except GraphLemonError as exc:
        close = WS_CLOSE_PROJECT_NOT_FOUND if exc.code.endswith("_NOT_FOUND") else WS_CLOSE_BAD_REQUEST
        await _refuse(ws, close, str(exc.code), exc.message)
    except WebSocketDisconnect:
        return


async def _accept_authorised(ws: WebSocket, settings: ConsoleSettings) -> bool:
    """Accept the WebSocket; a client without the console's token is refused (and False returned)."""
    await ws.accept()
    if ws_authorised(ws, settings):
        return True
    await _refuse(ws, WS_CLOSE_UNAUTHORISED, "PERMISSION_DENIED", "this console needs its token: open the URL it printed")
    return False


def _max_cursors(cursors: dict[str, int], events: list) -> dict[str, int]:
    out = dict(cursors)
    for e in events:
        out[e.file] = max(out.get(e.file, 0), e.offset)
    return out


async def _pump(ws: WebSocket, sub, floor: dict[str, int]) -> None:
    """Forward the subscriber's events, each once: anything at or below `floor` was already sent."""
    receiver = asyncio.ensure_future(ws.receive_text())  # notices the client leaving
    try:
        while True:
            getter = asyncio.ensure_future(sub.queue.get())
            done, _ = await asyncio.wait({getter, receiver}, return_when=asyncio.FIRST_COMPLETED)
            if receiver in done:
                getter.cancel()
                receiver.result()  # raises WebSocketDisconnect when the client left
                receiver = asyncio.ensure_future(ws.receive_text())  # a ping from the client: ignore
                continue
            batch = [e for e in getter.result() if e.offset > floor.get(e.file, 0)]
            while not sub.queue.empty():
                batch += [e for e in sub.queue.get_nowait() if e.offset > floor.get(e.file, 0)]
            if batch:
                for e in batch:
                    floor[e.file] = max(floor.get(e.file, 0), e.offset)
                await ws.send_text(_events_message("events", batch))
    finally:
        receiver.cancel()
        with contextlib.suppress(BaseException):
            await receiver


def _events_message(kind: str, events: list) -> str:
    body = ",".join(e.text for e in events)  # each event encoded once, whatever the number of subscribers
    return f'{{"type":"{kind}","events":[{body}]}}'


async def _refuse(ws: WebSocket, close_code: int, code: str, message: str) -> None:
    """Say why, then close with a code the page shows (never an open socket that sends nothing)."""
    with contextlib.suppress(Exception):
        await ws.send_json({"type": "error", "error": {"code": code, "message": message}})
        await ws.close(code=close_code, reason=f"{code}: {message}"[:120])
