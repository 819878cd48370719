"""The fast layer's fixture: a real project and task (git repository, ledger, task board), no agents, no Prefect."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from graphlemon.project import init_project
from graphlemon.stages.session import LoopConfig, LoopSession
from graphlemon.taskboard import TaskBoard


@pytest.fixture
def session(tmp_path: Path) -> LoopSession:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    handle = init_project(repo).project
    task = TaskBoard(handle.ledger).create("build a board game")
    return LoopSession(handle, task.task_id, LoopConfig(merge_into_main=False, max_loop_rounds=4))
