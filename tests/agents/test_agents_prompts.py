"""Every role's prompt, rendered against the request its stage really builds, on each model backend, names
only tools the turn has, paths it may read or write, and output fields its schema has (agents/prompt.py).

The requests are the ones the snake demo's stages build (its scripted playbooks: planner, coder, tester,
integrator, validator; the skill demo adds the skill-editor), recorded as each turn starts; the
bug-triager's comes from the triage stage over a failed integration run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.stage_requests import SNAKE, Recording, snake_loop

from graphlemon.agents import build_executor, build_request
from graphlemon.agents.claude_code import claude_prompt
from graphlemon.agents.prompt import audit, file_tree, render


class Recorder(Recording):
    """An executor that audits each request's rendered prompts, then lets the scripted executor run it."""

    def __init__(self, inner) -> None:
        super().__init__(inner)
        self.problems: dict[str, list[str]] = {}

    def on_request(self, request) -> None:
        for backend, rendered in (("anthropic", render(request, "anthropic")), ("claude_code", claude_prompt(request))):
            for problem in audit(rendered, request, backend):
                self.problems.setdefault(f"{request.role}/{backend}", []).append(problem)


def snake_run(tmp_path: Path, playbook: str) -> Recorder:
    return snake_loop(tmp_path, playbook, Recorder(build_executor("scripted", playbook=SNAKE / playbook)))


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
    assert "the skill names the SDD, which this turn neither receives nor writes" in problems
    documented = request.model_copy(update={"documents": {"SDD": "`user_id` in `docs/api.md`"}, "memory": "`tmp_x`"})
    names = [p for p in problems if "SDD" not in p]
    assert audit(render(documented, "anthropic"), documented, "anthropic") == names  # the project's words
    claude = claude_prompt(request)
    assert not any("'Bash'" in p for p in audit(claude, request, "claude_code"))  # the coder has Bash there
    assert "`read_file`" not in claude.system_text and "`Read`" in claude.system_text


def test_the_audit_reads_meaning_a_bare_field_an_unexplained_enum_value_a_missing_document(project):
    from typing import Literal

    from pydantic import BaseModel, Field

    class Out(BaseModel):
        summary: str = Field(description="what was done")
        verdict: Literal["pass", "flaky", "hopeless"] = Field(description="pass, or flaky when a re-run passes")
        mystery_score: float

    request = build_request(project, "validator", context="## Bugs\n\n- b1", output_model=Out,
                            documents={"PRD": "p"})  # fmt: skip
    problems = audit(render(request, "anthropic"), request, "anthropic")
    assert "the output field 'mystery_score' has no description and the skill does not explain it" in problems
    assert "the output field 'verdict' allows 'hopeless', which nothing in the prompt explains" in problems
    assert not any("'flaky'" in p or "'pass'" in p or "'summary'" in p for p in problems)
    assert "the skill names the SDD, which this turn neither receives nor writes" in problems  # the PRD it gets
    assert not any("the PRD" in p for p in problems)


def test_the_anthropic_prompt_says_the_schema_and_each_tool_once(project):
    from graphlemon.agents.anthropic_backend import wire_prompt
    from graphlemon.stages.validator import ValidatorOutput

    request = build_request(project, "validator", context="x", output_model=ValidatorOutput)
    wire = wire_prompt(request)
    system = "\n".join(wire.system)
    assert "root_cause_detail" not in system and '"title"' not in json.dumps(wire.tools)
    assert [t["name"] for t in wire.tools][-1] == "submit_output"
    for tool in wire.tools:  # a tool's description is in its definition only
        assert tool["description"].split(".")[0] not in system
    claude = claude_prompt(request)  # Claude Code is given the schema in the prompt (and as --json-schema)
    assert "root_cause_detail" in claude.system_text and '"title"' not in claude.system_text


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
    drafts = file_tree(tmp_path, [".graphlemon/plan/drafts/**"]).splitlines()  # the planner's folder, hidden below
    assert drafts[-1] == ".graphlemon/plan/drafts/ *"


def test_the_bug_triager_prompt_names_only_what_its_request_allows(tmp_path):
    from triage.conftest import make_scenario

    from graphlemon.triage import triage_run

    s = make_scenario("cm01_expired_token_accepted", tmp_path)
    playbook = Path(__file__).resolve().parents[1] / "fixtures" / "triage" / "playbooks" / "good-verdict.yaml"
    recorder = Recorder(build_executor("scripted", playbook=playbook))
    assert triage_run(s.project, s.run_id, executor=recorder).output.ok
    assert recorder.roles == {"bug-triager"} and recorder.problems == {}
