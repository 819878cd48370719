"""Issue 48: the validator is told what its run covered and reads the code of a unit that never merged.

Its work tree is the integration tree, which holds only the units merged so far; a red unit's bugs come from
its own unit runs. The validator's context says so, and shows that unit's code from its branch (numbered, so a
verdict can cite `path:line`); the citation check finds the line in the unit's work tree. The calc playbook
(scripted, labelled so) plays the agents; the mul coder writes `a + b` on every attempt.
"""

from __future__ import annotations

import pytest
from conftest import CALC, broken_mul, make_repo, playbook_variant
from fakes.stage_requests import Recording

from graphlemon.agents import build_executor
from graphlemon.bugs import BugTracker
from graphlemon.devloop.loop import run_devloop
from graphlemon.devloop.stages import Stages
from graphlemon.stages.session import LoopConfig, LoopSession
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system  # the real loop, running pytest


def test_the_validator_reads_what_its_run_covered_and_the_red_units_code(tmp_path):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    playbook = playbook_variant(tmp_path, CALC, lambda data: broken_mul(data, attempts=None))
    task = TaskBoard(project.ledger).create("Build calc")
    session = LoopSession(project, task.task_id, LoopConfig(playbook=playbook, max_unit_attempts=1, max_loop_rounds=1))
    recording = Recording(build_executor("scripted", playbook=playbook))
    session.__dict__["executor"] = recording
    run_devloop(session, Stages(session.run))
    context = recording.first["validator"].prompt
    assert "The run is of your work tree, which holds the units merged so far: add." in context
    assert "Not merged (red), so neither their code nor their tests are in your work tree or in this run: mul" in context
    assert "### mul: calc/mul.py (branch graphlemon/" in context and "   4|     return a + b" in context
    mul_bugs = [b for b in BugTracker(project.ledger).list(task_id=task.task_id) if b.unit_id == "mul"]
    assert mul_bugs and {b.root_cause_category for b in mul_bugs} == {"coder"}  # calc/mul.py:4 found in mul's tree
