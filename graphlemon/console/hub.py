"""One live feed per project, shared by every WebSocket subscribed to it (REQ-12).

The hub watches the project's `.graphlemon/` folder with `watchfiles` (inotify; its polling mode
when the OS offers no notifications) and, on every change, parses the appended lines once and
hands the new events to each subscriber's queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path

from .feed import FeedEvent, LedgerFeed

log = logging.getLogger("graphlemon.console")


@dataclass(eq=False)
class Subscriber:
    task_id: str | None  # None: every event of the project
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)

    def wants(self, event: FeedEvent) -> bool:
        return self.task_id is None or event.task_id == self.task_id


class ProjectHub:
    def __init__(self, state_dir: Path, *, force_polling: bool | None = None) -> None:
        self.feed = LedgerFeed(state_dir)
        self.feed.poll()
        self.subscribers: set[Subscriber] = set()
        self.force_polling = force_polling
        self._watcher: asyncio.Task | None = None
        self._stop = asyncio.Event()
        self.events_published = 0

    def subscribe(self, task_id: str | None) -> Subscriber:
        sub = Subscriber(task_id)
        self.subscribers.add(sub)
        if self._watcher is None or self._watcher.done():
            self._stop = asyncio.Event()
            self._watcher = asyncio.get_running_loop().create_task(self._watch())
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)

    async def refresh(self) -> list[FeedEvent]:
        """Parse what was appended and publish it (also called by REST reads, so they see the latest)."""
        new = self.feed.poll()
        if new:
            self.events_published += len(new)
            for sub in list(self.subscribers):
                mine = [e for e in new if sub.wants(e)]
                if mine:
                    sub.queue.put_nowait(mine)
        return new

    async def close(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watcher

    async def _watch(self) -> None:
        from watchfiles import awatch

        state_dir = self.feed.state_dir
        try:
            async for _changes in awatch(state_dir, debounce=20, step=10, recursive=False, stop_event=self._stop,
                                         force_polling=self.force_polling, poll_delay_ms=100,
                                         rust_timeout=1000, yield_on_timeout=True):  # fmt: skip
                await self.refresh()
                if not self.subscribers:
                    return
        except Exception as exc:  # no notifications here: poll (the fallback), never go silent
            log.warning("console: watching %s failed (%s); polling every 0.2 s", state_dir, exc)
            while not self._stop.is_set() and self.subscribers:
                await self.refresh()
                await asyncio.sleep(0.2)
