"""c_ws_log_tail (REQ-13): one WebSocket per viewer of a node's execution log.

Protocol: the client sends `{"project", "node", "from"}` (`from`: the byte offset it already has). The server
answers `{"type": "meta", "view": ...}` (the record: open / closed / purged ...), then `{"type": "lines", "start",
"end", "text"}` messages of whole lines (at most CHUNK_BYTES each, read by byte range: the file is never read
whole), and when the log is no longer open and everything was sent, `{"type": "end", "view": ...}` and a normal
close. An unknown node is refused with `NODE_EXEC_NOT_FOUND` (close code 4404), never an open silent socket.
"""

from __future__ import annotations

import asyncio
import time

from starlette.websockets import WebSocket

from ..errors import ErrorCode, GraphLemonError
from ..execlogs import NodeLogs, log_path, read_range, view

CHUNK_BYTES = 256 * 1024
POLL_S = 0.05  # how often a caught-up viewer looks for new bytes (a stat)
STATE_EVERY_S = 0.25  # how often it re-reads whether the log is still open (a ledger read)


async def serve_log_tail(ws: WebSocket, registry, hello: dict) -> None:
    """Stream one node's log to one viewer until the log closes (or the viewer leaves)."""
    project_id, nid, start = hello.get("project"), hello.get("node"), hello.get("from", 0)
    if not isinstance(project_id, str) or not isinstance(nid, str) or not isinstance(start, int) or start < 0:
        raise GraphLemonError(ErrorCode.INVALID_PARAM, "a log subscription is {project, node, from >= 0}")
    handle = await asyncio.to_thread(registry.get, project_id)  # PROJECT_NOT_FOUND
    v = await asyncio.to_thread(view, handle.ledger, nid)  # NODE_EXEC_NOT_FOUND
    await ws.send_json({"type": "meta", "view": v.model_dump(mode="json")})
    if v.log is None or v.status == "purged":
        await ws.send_json({"type": "end", "view": v.model_dump(mode="json")})
        await ws.close()
        return
    path = log_path(handle.state_dir, nid)
    logs = NodeLogs(handle.ledger)
    offset, is_open, checked = start, v.status == "open", time.monotonic()
    leaving = asyncio.ensure_future(ws.receive_text())  # notices the viewer leaving
    try:
        while True:
            chunk = await asyncio.to_thread(_read, path, offset)
            if chunk is not None and chunk.end > offset:
                offset = chunk.end
                await ws.send_json({"type": "lines", "start": chunk.start, "end": chunk.end, "size": chunk.size,
                                    "text": chunk.text})  # fmt: skip
                continue  # drain before looking at the state again
            if not is_open:
                final = await asyncio.to_thread(view, handle.ledger, nid)
                await ws.send_json({"type": "end", "view": final.model_dump(mode="json")})
                await ws.close()
                return
            if time.monotonic() - checked >= STATE_EVERY_S:
                state = await asyncio.to_thread(logs.find, nid)
                is_open, checked = state is not None and state.status == "open", time.monotonic()
                continue  # one more read after it closed: the last lines
            done, _ = await asyncio.wait({leaving}, timeout=POLL_S)
            if done:
                leaving.result()  # WebSocketDisconnect when the viewer left
                leaving = asyncio.ensure_future(ws.receive_text())  # a ping: ignore
    finally:
        leaving.cancel()


def _read(path, offset: int):
    try:
        return read_range(path, offset, CHUNK_BYTES)
    except FileNotFoundError:
        return None
