"""The conformance fake model finishes the snake goal on both model backends.

The fake (tests/fakes/conformance.py) does exactly what each rendered prompt says — reads the files
it shows, writes the paths its SANDBOX lists, calls the tools its TOOLS section names, submits an
instance of the schema its OUTPUT section gives — through the real anthropic SDK against a local
Messages server, or as the fake `claude` executable. A prompt that tells a model to do something
the harness refuses is a violation, and the run must still end `done`.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from fakes.claude import FakeClaude
from fakes.conformance import snake_solution
from fakes.conformance_model import ConformanceClaude, ConformanceModel
from fakes.messages_server import FakeMessagesServer

from graphlemon.agents import AgentSettings
from graphlemon.devloop.loop import run_devloop
from graphlemon.devloop.stages import Stages
from graphlemon.models import NodeEvent
from graphlemon.project import init_project
from graphlemon.stages.session import LoopConfig, LoopSession
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system

SNAKE = Path(__file__).resolve().parents[2] / "examples" / "snake"
KEY = "sk-ant-conformance-000000000000"
ROLES = {"planner", "coder", "tester", "integrator"}


def snake_project(dest: Path):
    shutil.copytree(SNAKE / "repo", dest)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "empty snake package"]):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)
    return init_project(dest).project


def run_snake(project, executor: str, settings: AgentSettings):
    task = TaskBoard(project.ledger).create("Implement a snake game")
    session = LoopSession(project, task.task_id, LoopConfig(executor=executor, max_unit_attempts=2), settings)
    return run_devloop(session, Stages(session.run))


def test_the_conformance_fake_finishes_the_snake_goal_on_the_anthropic_backend(tmp_path):
    project = snake_project(tmp_path / "snake")
    model = ConformanceModel(snake_solution(SNAKE))
    with FakeMessagesServer(api_key=KEY) as server:
        server.responder = model
        final = run_snake(project, "anthropic", AgentSettings(api_key=KEY, base_url=server.base_url, retry_max=0))
    assert model.log.violations == []
    assert final.status == "done", final.note
    assert set(model.log.turns) >= ROLES and model.log.turns["coder"] == 4 and model.log.turns["tester"] >= 4
    assert not [e for e in project.ledger.read_as("node", NodeEvent) if e.event == "violation"]
    assert max(model.log.largest_result.values()) <= 16_000 + 400  # every tool result is capped


@pytest.mark.parametrize("count", [40])
def test_the_conformance_fake_finishes_the_snake_goal_on_the_claude_code_backend(tmp_path, count, monkeypatch):
    project = snake_project(tmp_path / "snake")
    claude = FakeClaude(tmp_path)
    claude.setenv(monkeypatch)
    fake = ConformanceClaude(tmp_path / "conformance", snake_solution(SNAKE))  # its log is appended by the server
    claude.queue(*fake.behaviours(count))
    final = run_snake(project, "claude_code", AgentSettings(claude_bin=str(claude.bin), claude_egress=[claude.egress]))
    assert fake.violations == []
    assert final.status == "done", final.note
    roles = fake.roles()
    assert set(roles) >= ROLES and roles.count("coder") == 4 and roles.count("tester") >= 4
    assert not [e for e in project.ledger.read_as("node", NodeEvent) if e.event == "violation"]
