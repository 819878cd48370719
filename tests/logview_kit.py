"""Shared by the execution-log tests and benchmarks (REQ-13): a node that really runs and writes its log.

`RunningNode` opens a node execution through the real `NodeTracker` (which opens its execution_log_file),
writes lines through the real `write_line` seam from a thread, and ends the node (which closes the log).
"""

from __future__ import annotations

import threading
import time

from graphlemon.execlogs import NodeLogs, write_line
from graphlemon.nodes import NodeTracker
from graphlemon.taskboard import TaskBoard


class RunningNode:
    """A planner-like node execution of a fresh task: `start()` opens it, `write(n, every_s)` writes numbered lines
    from a thread, `finish()` ends it (`done`)."""

    def __init__(self, handle, stage: str = "coder", unit_id: str | None = "u1") -> None:
        self.handle = handle
        board = TaskBoard(handle.ledger)
        self.task_id = board.create("Implement a snake game").task_id
        board.transition(self.task_id, "planning")
        self.nid = f"ne-{self.task_id}-{stage}{'-' + unit_id if unit_id else ''}-r0"
        self.stage, self.unit_id = stage, unit_id
        self.nodes = NodeTracker(handle.ledger)
        self.thread: threading.Thread | None = None
        self.written: list[tuple[str, float]] = []  # (line text, monotonic time written)
        self.finished_at: float | None = None

    def start(self) -> RunningNode:
        self.nodes.transition(self.nid, "running", task_id=self.task_id, stage=self.stage, unit_id=self.unit_id)
        return self

    def line(self, text: str) -> None:
        write_line(self.handle.state_dir, self.nid, "agent", text)
        self.written.append((text, time.monotonic()))

    def write(self, n: int, every_s: float, *, finish: bool = True, prefix: str = "step") -> threading.Thread:
        def run() -> None:
            for i in range(n):
                self.line(f"{prefix} {i:04d} of {n}")
                time.sleep(every_s)
            if finish:
                self.finish()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        return self.thread

    def finish(self) -> None:
        self.nodes.transition(self.nid, "done", duration_ms=1)
        self.finished_at = time.monotonic()

    def log(self):
        return NodeLogs(self.handle.ledger).find(self.nid)
