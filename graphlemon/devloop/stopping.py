"""A person's stop and abandon of a task, whatever runs it: `graphlemon stop` / `abandon`, the console's Stop and
abandon, Cancel in the Prefect UI. They mean one thing.

* A live holder of the task's lease gets a stop request on its lease (graphlemon/lease.py); it stops at its next
  safe point (before a step starts, or in a wait), keeps what it finished, and leaves the task
  `blocked_pending_human` (reason `stopped_by_person`, the note saying who stopped it and what was running) — or,
  for an abandon, `abandoned`.
* When nothing live holds the task, the stop is applied at once, by this process holding the lease (taken over
  from a gone holder, which the journal then says): an interrupted or queued task is blocked `stopped_by_person`;
  an abandon ends any task that has not ended.
* Waiting for a stop (`wait_stopped`) ends when the holder let go; a holder that dies before its safe point has its
  stop applied by the waiter.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel

from .. import lease as leases
from ..errors import ErrorCode, GraphLemonError, TaskHeld
from ..project import ProjectHandle
from ..stages.session import LoopSession
from ..taskboard import Task, TaskBoard
from ..wording import REASON_WORDS, status_words
from .loop import block

Outcome = Literal["stopping", "stopped", "abandoned", "nothing_to_stop"]
TAKE_TRIES = 5


class StopResult(BaseModel):
    outcome: Outcome
    task: Task
    message: str
    lease_id: str | None = None  # stopping: the lease of the holder asked to stop
    holder: str | None = None
    repeated: bool = False  # stopping: the holder was already asked (the first request stands; nothing recorded)


def stop_task(handle: ProjectHandle, task_id: str, *, by: str, note: str = "",
              then: Literal["block", "abandon"] = "block") -> StopResult:  # fmt: skip
    """Ask the task's live holder to stop (`stopping`), or, nothing running it, apply the stop now (`stopped`,
    `abandoned`, or `nothing_to_stop` for a task that already waits for a person). INVALID_TRANSITION for a task
    that has ended."""
    board = TaskBoard(handle.ledger)
    task = board.get(task_id)
    if task.terminal:
        what = "abandon" if then == "abandon" else "stop"
        raise GraphLemonError(ErrorCode.INVALID_TRANSITION, f"task {task_id} is {status_words(task.status)}: there is "
                              f"nothing to {what}, nothing changed", task_id=task_id, status=task.status)  # fmt: skip
    for _ in range(TAKE_TRIES):
        if (found := leases.ask_stop(handle.ledger, task_id, by=by, note=note, then=then)) is not None:
            asked, recorded = found
            verb = "abandons the task" if then == "abandon" else f"leaves the task blocked ({REASON_WORDS['stopped_by_person']})"
            first = "" if recorded or asked.stop is None else (
                f" (already requested by {asked.stop.by} at {asked.stop.at:%H:%M:%S} UTC: one request)")
            return StopResult(
                outcome="stopping", task=board.get(task_id), lease_id=asked.lease_id, holder=asked.holder.describe(),
                message=f"stop requested: {asked.describe()} stops at its next safe point and {verb}{first}",
                repeated=not recorded,
            )  # fmt: skip
        try:
            status = lambda: board.get(task_id).status  # noqa: E731
            with leases.held(handle.ledger, task_id, leases.Holder.here(f"graphlemon stop ({by})"), status=status):
                return _apply(handle, board, task_id, by, note, then)
        except TaskHeld:
            continue  # a run started between the two steps: ask it
    raise GraphLemonError(ErrorCode.TASK_HELD, f"task {task_id}: its runs kept changing hands; try again")


def _apply(handle: ProjectHandle, board: TaskBoard, task_id: str, by: str, note: str, then: str) -> StopResult:
    """Under the task's lease, nothing else running it: the stop's effect on the task, now."""
    task = board.get(task_id)
    said = f"{by}" + (f": {note}" if note else "")
    if then == "abandon":
        if task.terminal:
            return StopResult(outcome="nothing_to_stop", task=task, message=f"task {task_id} is already {task.status}")
        ended = board.transition(task_id, "abandoned", note=f"abandoned by {said}"[:2000], by=by)
        LoopSession(handle, task_id).timeline("abandoned", f"abandoned by {said}"[:300])
        return StopResult(outcome="abandoned", task=ended, message=f"task {task_id} is abandoned (nothing was running it)")
    if task.status not in (*leases.NEEDS_A_RUN, "queued"):
        return StopResult(outcome="nothing_to_stop", task=task,
                          message=f"task {task_id}: {status_words(task.status, task.blocked_reason)}; nothing runs it, "
                                  "nothing to stop")  # fmt: skip
    why = "its run had ended (interrupted)" if task.status != "queued" else "no run had picked it up yet"
    session = LoopSession(handle, task_id)
    blocked = block(session, "stopped_by_person", f"stopped by {said}; nothing was running it: {why}. "
                    f"`graphlemon resume {task_id}` continues from where it was")  # fmt: skip
    return StopResult(outcome="stopped", task=blocked, message=f"task {task_id} is stopped (nothing was running it)")


def wait_stopped(handle: ProjectHandle, task_id: str, result: StopResult, *, by: str, note: str = "",
                 then: Literal["block", "abandon"] = "block", timeout: float = 600.0, poll_s: float = 0.5) -> Task:  # fmt: skip
    """Wait until the holder asked to stop has let go of its lease -> the task then. A holder that died before its
    safe point leaves its stop undone: it is applied here. GraphLemonError (TASK_HELD) when the holder is still at it
    after `timeout` seconds (its stop stays requested)."""
    board = TaskBoard(handle.ledger)
    if result.outcome != "stopping":
        return result.task
    deadline = time.monotonic() + timeout
    while True:
        lease = next((x for x in leases.history(handle.ledger, task_id) if x.lease_id == result.lease_id), None)
        if lease is None or lease.released is not None:
            return board.get(task_id)
        if lease.gone() is not None:  # its holder died before reaching a safe point
            return stop_task(handle, task_id, by=by, note=note, then=then).task
        if time.monotonic() >= deadline:
            raise GraphLemonError(ErrorCode.TASK_HELD, f"task {task_id}: {result.holder} has not reached a safe point "
                                  f"after {timeout:g} s; its stop stays requested (it stops when its step ends)",
                                  task_id=task_id, lease_id=result.lease_id)  # fmt: skip
        time.sleep(poll_s)
