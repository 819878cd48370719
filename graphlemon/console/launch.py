"""Starting runs from the console: a new goal (REQ-11 v_goal_composer) and the continuation of a task a person
resumed, re-budgeted or found idle (REQ-09 / REQ-10).

A goal runs as a Prefect deployment run when a Prefect API is configured and the `devloop` deployment exists,
otherwise as `graphlemon run`, a detached local process. A task is continued by `graphlemon resume`, a detached
local process too (the same run the command line would start, with the engine the task last ran under).
Every local process is a *launch*: `.graphlemon/logs/console/<launch_id>.log` (its output) and `<launch_id>.json`
(what was started, its pid, and its exit code once it ends), so the page can follow it and show why it failed.

The input is checked here first, with the CLI's rules, so a bad goal writes nothing and starts nothing; a project
that cannot run a goal (no git work tree, no commit yet) is refused before any process starts.
Prefect is imported only on the deployment path (starting the console must not import it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from ..errors import ErrorCode, GraphLemonError, invalid_param
from ..models import TaskEvent, utcnow
from ..processes import pid_alive
from ..project import ProjectHandle, require_commit, require_git, require_writable
from ..taskboard import MAX_GOAL_CHARS
from .views import SETTLED_TASK

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


class Launch(BaseModel):
    """One process the console started: `graphlemon run` for a goal, or `graphlemon resume` for a task."""

    launch_id: str
    kind: Literal["goal", "resume"]
    task_id: str | None = None  # a goal's task is created by the process itself
    goal: str | None = None
    pid: int
    log: str  # relative to the state dir
    started: datetime
    returncode: int | None = None
    ended: datetime | None = None


class LaunchView(BaseModel):
    """A launch as the page shows it: `running`, `ended` (the run stopped where the loop stops: done, blocked...)
    or `failed` (it exited with an error, leaving no task or a task that still needs a run); the log's tail."""

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

    text = (goal or "").strip()
    if not text:
        raise invalid_param("goal_text is empty; say what the loop should build")
    if len(text) > MAX_GOAL_CHARS:
        raise invalid_param(f"goal_text is {len(text)} characters; the limit is {MAX_GOAL_CHARS}")
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


def start_goal(handle: ProjectHandle, request: GoalRequest) -> Started:
    check_project_can_run(handle)
    if os.environ.get("PREFECT_API_URL") and _deployment_exists():
        return _start_deployment(handle, request)
    return _start_local(handle, request)


def check_can_continue(handle: ProjectHandle) -> None:
    """GIT_ERROR / PERMISSION_DENIED for a project where no run of a task can go on (checked before a person's
    action changes anything)."""
    require_git(handle)
    require_writable(handle)


def start_resume(handle: ProjectHandle, task_id: str, note: str | None = None) -> Started:
    """`graphlemon resume TASK` in the background: the run the command line would start, with the engine the task
    last ran under (a task a Prefect flow ran goes on under Prefect; one the direct engine ran stays direct).
    `note`: a person's decision for `resume --note` to give the blocked task (or the deployed run waiting on it)."""
    check_can_continue(handle)
    cmd = [sys.executable, "-m", "graphlemon", "resume", task_id, "--project", str(handle.root),
           "--engine", engine_of(handle, task_id), "--quiet"]  # fmt: skip
    if note is not None:
        cmd += [f"--note={note}"]  # one argument, whatever the note starts with
    return _spawn(handle, cmd, kind="resume", task_id=task_id)


def engine_of(handle: ProjectHandle, task_id: str) -> str:
    ran_under_prefect = any(e.flow_run_id for e in handle.ledger.read_as("task", TaskEvent) if e.task_id == task_id)
    return "prefect" if ran_under_prefect else "direct"


def launches(state_dir: Path) -> list[Launch]:
    """Every launch recorded in the project, oldest first (an unreadable record is skipped: it is the console's
    own bookkeeping, not the ledger)."""
    out = []
    for path in sorted((Path(state_dir) / LAUNCH_DIR).glob("*.json")):
        try:
            out.append(Launch.model_validate_json(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return out


def get_launch(state_dir: Path, launch_id: str) -> Launch:
    path = Path(state_dir) / LAUNCH_DIR / f"{launch_id}.json"
    if "/" in launch_id or launch_id.startswith(".") or not path.is_file():
        raise GraphLemonError(ErrorCode.INVALID_PARAM, f"no launch {launch_id!r} in this project", launch_id=launch_id)
    return Launch.model_validate_json(path.read_text(encoding="utf-8"))


def launch_view(state_dir: Path, launch: Launch, tasks: dict) -> LaunchView:
    """`tasks`: the project's folded tasks (a goal launch finds its task by goal text and start time)."""
    task_id = launch.task_id or _goal_task(launch, tasks)
    alive = launch.returncode is None and pid_alive(launch.pid)
    if alive:
        state = "running"
    else:
        task = tasks.get(task_id) if task_id else None
        clean = launch.returncode == 0 or (task is not None and task.status in SETTLED_TASK)
        state = "ended" if clean else "failed"
    return LaunchView(launch_id=launch.launch_id, kind=launch.kind, task_id=task_id, state=state,
                      returncode=launch.returncode, log=launch.log, started=launch.started,
                      log_tail=_tail(Path(state_dir) / launch.log))  # fmt: skip


def _goal_task(launch: Launch, tasks: dict) -> str | None:
    mine = [t for t in tasks.values() if t.goal_text == launch.goal and t.created_at >= launch.started]
    return min(mine, key=lambda t: t.created_at).task_id if mine else None


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


def _start_local(handle: ProjectHandle, request: GoalRequest) -> Started:
    cmd = [sys.executable, "-m", "graphlemon", "run", "--project", str(handle.root), "--executor", request.executor,
           "--engine", request.engine, "--quiet"]  # fmt: skip
    if request.playbook is not None:
        cmd += ["--playbook", str(request.playbook)]
    if request.budget_tokens is not None:
        cmd += ["--budget-tokens", str(request.budget_tokens)]
    cmd += ["--", request.goal]  # a goal that starts with '-' is still the goal
    return _spawn(handle, cmd, kind="goal", goal=request.goal)


def _spawn(handle: ProjectHandle, cmd: list[str], *, kind: str, task_id: str | None = None,
           goal: str | None = None) -> Started:  # fmt: skip
    """A detached process with its output in a log and its record beside it; the record gets the exit code."""
    folder = handle.state_dir / LAUNCH_DIR
    folder.mkdir(parents=True, exist_ok=True)
    started = utcnow()
    launch_id = f"{'run' if kind == 'goal' else 'resume'}-{started:%Y%m%d-%H%M%S-%f}"
    log = folder / f"{launch_id}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=handle.root, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
    record = Launch(launch_id=launch_id, kind=kind, task_id=task_id, goal=goal, pid=proc.pid,  # type: ignore[arg-type]
                    log=str(log.relative_to(handle.state_dir)), started=started)  # fmt: skip
    _write_launch(folder, record)

    def reap() -> None:  # no zombie, and the exit code is kept for the page
        code = proc.wait()
        _write_launch(folder, record.model_copy(update={"returncode": code, "ended": utcnow()}))

    threading.Thread(target=reap, daemon=True).start()
    return Started("local", str(proc.pid), record.log, launch_id)


def _write_launch(folder: Path, launch: Launch) -> None:
    path = folder / f"{launch.launch_id}.json"
    tmp = folder / f".{launch.launch_id}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(launch.model_dump(mode="json")), encoding="utf-8")
    os.replace(tmp, path)


class TaskRun(BaseModel):
    """Is anything running the task? `running`; `interrupted` (its run ended or was killed mid-stage); `idle`
    (queued, and no process picks it up); None (a person decides next, or it has ended). With its latest launch."""

    state: Literal["running", "interrupted", "idle"] | None
    launch: LaunchView | None = None


def task_run(handle: ProjectHandle, task, tasks: dict, known: list[Launch] | None = None) -> TaskRun:
    """`known`: the project's launches when already read (a dashboard asks for every task at once)."""
    from ..runmarker import run_state

    mine = [x for x in (launches(handle.state_dir) if known is None else known) if x.task_id == task.task_id or
            (x.kind == "goal" and _goal_task(x, tasks) == task.task_id)]  # fmt: skip
    latest = launch_view(handle.state_dir, mine[-1], tasks) if mine else None
    state = run_state(handle.state_dir, task.task_id, task.status)
    if latest is not None and latest.state == "running":
        state = "running"  # started by the console, not yet at the point where it claims the task
    elif state is None and task.status == "queued":
        state = "idle"
    return TaskRun(state=state, launch=latest)
