"""Following a project's ledger files from byte offsets: the console's one source of live events (REQ-12).

Every event carries a cursor, `<ledger file>:<byte offset just past its line>`. A client that
reconnects with its last cursor per file gets exactly the lines appended after them; a cursor
that no longer names a line end of the file (the file was replaced or truncated, or the offset
was made up) is invalid, and the client gets a fresh snapshot instead.

Only whole lines are taken: a line still being written is read on the next poll.
"""

from __future__ import annotations

import functools
import heapq
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .. import nodes as nodefold
from ..errors import GraphLemonError
from ..ledger import decode_line
from ..models import LEDGER_FILES, NodeEvent, Record

# what the console shows; outcomes (stage return values) and triage verdicts are read on demand
FOLLOWED_KINDS = ("task", "node", "bug", "usage", "budget", "timeline", "escalation", "artifact", "run", "task_settings",
                  "lease")
FOLLOWED_FILES = tuple(LEDGER_FILES[k] for k in FOLLOWED_KINDS)
FILE_KIND = {LEDGER_FILES[k]: k for k in FOLLOWED_KINDS}


@dataclass(frozen=True, eq=False)
class FeedEvent:
    seq: int  # order of ingestion across files
    file: str
    offset: int  # byte offset just past the event's line
    record: Record

    @property
    def cursor(self) -> str:
        return f"{self.file}:{self.offset}"

    @property
    def task_id(self) -> str | None:
        return getattr(self.record, "task_id", None)

    @functools.cached_property
    def text(self) -> str:
        """The event as JSON text, encoded once however many subscribers it goes to."""
        return json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False)

    def to_json(self) -> dict:
        return {
            "cursor": self.cursor,
            "file": self.file,
            "offset": self.offset,
            "kind": self.record.kind,
            "record": self.record.model_dump(mode="json", exclude_none=True),
        }


@dataclass
class _FileFeed:
    inode: int = -1
    offset: int = 0
    lines: int = 0
    events: list[FeedEvent] = field(default_factory=list)
    ends: set[int] = field(default_factory=lambda: {0})


class LedgerFeed:
    """The followed ledger files of one `.graphlemon/` directory, parsed once, kept in memory."""

    def __init__(self, state_dir: Path | str) -> None:
        self.state_dir = Path(state_dir)
        self._files: dict[str, _FileFeed] = {name: _FileFeed() for name in FOLLOWED_FILES}
        self._seq = 0
        self._nodes: dict[str | None, dict[str, nodefold.NodeExec]] = {}  # task -> node id -> folded node
        self._lock = threading.Lock()
        self.generation = 0  # bumped when a file was replaced or truncated (every cursor into it is void)

    def poll(self) -> list[FeedEvent]:
        """Parse the whole lines appended since the last poll -> the new events, oldest first."""
        with self._lock:
            per_file = [self._poll_file(name) for name in FOLLOWED_FILES]
            new = []
            # across files, the order the writers wrote them; within a file, always the file's order
            for name, offset, record in heapq.merge(*per_file, key=lambda p: p[2].ts):
                self._seq += 1
                event = FeedEvent(self._seq, name, offset, record)
                self._files[name].events.append(event)
                new.append(event)
                if isinstance(record, NodeEvent):  # the graph's state, folded as lines arrive (not per page open)
                    nodefold.apply_event(self._nodes.setdefault(record.task_id, {}), record)
            return new

    def cursors(self) -> dict[str, int]:
        with self._lock:
            return {name: f.offset for name, f in self._files.items()}

    def records(self, kind: str) -> list[Record]:
        with self._lock:
            return [e.record for e in self._files[LEDGER_FILES[kind]].events]

    def snapshot(self, task_id: str | None = None) -> tuple[dict[str, int], dict[str, list[Record]], list[dict]]:
        """Consistent cursors, records (everything up to those cursors) by kind, and the task's folded nodes."""
        with self._lock:
            cursors = {name: f.offset for name, f in self._files.items()}
            records = {FILE_KIND[name]: [e.record for e in f.events] for name, f in self._files.items()}
            nodes = [n.model_dump(mode="json") for n in self._nodes.get(task_id, {}).values()] if task_id else []
            return cursors, records, nodes

    def since(self, cursors: dict[str, int]) -> list[FeedEvent] | None:
        """The events after `cursors` (file -> offset; a file left out means from its start), in ingestion order;
        None when a cursor is not a line end this feed knows (the caller sends a fresh snapshot)."""
        with self._lock:
            picked: list[FeedEvent] = []
            for name, offset in cursors.items():
                feed = self._files.get(name)
                if feed is None or not isinstance(offset, int) or offset not in feed.ends:
                    return None
            for name, feed in self._files.items():
                start = cursors.get(name, 0)
                picked += _after(feed.events, start)
            picked.sort(key=lambda e: e.seq)
            return picked

    def event_count(self) -> int:
        with self._lock:
            return sum(len(f.events) for f in self._files.values())

    # -- internals ------------------------------------------------------------------------------
    def _reset(self, name: str) -> _FileFeed:
        """A file was replaced or truncated: forget it (its cursors are void) and fold its nodes again."""
        self.generation += 1
        self._files[name] = _FileFeed()
        if FILE_KIND[name] == "node":
            self._nodes = {}
        return self._files[name]

    def _poll_file(self, name: str) -> list[tuple[str, int, Record]]:
        path = self.state_dir / name
        feed = self._files[name]
        try:
            st = os.stat(path)
        except FileNotFoundError:
            if feed.offset:
                self._reset(name)
            return []
        if feed.inode not in (-1, st.st_ino) or st.st_size < feed.offset:
            feed = self._reset(name)
        feed.inode = st.st_ino
        if st.st_size == feed.offset:
            return []
        with open(path, "rb") as fh:
            fh.seek(feed.offset)
            chunk = fh.read(st.st_size - feed.offset)
        cut = chunk.rfind(b"\n") + 1
        new: list[tuple[str, int, Record]] = []
        pos = feed.offset
        for raw in chunk[:cut].split(b"\n")[:-1]:
            pos += len(raw) + 1
            feed.lines += 1
            if not raw.strip():
                continue
            try:
                record = decode_line(raw, path, feed.lines)
            except GraphLemonError:
                # a corrupt line is the ledger's to report (LEDGER_CORRUPT); the console stops before it
                feed.lines -= 1
                break
            new.append((name, pos, record))
            feed.ends.add(pos)
            feed.offset = pos
        else:
            feed.offset = pos  # past trailing blank lines too
            feed.ends.add(pos)
        return new


def _after(events: list[FeedEvent], offset: int) -> list[FeedEvent]:
    lo, hi = 0, len(events)
    while lo < hi:  # events are sorted by offset within a file
        mid = (lo + hi) // 2
        if events[mid].offset <= offset:
            lo = mid + 1
        else:
            hi = mid
    return events[lo:]
