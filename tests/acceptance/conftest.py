"""Acceptance fixtures: target repositories in temp folders, playbook variants, flow runs.

Everything is real: git repositories and worktrees, pytest runs of the generated code,
the Prefect `devloop` flow under the session test harness. The agents are scripted
(labelled `executor: scripted`): these tests prove the loop's plumbing and decisions.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SNAKE = ROOT / "examples" / "snake"
CALC = Path(__file__).resolve().parent / "fixtures" / "calc"
SNAKE_GOAL = "Implement a snake game"


def make_repo(dest: Path, source: Path):
    """Copy a fixture repo, commit it, `graphlemon init` it (its skills repository seeded); returns the ProjectHandle."""
    from graphlemon.project import init_project
    from graphlemon.skills.repo import SkillRepo

    shutil.copytree(source, dest)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "fixture"]):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)
    handle = init_project(dest).project
    SkillRepo(handle.state_dir).ensure(handle.ledger)
    return handle


def playbook_variant(tmp_path: Path, base: Path, edit) -> Path:
    """A copy of `base`'s playbook (with its files/) whose YAML `edit(data)` changes."""
    folder = tmp_path / f"playbook-{len(list(tmp_path.glob('playbook-*')))}"
    shutil.copytree(base / "files", folder / "files")
    data = yaml.safe_load((base / "playbook.yaml").read_text())
    edit(data)
    path = folder / "playbook.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def turn(data: dict, **match) -> dict:
    """The playbook turn whose match is exactly `match`."""
    return next(t for t in data["turns"] if t["match"] == match)


def run_flow(project, goal: str | None, playbook: Path, *, task_id: str | None = None, **config) -> dict:
    """One `devloop` flow run (in this process, against the test harness's API) -> the task as the run left it (a
    run that ends before done ends in a state that is not Completed: its data is the same summary)."""
    state = flow_state(project, goal, playbook, task_id=task_id, **config)
    value = state.result(raise_on_failure=False, _sync=True)  # sync even beside a running loop (Playwright's)
    if isinstance(value, BaseException):  # the flow raised (bad input): as a direct call would
        raise value
    return value


def flow_state(project, goal: str | None, playbook: Path, *, task_id: str | None = None, **config):
    """One `devloop` flow run's final Prefect state."""
    from graphlemon.flows.devloop import devloop

    return devloop(goal=goal or "", project=str(project.root), executor="scripted", playbook=str(playbook),
                   task_id=task_id, config=config, return_state=True)  # fmt: skip


@pytest.fixture(scope="session")
def snake_run(prefect_harness, tmp_path_factory):
    """The demo story through Prefect, once per module: planted wall bug -> validator -> fast lane -> done."""
    project = make_repo(tmp_path_factory.mktemp("snake") / "snake", SNAKE / "repo")
    final = run_flow(project, SNAKE_GOAL, SNAKE / "playbook.yaml", max_unit_attempts=2)
    return project, final


@pytest.fixture
def calc(tmp_path):
    return make_repo(tmp_path / "calc", CALC / "repo")


def broken_mul(data: dict, attempts=(1, 2)) -> None:
    """The mul coder writes `a + b` on the given attempts (every attempt when `attempts` is None)."""
    broken = {"match": {"role": "coder", "unit": "mul"}, "usage": {"input_tokens": 500, "output_tokens": 200},
              "actions": [{"write_file": {"path": "calc/mul.py", "from_file": "files/code/mul_broken.py"}}],
              "output": {"summary": "mul", "files": ["calc/mul.py"]}}  # fmt: skip
    if attempts is not None:
        broken["match"]["attempt"] = list(attempts)
        data["turns"].insert(0, broken)
    else:
        turn(data, role="coder", unit="mul").update(broken)


def verdict(data: dict, spec: str, code: str, skill: str) -> None:
    v = turn(data, role="validator")["output"]["verdicts"][0]
    v["spec"]["category"], v["code"]["category"], v["skill"]["category"] = spec, code, skill
    if spec == code == skill == "planning":
        v["root_cause_detail"] = "the PRD never says what mul must return, so the coder guessed a + b; SDD 2.2 came too late"


@pytest.fixture(scope="session")
def replan_run(prefect_harness, tmp_path_factory):
    """calc: mul is wrong twice, the validator blames planning -> full_replan -> the planner runs again -> done."""
    tmp = tmp_path_factory.mktemp("replan")
    project = make_repo(tmp / "calc", CALC / "repo")

    def edit(data):
        broken_mul(data, attempts=(1, 2))
        verdict(data, "planning", "planning", "planning")

    final = run_flow(project, "Build calc", playbook_variant(tmp, CALC, edit), max_unit_attempts=2)
    return project, final
