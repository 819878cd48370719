"""Reading an execution log (REQ-13) never loads a whole file: `read_range` (byte ranges cut at line ends),
`tail_lines` (from the end, block by block), `follow` (new lines until the log closes)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ..errors import invalid_param
from .records import log_path

if TYPE_CHECKING:
    from .write import NodeLogs

PAGE_MAX_BYTES = 1 << 20  # the most one range read returns


class LogChunk(BaseModel):
    """Bytes [start, end) of a log as text, cut at line ends; `size` is the file's size when read."""

    start: int
    end: int
    size: int
    text: str


def read_range(path: Path, start: int = 0, max_bytes: int = 256 * 1024) -> LogChunk:
    """At most `max_bytes` from `start`, ending at a line end (one line longer than the page comes whole up to
    PAGE_MAX_BYTES); a start inside a line moves to the next line."""
    if start < 0 or max_bytes <= 0:
        raise invalid_param(f"a byte range needs start >= 0 and a positive length, not {start}, {max_bytes}")
    max_bytes = min(max_bytes, PAGE_MAX_BYTES)
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        start = min(start, size)
        if start > 0:
            fh.seek(start - 1)
            if fh.read(1) != b"\n":  # inside a line: skip to the next one
                rest = fh.read(PAGE_MAX_BYTES)
                cut = rest.find(b"\n")
                start = size if cut < 0 else start + cut + 1
        fh.seek(start)
        data = fh.read(min(max_bytes, size - start))
    cut = data.rfind(b"\n") + 1
    if cut == 0 and data:  # a line longer than the page: return what fits (whole lines only when they end)
        cut = len(data) if start + len(data) >= size or len(data) >= PAGE_MAX_BYTES else 0
    data = data[:cut]
    return LogChunk(start=start, end=start + len(data), size=size, text=data.decode("utf-8", errors="replace"))


def tail_lines(path: Path, n: int) -> LogChunk:
    """The last `n` whole lines, read backwards block by block."""
    if n < 0:
        raise invalid_param(f"--tail must be 0 or more lines, not {n}")
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        end = size
        fh.seek(max(0, size - 1))
        if size and fh.read(1) != b"\n":  # a line being written: stop before it
            end = line_start(fh, size)
        pos, found, block = end, 0, 64 * 1024
        start = end
        while pos > 0 and found <= n:
            lo = max(0, pos - block)
            fh.seek(lo)
            buf = fh.read(pos - lo)
            idx = len(buf)
            while found <= n:
                idx = buf.rfind(b"\n", 0, idx)
                if idx < 0:
                    break
                found += 1
                if found == n + 1:
                    start = lo + idx + 1
                    break
            pos = lo
        if found <= n:
            start = 0
        if n == 0:
            start = end
        fh.seek(start)
        data = fh.read(end - start)
    return LogChunk(start=start, end=end, size=size, text=data.decode("utf-8", errors="replace"))


def line_start(fh, size: int) -> int:
    """The offset where the line holding byte `size - 1` starts (read back in 64 KB steps, never the whole file)."""
    pos = size
    while pos > 0:
        lo = max(0, pos - 65536)
        fh.seek(lo)
        buf = fh.read(pos - lo)
        idx = buf.rfind(b"\n")
        if idx >= 0:
            return lo + idx + 1
        pos = lo
    return 0


def follow(
    logs: NodeLogs, node_exec_id: str, start: int, *, poll_s: float = 0.1, max_bytes: int = 256 * 1024
) -> Iterator[LogChunk]:
    """New whole lines from `start` while the log is open; after it closes, what is left, then the end."""
    path = log_path(logs.state_dir, node_exec_id)
    offset = start
    while True:
        state = logs.find(node_exec_id)
        is_open = state is not None and state.status == "open"
        while True:  # drain what is there
            try:
                chunk = read_range(path, offset, max_bytes)
            except FileNotFoundError:
                return
            if chunk.end == offset:
                break
            offset = chunk.end
            yield chunk
        if not is_open:
            return
        time.sleep(poll_s)

