"""c_ws_log_tail (REQ-13): viewers of a node's execution log over WebSockets.

Protocol: the client sends `{"project", "node", "from"}` (`from`: the byte offset it already has). The server
answers `{"type": "meta", "view": ...}` (the record: open / closed / purged ...), then `{"type": "lines", "start",
"end", "size", "text"}` messages of whole lines (UTF-8 JSON in binary frames: encoded once for all viewers), and when the log is no longer open and everything was sent,
`{"type": "end", "view": ...}` and a normal close. An unknown node is refused with `NODE_EXEC_NOT_FOUND` (close
code 4404), never an open silent socket.

Memory and work stay flat with many viewers: one `LogTail` per open log reads the file by byte range
(CHUNK_BYTES at a time, never the whole file) and encodes each chunk once; every viewer gets the same message.
The tail keeps the last RING_CHUNKS chunks; each viewer has only its byte offset. A viewer that starts behind,
or falls behind the ring, reads the bytes it misses by range itself, then takes the shared messages again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from starlette.websockets import WebSocket

from ..errors import ErrorCode, GraphLemonError
from ..execlogs import NodeLogs, line_start, log_path, read_range
from ..nodes import log_view

CHUNK_BYTES = 256 * 1024
POLL_S = 0.05  # how often the tail looks for new bytes (a stat and a read)
STATE_EVERY_S = 0.25  # how often it re-reads whether the log is still open (a ledger read)
RING_CHUNKS = 32  # the shared recent chunks (32 x 256 KB at most, whatever the number of viewers)


@dataclass
class Chunk:
    start: int
    end: int
    message: bytes  # the `lines` message, JSON encoded to UTF-8 once (sent as a binary frame to every viewer)


@dataclass
class LogTail:
    """One reader of one open log, shared by its viewers: the last RING_CHUNKS chunks, each encoded once."""

    path: Path
    logs: NodeLogs
    nid: str
    offset: int
    ring: deque = field(default_factory=lambda: deque(maxlen=RING_CHUNKS))
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task | None = None
    ended: bool = False

    def after(self, offset: int) -> Chunk | None:
        """The first shared chunk that ends past `offset` (None: nothing new yet)."""
        for chunk in self.ring:  # at most RING_CHUNKS, oldest first
            if chunk.end > offset:
                return chunk
        return None

    def _publish(self) -> None:
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    async def run(self) -> None:
        is_open, checked = True, time.monotonic()
        try:
            while True:
                chunk = await asyncio.to_thread(_read, self.path, self.offset)
                if chunk is not None and chunk.end > self.offset:
                    self.offset = chunk.end
                    self.ring.append(Chunk(chunk.start, chunk.end, _lines_message(chunk)))
                    self._publish()
                    continue
                if not is_open:
                    break
                if time.monotonic() - checked >= STATE_EVERY_S:
                    state = await asyncio.to_thread(self.logs.find, self.nid)
                    is_open, checked = state is not None and state.status == "open", time.monotonic()
                    continue  # one more read after it closed: the last lines
                await asyncio.sleep(POLL_S)
        finally:
            self.ended = True
            self._publish()


class LogTails:
    """The console's tails, one per (state folder, node); a tail ends when its log closes."""

    def __init__(self) -> None:
        self._tails: dict[Path, LogTail] = {}

    def get(self, path: Path, logs: NodeLogs, nid: str) -> LogTail:
        tail = self._tails.get(path)
        if tail is None or tail.ended:
            size = path.stat().st_size if path.exists() else 0
            tail = self._tails[path] = LogTail(path, logs, nid, offset=_line_floor(path, size))
            tail.task = asyncio.ensure_future(tail.run())
            tail.task.add_done_callback(lambda _t, p=path, me=tail: self._drop(p, me))
        return tail

    def _drop(self, path: Path, tail: LogTail) -> None:
        if self._tails.get(path) is tail:
            del self._tails[path]

    async def close(self) -> None:
        for tail in list(self._tails.values()):
            if tail.task is not None:
                tail.task.cancel()
                with contextlib.suppress(BaseException):
                    await tail.task


async def serve_log_tail(ws: WebSocket, registry, tails: LogTails, hello: dict) -> None:
    """Stream one node's log to one viewer until the log closes (or the viewer leaves)."""
    project_id, nid, start = hello.get("project"), hello.get("node"), hello.get("from", 0)
    if not isinstance(project_id, str) or not isinstance(nid, str) or not isinstance(start, int) or start < 0:
        raise GraphLemonError(ErrorCode.INVALID_PARAM, "a log subscription is {project, node, from >= 0}")
    handle = await asyncio.to_thread(registry.get, project_id)  # PROJECT_NOT_FOUND
    v = await asyncio.to_thread(log_view, handle.ledger, nid)  # NODE_EXEC_NOT_FOUND
    await ws.send_json({"type": "meta", "view": v.model_dump(mode="json")})
    if v.log is None or v.status == "purged":
        await _end(ws, handle, nid)
        return
    path = log_path(handle.state_dir, nid)
    if v.status != "open":  # a closed log: everything from `start`, then the end
        await _send_range(ws, path, start, None)
        await _end(ws, handle, nid)
        return
    tail = tails.get(path, NodeLogs(handle.ledger), nid)
    leaving = asyncio.ensure_future(ws.receive_text())  # notices the viewer leaving
    offset = start
    try:
        while True:
            item = tail.after(offset)
            if item is None:
                if tail.ended:  # the log closed: what is left, then the end
                    await _send_range(ws, path, offset, None)
                    await _end(ws, handle, nid)
                    return
                changed = asyncio.ensure_future(tail.changed.wait())
                done, _ = await asyncio.wait({changed, leaving}, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
                if leaving in done:
                    leaving.result()  # WebSocketDisconnect when the viewer left
                    leaving = asyncio.ensure_future(ws.receive_text())  # a ping: ignore
                continue
            if item.start != offset:  # started behind, or fell behind the ring: read the gap itself
                offset = await _send_range(ws, path, offset, item.end)
                continue
            await ws.send_bytes(item.message)
            offset = item.end
    finally:
        leaving.cancel()


async def _send_range(ws: WebSocket, path: Path, offset: int, until: int | None) -> int:
    """Send whole lines from `offset` up to `until` (None: the end of the file); -> the new offset."""
    while until is None or offset < until:
        limit = CHUNK_BYTES if until is None else min(CHUNK_BYTES, until - offset)
        chunk = await asyncio.to_thread(_read, path, offset, limit)
        if chunk is None or chunk.end <= offset:
            break
        await ws.send_bytes(_lines_message(chunk))
        offset = chunk.end
    return offset


async def _end(ws: WebSocket, handle, nid: str) -> None:
    final = await asyncio.to_thread(log_view, handle.ledger, nid)
    await ws.send_json({"type": "end", "view": final.model_dump(mode="json")})
    await ws.close()


def _lines_message(chunk) -> bytes:
    return json.dumps({"type": "lines", "start": chunk.start, "end": chunk.end, "size": chunk.size,
                       "text": chunk.text}, ensure_ascii=False).encode()  # fmt: skip


def _read(path: Path, offset: int, limit: int = CHUNK_BYTES):
    try:
        return read_range(path, offset, limit)
    except FileNotFoundError:
        return None


def _line_floor(path: Path, size: int) -> int:
    """The start of the line `size` falls in (the tail starts at a line start: its chunks are whole lines)."""
    with open(path, "rb") as fh:
        return line_start(fh, size)
