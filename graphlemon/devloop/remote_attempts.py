"""Which run of a remote unit loop the devloop takes in, waits for or starts (docs/scale.md, "Resume").

Every run of the remote-unit-loop deployment carries two tags: its unit loop (`graphlemon-unit:<node execution
id>`) and the attempt that started it (`graphlemon-attempt:<lease id>`: the id of the task's lease when the run
was started, new at every start of the task's run — `graphlemon resume`, a console action, a deployed run started
again after its form). Whatever attempt started them, a finished run with a result is taken in and a run still
going is waited for, so nothing runs twice; a run that ended without a result counts only against the attempt
that started it. So each resume may start `TRIES` new runs of a unit that failed before: fixing the cause and
resuming always starts a fresh run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel

NODE_TAG = "graphlemon-unit:"
ATTEMPT_TAG = "graphlemon-attempt:"
TRIES = 2  # runs of one unit loop per attempt: the first, and one re-run (on another worker when one is free)
FINAL = frozenset({"COMPLETED", "FAILED", "CRASHED", "CANCELLED", "DELETED"})  # DELETED: gone from the API


class RunSeen(BaseModel):
    """What the devloop reads of one run of a remote unit loop."""

    id: str
    name: str
    state_type: str  # Prefect's StateType value: SCHEDULED, PENDING, RUNNING, COMPLETED, FAILED, CRASHED, ...
    state_name: str
    message: str = ""
    tags: list[str] = []
    created: datetime

    @property
    def final(self) -> bool:
        return self.state_type in FINAL

    @property
    def attempt(self) -> str | None:
        return next((t[len(ATTEMPT_TAG) :] for t in self.tags if t.startswith(ATTEMPT_TAG)), None)


class Plan(BaseModel):
    """The next step: take in a finished run's result, wait for a running one, start one, or give up."""

    action: Literal["take_in", "wait", "start", "give_up"]
    run: RunSeen | None = None
    key: str | None = None  # the idempotency key of the run to start
    failed: list[RunSeen] = []  # this attempt's runs that ended without a result


def run_tags(node_exec_id: str, attempt: str) -> list[str]:
    return [f"{NODE_TAG}{node_exec_id}", f"{ATTEMPT_TAG}{attempt}"]


def plan(runs: list[RunSeen], node_exec_id: str, attempt: str, unreadable: set[str] = frozenset()) -> Plan:
    """The step for a unit loop whose runs so far are `runs` (oldest first); `unreadable`: completed runs whose
    result could not be read (lost with its storage: as good as never finished)."""
    done = [r for r in runs if r.state_type == "COMPLETED" and r.id not in unreadable]
    if done:
        return Plan(action="take_in", run=done[-1])
    going = [r for r in runs if not r.final]
    if going:
        return Plan(action="wait", run=going[-1])
    failed = [r for r in runs if r.attempt == attempt]
    if len(failed) >= TRIES:
        return Plan(action="give_up", failed=failed)
    return Plan(action="start", key=f"graphlemon/{node_exec_id}/{attempt}/{len(failed) + 1}", failed=failed)


TRACEBACK = "Traceback (most recent call last):"


def first_line(text: str | None) -> str:
    """What a message says first, at most 300 characters: its first non-empty line, and when it carries a Python
    traceback (a log line written with the exception: "Unexpected exception encountered when trying to load flow",
    then the traceback) the exception it ends with — `<first line>: <exception>`."""
    lines = [line.rstrip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return ""
    head, raised = lines[0].strip(), exception_of(lines)
    line = head if not raised else raised if head == TRACEBACK else f"{head.rstrip(':. ')}: {raised}"
    return line if len(line) <= 300 else line[:299] + "…"


def exception_of(lines: list[str]) -> str:
    """The exception line of the last traceback in `lines` (the one raised last when exceptions are chained): the
    first line after its frames that is not indented; "" when there is no traceback."""
    starts = [i for i, line in enumerate(lines) if line.strip() == TRACEBACK]
    if not starts:
        return ""
    return next((line.strip() for line in lines[starts[-1] + 1 :] if not line[:1].isspace()), "")


def why_failed(run: RunSeen, cause: str = "") -> str:
    """One run in words: its name, how it ended, and the first line of its error."""
    said = first_line(cause) or first_line(run.message) or "no message"
    return f"flow run {run.name} ({run.id}) ended {run.state_name}: {said}"
