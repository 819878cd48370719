"""Starting runs from the console: a new goal (REQ-11 v_goal_composer) and the continuation of a task a person
resumed, re-budgeted or found idle (REQ-09 / REQ-10).

A goal runs as a Prefect deployment run when a Prefect API is configured and the `devloop` deployment exists,
otherwise as `graphlemon run`, a detached local process. A task is continued by `graphlemon resume`, a detached
local process too (the same run the command line would start, with the engine the task last ran under).

The console takes the task's lease before it changes anything (graphlemon/lease.py): a second action on a running
task is refused with who runs it, and a second request of the same action (a double-click: the same action id) is
that action, answered again. The lease is handed to the process it starts (`GRAPHLEMON_LEASE`, adopted by
`graphlemon resume`) or to the deployment's flow run (held for it until it starts), so nothing can start a second
run between the click and the run. Every local process is a *launch*: `.graphlemon/logs/console/<launch_id>.log`
(its output) and `launch` records in the journal (what was started, its pid, its exit code), so the page can follow
it and show why it failed.

The input is checked here first, with the CLI's rules, so a bad goal writes nothing and starts nothing; a project
that cannot run a goal (no git work tree, no commit yet) is refused before any process starts.
Prefect is imported only on the deployment path (starting the console must not import it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from .. import lease as leases
from ..errors import ErrorCode, GraphLemonError, invalid_param
from ..lease import HeldLease, Holder, Lease
from ..models import LaunchEvent, TaskEvent, utcnow
from ..processes import pid_exists
from ..project import ProjectHandle, require_commit, require_git, require_writable
from ..taskboard import check_goal_text

DEPLOYMENT = "devloop/devloop"
ENGINES = ("prefect", "direct")


@dataclass(frozen=True)
class GoalRequest:
    goal: str
    executor: str
    playbook: Path | None
    engine: str = "prefect"
    budget_tokens: int | None = None  # the budget guardrail, as `graphlemon run --budget-tokens`


LAUNCH_DIR = Path("logs") / "console"  # under the project's state dir
LOG_TAIL_CHARS = 4000


@dataclass(frozen=True)
class Started:
    mode: str  # "deployment" | "local"
    ref: str  # flow run id, or the local process id
    log: str | None = None
    launch_id: str | None = None
    repeated: bool = False  # an answer to a request already served (the same action id): nothing new started


class Launch(BaseModel):
    """One process the console started (`graphlemon run` for a goal, `graphlemon resume` for a task): the fold of
    its `launch` records."""

    launch_id: str
    kind: Literal["goal", "resume"]
    task_id: str | None = None  # a goal's task is created by the process itself (its lease names the launch)
    goal: str | None = None
    pid: int
    log: str  # relative to the state dir
    started: datetime
    action_id: str | None = None  # the console action that started it (a second request with it is the same one)
    returncode: int | None = None
    ended: datetime | None = None


class LaunchView(BaseModel):
    """A launch as the page shows it: `running`, `ended` (its run let go of the task where the loop stops: done,
    blocked...) or `failed` (it exited with an error before running the task, or died holding it); the log's tail."""

    launch_id: str
    kind: str
    task_id: str | None
    state: Literal["running", "ended", "failed"]
    returncode: int | None
    log: str
    log_tail: str
    started: datetime


def check_goal(
    goal: str, executor: str, playbook: str | None, engine: str, budget_tokens: int | None = None
) -> GoalRequest:
    """INVALID_PARAM for anything the run would refuse (before anything is written or started)."""
    from ..agents import EXECUTORS, AgentSettings, check_executor
    from ..agents.budget import check_budget

    text = check_goal_text(goal)
    if executor not in EXECUTORS:
        raise invalid_param(f"unknown executor {executor!r}; choose one of: {', '.join(EXECUTORS)}")
    if engine not in ENGINES:
        raise invalid_param(f"unknown engine {engine!r}; choose prefect or direct")
    book = _playbook(playbook)
    if executor == "scripted" and book is None:
        raise invalid_param("the scripted executor needs a playbook (the absolute path of its YAML file)")
    check_executor(executor, playbook=book, settings=AgentSettings.from_env())
    if budget_tokens is not None:
        check_budget(budget_tokens, "token_count")
    return GoalRequest(text, executor, book, engine, budget_tokens)


def _playbook(value: str | None) -> Path | None:
    if value is None or not value.strip():
        return None
    from ..inputs import existing_file

    path = Path(value.strip()).expanduser()
    if not path.is_absolute():  # the console runs elsewhere than the person's shell: a relative path means nothing
        raise invalid_param(f"playbook {value.strip()!r} is a relative path: give its absolute path (the console "
                            "does not know the folder you mean)")  # fmt: skip
    return existing_file(path, "playbook").resolve()


def check_project_can_run(handle: ProjectHandle) -> None:
    """GIT_ERROR / INVALID_PARAM / PERMISSION_DENIED, with what to do, for a project the loop cannot run in."""
    check_can_continue(handle)
    require_commit(handle)


_GOAL_LOCK = threading.Lock()  # a goal's id check and its launch record are one step (two requests race otherwise)


def start_goal(handle: ProjectHandle, request: GoalRequest, action_id: str | None = None) -> Started:
    """The goal's run, started once per `action_id`: a second request with it (a double-click on Start) is answered
    with the launch the first one started (`repeated`), and nothing else starts."""
    with _GOAL_LOCK:
        if (again := _goal_launched(handle, action_id)) is not None:
            return again
        return _start_goal(handle, request, action_id)


def _goal_launched(handle: ProjectHandle, action_id: str | None) -> Started | None:
    found = next((x for x in launches(handle) if action_id and x.kind == "goal" and x.action_id == action_id), None)
    return None if found is None else Started("local", str(found.pid), found.log, found.launch_id, repeated=True)


def _start_goal(handle: ProjectHandle, request: GoalRequest, action_id: str | None) -> Started:
    check_project_can_run(handle)
    if request.playbook is not None:
        from ..agents.playbook import Playbook

        Playbook.load(request.playbook).check_fits(handle.root)  # as `graphlemon run` refuses it: before any start
    if os.environ.get("PREFECT_API_URL") and _deployment_exists():
        return _start_deployment(handle, request)
    return _start_local(handle, request, action_id)


def check_can_continue(handle: ProjectHandle) -> None:
    """GIT_ERROR / PERMISSION_DENIED for a project where no run of a task can go on (checked before a person's
    action changes anything)."""
    require_git(handle)
    require_writable(handle)


def start_resume(handle: ProjectHandle, task_id: str, held: HeldLease, note: str | None = None,
                 action_id: str | None = None) -> Started:  # fmt: skip
    """`graphlemon resume TASK` in the background, handed the task's lease this console holds (`held`): the run the
    command line would start, with the engine the task last ran under (a task a Prefect flow ran goes on under
    Prefect; one the direct engine ran stays direct). `note`: a person's decision for `resume --note` to give the
    blocked task (or the deployed run waiting on it)."""
    check_can_continue(handle)
    cmd = [sys.executable, "-m", "graphlemon", "resume", task_id, "--project", str(handle.root),
           "--engine", engine_of(handle, task_id), "--quiet"]  # fmt: skip
    if note is not None:
        cmd += [f"--note={note}"]  # one argument, whatever the note starts with
    return _spawn(handle, cmd, kind="resume", task_id=task_id, held=held, action_id=action_id)


def engine_of(handle: ProjectHandle, task_id: str) -> str:
    ran_under_prefect = any(e.flow_run_id for e in handle.ledger.read_as("task", TaskEvent) if e.task_id == task_id)
    return "prefect" if ran_under_prefect else "direct"


def fold_launches(events) -> list[Launch]:
    """The launches the `launch` records describe, oldest first."""
    found: dict[str, Launch] = {}
    for e in events:
        if e.event == "started":
            found[e.launch_id] = Launch(launch_id=e.launch_id, kind=e.launch_kind or "resume", task_id=e.task_id,
                                        goal=e.goal, pid=e.pid or -1, log=e.log or "", started=e.ts,
                                        action_id=e.action_id)  # fmt: skip
        elif e.launch_id in found:
            found[e.launch_id] = found[e.launch_id].model_copy(update={"returncode": e.returncode, "ended": e.ts})
    return list(found.values())


def launches(handle: ProjectHandle) -> list[Launch]:
    """Every launch recorded in the project, oldest first."""
    return fold_launches(handle.ledger.read_as("launch", LaunchEvent))


def get_launch(handle: ProjectHandle, launch_id: str) -> Launch:
    found = next((x for x in launches(handle) if x.launch_id == launch_id), None)
    if found is None:
        raise GraphLemonError(ErrorCode.INVALID_PARAM, f"no launch {launch_id!r} in this project", launch_id=launch_id)
    return found


def launch_view(state_dir: Path, launch: Launch, ran: Lease | None) -> LaunchView:
    """`ran`: the lease the launch's process held (`leases_by_launch`): its task, and whether its run let go of the
    task (ended) or never ran it / died holding it (failed)."""
    task_id = launch.task_id or (ran.task_id if ran is not None else None)
    if launch.returncode is None and pid_exists(launch.pid):  # a zombie: its exit code is being recorded
        state = "running"
    elif launch.returncode == 0 or (ran is not None and ran.released is not None):
        state = "ended"
    else:
        state = "failed"
    return LaunchView(launch_id=launch.launch_id, kind=launch.kind, task_id=task_id, state=state,
                      returncode=launch.returncode, log=launch.log, started=launch.started,
                      log_tail=_tail(Path(state_dir) / launch.log))  # fmt: skip


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - LOG_TAIL_CHARS))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _deployment_exists() -> bool:
    from graphlemon.flows.console_launch import (
        deployment_exists,  # the console starts deployment runs through the flows layer
    )

    return deployment_exists(DEPLOYMENT, os.environ["PREFECT_API_URL"])


def _start_deployment(handle: ProjectHandle, request: GoalRequest) -> Started:
    from graphlemon.flows.console_launch import start_devloop_run

    return Started("deployment", start_devloop_run(DEPLOYMENT, handle, request))


def _start_local(handle: ProjectHandle, request: GoalRequest, action_id: str | None = None) -> Started:
    cmd = [sys.executable, "-m", "graphlemon", "run", "--project", str(handle.root), "--executor", request.executor,
           "--engine", request.engine, "--quiet"]  # fmt: skip
    if request.playbook is not None:
        cmd += ["--playbook", str(request.playbook)]
    if request.budget_tokens is not None:
        cmd += ["--budget-tokens", str(request.budget_tokens)]
    cmd += ["--", request.goal]  # a goal that starts with '-' is still the goal
    return _spawn(handle, cmd, kind="goal", goal=request.goal, action_id=action_id)


def _spawn(handle: ProjectHandle, cmd: list[str], *, kind: str, task_id: str | None = None, goal: str | None = None,
           held: HeldLease | None = None, action_id: str | None = None) -> Started:  # fmt: skip
    """A detached process with its output in a log and its `launch` records (started, then ended with its exit code);
    `held`: the task's lease, handed to the process (it adopts it)."""
    folder = handle.state_dir / LAUNCH_DIR
    folder.mkdir(parents=True, exist_ok=True)
    started = utcnow()
    launch_id = f"{'run' if kind == 'goal' else 'resume'}-{started:%Y%m%d-%H%M%S-%f}"
    log = folder / f"{launch_id}.log"
    env = {**os.environ, "GRAPHLEMON_LAUNCH_ID": launch_id}
    if held is not None:
        env["GRAPHLEMON_LEASE"] = held.lease_id
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=handle.root, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env)  # fmt: skip
    if held is not None:
        held.hand(Holder.here(f"console launch {launch_id}: graphlemon resume", pid=proc.pid, launch_id=launch_id,
                              action_id=action_id))  # fmt: skip
    rel = str(log.relative_to(handle.state_dir))
    handle.ledger.append(LaunchEvent(launch_id=launch_id, event="started", launch_kind=kind, task_id=task_id,  # type: ignore[arg-type]
                                     goal=goal, pid=proc.pid, log=rel, action_id=action_id))  # fmt: skip

    def reap() -> None:  # no zombie, and the exit code is kept for the page
        code = proc.wait()
        handle.ledger.append(LaunchEvent(launch_id=launch_id, event="ended", returncode=code))

    threading.Thread(target=reap, daemon=True).start()
    return Started("local", str(proc.pid), rel, launch_id)


class LeaseView(BaseModel):
    """Who holds the task, as the page says it: from its live lease alone."""

    lease_id: str
    holder: str
    pid: int | None = None
    host: str | None = None
    flow_run_id: str | None = None
    since: datetime
    heartbeat: datetime
    stop_requested_by: str | None = None
    stop_requested_at: datetime | None = None


class TaskRun(BaseModel):
    """Is anything running the task, from its lease alone: `running` (a live holder, named in `lease`), `stopping`
    (a live holder a person asked to stop), `interrupted` (a working status and no live holder), `idle` (queued,
    and nothing holds it), None (a person decides next, or it has ended). With the latest launch of the task."""

    state: Literal["running", "stopping", "interrupted", "idle"] | None
    lease: LeaseView | None = None
    launch: LaunchView | None = None
    last_run: leases.LastRun | None = None  # when nothing holds it: when its last run let go (None: never run)


def task_run(handle: ProjectHandle, task, known: list[Launch] | None = None,
             by_launch: dict[str, Lease] | None = None) -> TaskRun:  # fmt: skip
    """`known`, `by_launch`: the project's launches and the leases naming them, when already read (a dashboard asks
    for every task at once)."""
    by_launch = leases.leases_by_launch(handle.ledger) if by_launch is None else by_launch
    mine = [x for x in (launches(handle) if known is None else known)
            if (x.task_id or (by_launch[x.launch_id].task_id if x.launch_id in by_launch else None)) == task.task_id]  # fmt: skip
    latest = launch_view(handle.state_dir, mine[-1], by_launch.get(mine[-1].launch_id)) if mine else None
    history = leases.history(handle.ledger, task.task_id)
    lease = leases.latest(history)
    state = leases.run_state(lease, task.status)
    view = None
    if state in ("running", "stopping") and lease is not None:
        h = lease.holder
        view = LeaseView(lease_id=lease.lease_id, holder=h.label, pid=h.pid, host=h.host, flow_run_id=h.flow_run_id,
                         since=lease.since, heartbeat=lease.heartbeat,
                         stop_requested_by=lease.stop.by if lease.stop else None,
                         stop_requested_at=lease.stop.at if lease.stop else None)  # fmt: skip
    return TaskRun(state=state, lease=view, launch=latest, last_run=leases.last_run(history))
