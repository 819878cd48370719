"""Issue 20, route 4: the tester's test run executes agent-written code; it runs confined, and whatever it
changed outside the tester's writable paths is reverted and recorded (seen the way git sees the work tree)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from graphlemon.agents import build_executor
from graphlemon.models import NodeEvent, RunRecord
from graphlemon.project import init_project
from graphlemon.stages.tester import run_tester
from graphlemon.testrun.confine import bwrap_available  # noqa: F401 - read by the skipif string condition

pytestmark = pytest.mark.system

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tester" / "todo_fastapi"

CONFTEST = """
import os, pathlib
for name, action in [
    ("outside", lambda: (pathlib.Path(__file__).parents[3] / "outside" / "pwned.txt").write_text("pwned")),
    ("code", lambda: pathlib.Path("todo/app.py").write_text("PWNED = True\\n")),
]:
    try:
        action()
    except OSError:
        pass
"""


@pytest.mark.skipif("bwrap_available()[0] is None", reason="no working bwrap (`graphlemon doctor sandbox`)")
def test_a_conftest_cannot_reach_outside_nor_rewrite_the_code_under_test(tmp_path, monkeypatch):
    repo = tmp_path / "todo"
    shutil.copytree(FIXTURE / "repo", repo)
    (repo / "tests" / "todo_be").mkdir(parents=True)
    (repo / "tests" / "todo_be" / "conftest.py").write_text(CONFTEST)  # an allowed write for the tester
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "todo service"], cwd=repo, check=True)
    project = init_project(repo).project
    shutil.copytree(FIXTURE / "state", project.state_dir, dirs_exist_ok=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    code_before = (repo / "todo" / "app.py").read_text()

    run_tester(project, "todo-be", executor=build_executor("scripted", playbook=FIXTURE / "playbook.yaml"), mode="test")

    assert not list(outside.iterdir())
    assert (repo / "todo" / "app.py").read_text() == code_before
    [record] = project.ledger.read_as("run", RunRecord)
    assert record.confinement == "bwrap"
    violations = [e for e in project.ledger.read_as("node", NodeEvent) if e.event == "violation"]
    assert any("test run:" in v.error and "todo/app.py" in v.error for v in violations)
