"""Every role's prompt, rendered against the request its stage really builds, on each model backend, names
only tools the turn has, paths it may read or write, and output fields its schema has (agents/prompt.py).

The requests are the ones the snake demo's stages build (its scripted playbooks: planner, coder, tester,
integrator, validator; the skill demo adds the skill-editor), recorded as each turn starts; the
bug-triager's comes from the triage stage over a failed integration run.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from graphlemon.agents import build_executor, build_request
from graphlemon.agents.claude_code import claude_prompt
from graphlemon.agents.prompt import audit, file_tree, render
from graphlemon.devloop.loop import run_devloop
from graphlemon.devloop.stages import Stages
from graphlemon.project import init_project
from graphlemon.stages.session import LoopConfig, LoopSession
from graphlemon.taskboard import TaskBoard

SNAKE = Path(__file__).resolve().parents[2] / "examples" / "snake"


class Recorder:
    """An executor that audits each request's rendered prompts, then lets the scripted executor run it."""

    def __init__(self, inner) -> None:
        self.inner, self.name = inner, inner.name
        self.problems: dict[str, list[str]] = {}
        self.roles: set[str] = set()

    def run(self, request, ctx):
        self.roles.add(request.role)
        for backend, rendered in (("anthropic", render(request, "anthropic")), ("claude_code", claude_prompt(request))):
            for problem in audit(rendered, request, backend):
                self.problems.setdefault(f"{request.role}/{backend}", []).append(problem)
        return self.inner.run(request, ctx)


def snake_run(tmp_path: Path, playbook: str) -> Recorder:
    repo = tmp_path / "snake"
    shutil.copytree(SNAKE / "repo", repo)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "empty snake package"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    project = init_project(repo).project
    task = TaskBoard(project.ledger).create("Implement a snake game")
    session = LoopSession(project, task.task_id, LoopConfig(playbook=SNAKE / playbook, max_unit_attempts=2))
    recorder = Recorder(build_executor("scripted", playbook=SNAKE / playbook))
    session.__dict__["executor"] = recorder  # the stages call the executor the session holds
    run_devloop(session, Stages(session.run))
    return recorder


@pytest.mark.system
@pytest.mark.parametrize(
    ("playbook", "roles"),
    [
        ("playbook.yaml", {"planner", "coder", "tester", "integrator", "validator"}),
        ("playbook-skill.yaml", {"skill-editor"}),
    ],
)
def test_every_stage_prompt_names_only_what_its_request_allows(tmp_path, playbook, roles):
    recorder = snake_run(tmp_path, playbook)
    assert recorder.roles >= roles
    assert recorder.problems == {}


def test_the_audit_finds_a_tool_a_path_and_a_field_the_turn_does_not_have(project):
    (project.root / "src").mkdir()
    (project.root / "src" / "app.py").write_text("x = 1\n")
    from pydantic import BaseModel

    class Out(BaseModel):
        summary: str
        files: list[str] = []

    request = build_request(
        project, "coder", context="Edit `src/app.py`; read `docs/missing.md`; put it in `open_questions`; call "
        "bug_open. Also `Bash` it.", writable=["src/**"], output_model=Out,
    )  # fmt: skip
    problems = audit(render(request, "anthropic"), request, "anthropic")
    assert any("'bug_open'" in p for p in problems)
    assert any("'docs/missing.md'" in p for p in problems)
    assert any("'open_questions'" in p for p in problems)
    assert any("'Bash'" in p for p in problems)
    assert not any("src/app.py" in p for p in problems)  # writable
    documented = request.model_copy(update={"documents": {"SDD": "`user_id` in `docs/api.md`"}, "memory": "`tmp_x`"})
    assert audit(render(documented, "anthropic"), documented, "anthropic") == problems  # the project's words
    claude = claude_prompt(request)
    assert not any("'Bash'" in p for p in audit(claude, request, "claude_code"))  # the coder has Bash there
    assert "`read_file`" not in claude.system_text and "`Read`" in claude.system_text


def test_the_prompt_keeps_per_turn_text_out_of_the_cached_system_prompt(project):
    a = build_request(project, "coder", context="unit one", unit_id="u1", attempt=1, writable=["a/**"])
    b = build_request(project, "coder", context="unit two", unit_id="u2", attempt=3, writable=["b/**"],
                      documents={"SDD": "# SDD"})  # fmt: skip
    ra, rb = render(a, "anthropic"), render(b, "anthropic")
    assert ra.system[0] == rb.system[0]  # skill + tools + output: one cache entry for every coder turn
    assert rb.system[1].endswith("# SDD") and "unit `u2`" in rb.first_message and "attempt 3" in rb.first_message
    assert rb.first_message.index("# SANDBOX") < rb.first_message.index("# CONTEXT")
    assert "`b/**`" in rb.first_message and "b/**" not in rb.system_text


def test_the_file_tree_shows_two_levels_and_marks_what_may_be_written(tmp_path):
    for rel in ("snake/board.py", "snake/deep/x.py", "tests/board/test_board.py", "README.md", ".git/config"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    tree = file_tree(tmp_path, ["snake/board.py", "tests/board/**"]).splitlines()
    assert tree == ["snake/", "  deep/ (1 files)", "  board.py *", "tests/", "  board/ (1 files) *", "README.md"]


def test_the_bug_triager_prompt_names_only_what_its_request_allows(tmp_path):
    from triage.conftest import make_scenario

    from graphlemon.triage import triage_run

    s = make_scenario("cm01_expired_token_accepted", tmp_path)
    playbook = Path(__file__).resolve().parents[1] / "fixtures" / "triage" / "playbooks" / "good-verdict.yaml"
    recorder = Recorder(build_executor("scripted", playbook=playbook))
    assert triage_run(s.project, s.run_id, executor=recorder).output.ok
    assert recorder.roles == {"bug-triager"} and recorder.problems == {}
