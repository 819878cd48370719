"""Starting a goal from the console (REQ-11 v_goal_composer): a Prefect deployment run when a Prefect API
is configured and the `devloop` deployment exists, otherwise `graphlemon run` as a detached local process.

The input is checked here first, with the CLI's rules, so a bad goal writes nothing and starts nothing.
Prefect is imported only on the deployment path (starting the console must not import it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import invalid_param
from ..models import utcnow
from ..project import ProjectHandle
from ..taskboard import MAX_GOAL_CHARS

DEPLOYMENT = "devloop/devloop"
ENGINES = ("prefect", "direct")


@dataclass(frozen=True)
class GoalRequest:
    goal: str
    executor: str
    playbook: Path | None
    engine: str = "prefect"


@dataclass(frozen=True)
class Started:
    mode: str  # "deployment" | "local"
    ref: str  # flow run id, or the local process id
    log: str | None = None


def check_goal(goal: str, executor: str, playbook: str | None, engine: str) -> GoalRequest:
    """INVALID_PARAM for anything the run would refuse (before anything is written or started)."""
    from ..agents import EXECUTORS, AgentSettings, check_executor

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
        raise invalid_param("the scripted executor needs a playbook (a .yaml file)")
    check_executor(executor, playbook=book, settings=AgentSettings.from_env())
    return GoalRequest(text, executor, book, engine)


def _playbook(value: str | None) -> Path | None:
    if value is None or not value.strip():
        return None
    path = Path(value.strip()).expanduser()
    if not path.is_absolute():
        raise invalid_param(f"playbook {value!r}: give an absolute path")
    path = path.resolve()
    if path.suffix not in (".yaml", ".yml") or not path.is_file():
        raise invalid_param(f"playbook {path} is not a .yaml file")
    return path


def start_goal(handle: ProjectHandle, request: GoalRequest) -> Started:
    if os.environ.get("PREFECT_API_URL") and _deployment_exists():
        return _start_deployment(handle, request)
    return _start_local(handle, request)


def _deployment_exists() -> bool:
    from flows.console_launch import deployment_exists  # the console starts deployment runs through the flows layer

    return deployment_exists(DEPLOYMENT, os.environ["PREFECT_API_URL"])


def _start_deployment(handle: ProjectHandle, request: GoalRequest) -> Started:
    from flows.console_launch import start_devloop_run

    params = {"goal": request.goal, "project": str(handle.root), "executor": request.executor,
              "playbook": str(request.playbook) if request.playbook else None}  # fmt: skip
    return Started("deployment", start_devloop_run(DEPLOYMENT, params))


def _start_local(handle: ProjectHandle, request: GoalRequest) -> Started:
    logs = handle.state_dir / "logs" / "console"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"run-{utcnow():%Y%m%d-%H%M%S-%f}.log"
    cmd = [sys.executable, "-m", "graphlemon", "run", "--project", str(handle.root), "--executor", request.executor,
           "--engine", request.engine, "--quiet"]  # fmt: skip
    if request.playbook is not None:
        cmd += ["--playbook", str(request.playbook)]
    cmd += ["--", request.goal]  # a goal that starts with '-' is still the goal
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=handle.root, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
    threading.Thread(target=proc.wait, daemon=True).start()  # reap it when it ends (no zombie)
    return Started("local", str(proc.pid), str(log.relative_to(handle.state_dir)))
