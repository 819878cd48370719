"""The requests the stages really build: the snake demo's loop run through a recording executor.

`Recording(inner)` lets a (scripted) executor run each turn and keeps every role's first request
(`first[role]`) and the roles it saw; `on_request(request)` is the hook a subclass fills (the prompt audit).
`snake_loop(folder, playbook, recording)` runs the snake goal with it in a fresh copy of the example
(`planner_only`: the planner's stage alone, a few seconds).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SNAKE = Path(__file__).resolve().parents[2] / "examples" / "snake"


class Recording:
    def __init__(self, inner) -> None:
        self.inner, self.name = inner, inner.name
        self.first: dict = {}
        self.roles: set[str] = set()

    def on_request(self, request) -> None:
        """Called with every request before it runs."""

    def run(self, request, ctx):
        self.roles.add(request.role)
        self.first.setdefault(request.role, request)
        self.on_request(request)
        return self.inner.run(request, ctx)


def snake_loop(folder: Path, playbook: str, recording: Recording, *, planner_only: bool = False) -> Recording:
    from graphlemon.devloop.loop import run_devloop
    from graphlemon.devloop.stages import Stages
    from graphlemon.project import init_project
    from graphlemon.stages.session import LoopConfig, LoopSession
    from graphlemon.taskboard import TaskBoard

    repo = folder / "snake"
    shutil.copytree(SNAKE / "repo", repo)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "empty snake package"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    project = init_project(repo).project
    task = TaskBoard(project.ledger).create("Implement a snake game")
    session = LoopSession(project, task.task_id, LoopConfig(playbook=SNAKE / playbook, max_unit_attempts=2))
    session.__dict__["executor"] = recording  # the stages call the executor the session holds
    if planner_only:
        from graphlemon.stages.planner import run_planner

        run_planner(session, 0)
    else:
        run_devloop(session, Stages(session.run))
    return recording
