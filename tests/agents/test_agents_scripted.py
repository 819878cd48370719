"""T1: scripted playbooks drive each role's tools through the same sandbox as the LLM backends."""

from __future__ import annotations

import json
import pickle
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from pydantic import BaseModel, Field

from graphlemon.agents import build_executor
from graphlemon.agents.playbook import Playbook
from graphlemon.agents.roles import BUG_TOOLS, role_spec
from graphlemon.bugs import BugTracker
from graphlemon.errors import BudgetExceeded, ClassifierBlocked, ErrorCode, GraphLemonError, QuotaExceeded
from graphlemon.models import BudgetConfig, NodeEvent, UsageRecord


class TurnOut(BaseModel):
    ok: bool
    failed: int = Field(ge=0)
    bug_id: str | None = None


TESTER = """
version: 1
turns:
  - name: tester first run
    match: {role: tester, unit: u1, attempt: 1}
    usage: {input_tokens: 1200, output_tokens: 300, cache_read_tokens: 50}
    actions:
      - tool: write_todolist
        args: {items: [{title: write tests}, {title: run them}]}
      - write_file: {path: tests/test_app.py, from_file: files/test_app.py}
      - write_file: {path: src/app.py, content: "pwned"}
        expect: error
      - write_file: {path: ../../etc/passwd, content: "root::0:0"}
        expect: error
      - tool: run_tests
        args: {targets: [tests], framework: pytest}
        save_as: run
      - tool: bug_open
        args: {title: "add is wrong", test_name: "${run.failures.0.name}", detail: "run ${request.run_id}"}
        save_as: bug
      - tool: timeline_append
        args: {event: test_failed, ref: "${request.run_id}"}
    output: {ok: "${run.ok}", failed: "${run.summary.failed}", bug_id: "${bug.bug_id}"}
  - match: {role: tester, unit: u1, attempt: 2}
    actions:
      - tool: bug_list
        args: {unit_id: u1, status: [open]}
        save_as: open
      - tool: bug_transition
        args: {bug_id: "${open.bugs.0.bug_id}", to: fixed, fix_refs: ["${request.run_id}"]}
    output: {ok: true, failed: 0}
"""


def _tester_project(project, write_playbook):
    (project.root / "src").mkdir()
    (project.root / "src" / "app.py").write_text("def add(a, b):\n    return a - b\n")
    (project.root / "pyproject.toml").write_text("[tool.pytest.ini_options]\npythonpath = ['src']\n")
    path = write_playbook(TESTER)
    (path.parent / "files").mkdir()
    (path.parent / "files" / "test_app.py").write_text(
        "from app import add\n\ndef test_add():\n    assert add(2, 2) == 4\n"
    )
    return path


@pytest.mark.system
def test_tester_playbook_writes_tests_runs_them_opens_a_bug_and_is_refused_outside_the_sandbox(
    project, write_playbook, turn
):
    executor = build_executor("scripted", playbook=_tester_project(project, write_playbook))
    tools = [*role_spec("tester").tools, *BUG_TOOLS, "timeline_append"]  # any registered tool
    result = turn(
        executor, "tester", unit_id="u1", run_id="r1", task_id="task-1", node_exec_id="ne-1", output_model=TurnOut,
        tools=tools,
    )  # fmt: skip
    assert result.ok and result.executor == "scripted" and result.model == "scripted"
    assert result.output["ok"] is False and result.output["failed"] == 1
    assert result.files_changed == ["tests/test_app.py"]
    assert (project.root / "src/app.py").read_text().startswith("def add")  # not pwned
    assert {e.path for e in result.violations} == {"src/app.py", "../../etc/passwd"}
    violations = [e for e in project.ledger.read_as("node", NodeEvent) if e.event == "violation"]
    assert len(violations) == 2 and all(v.node_exec_id == "ne-1" and v.task_id == "task-1" for v in violations)
    bug = BugTracker(project.ledger).get(result.output["bug_id"])
    assert bug.test_name.endswith("test_add") and bug.detail == "run r1" and bug.status == "open"
    [usage] = project.ledger.read_as("usage", UsageRecord)
    assert (usage.executor, usage.model, usage.role, usage.stage, usage.unit_id) == (
        "scripted",
        "scripted",
        "tester",
        "tester",
        "u1",
    )
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cost_usd) == (1200, 300, 50, 0.0)
    assert result.usage.total_tokens == 1550
    transcript = [json.loads(line) for line in open(result.transcript_path)]
    assert [e["event"] for e in transcript][:2] == ["turn_start", "playbook_turn"] and transcript[-1][
        "event"
    ] == "turn_end"

    second = turn(executor, "tester", unit_id="u1", run_id="r2", attempt=2, output_model=TurnOut, tools=tools)
    assert second.ok and BugTracker(project.ledger).get(result.output["bug_id"]).status == "fixed"
    assert BugTracker(project.ledger).get(result.output["bug_id"]).fix_refs == ["r2"]


ROLE_PLAYBOOK = """
version: 1
turns:
  - match: {role: planner}
    actions:
      - write_file: {path: .graphlemon/plan/drafts/sdd.md, content: "# SDD"}
      - write_file: {path: src/main.py, content: "x"}
        expect: error
    output: {artifacts: 1}
  - match: {role: coder, unit: u1}
    actions:
      - write_file: {path: src/snake.py, content: "def step(): ...\\n"}
      - write_file: {path: .graphlemon/units/u1/contract.json, content: "{}"}
        expect: error
      - write_file: {path: .git/hooks/pre-commit, content: "evil"}
        expect: error
    output: {files: 1}
  - match: {role: integrator}
    actions:
      - write_file: {path: tests/integration/test_flow.py, content: "def test_flow(): ...\\n"}
      - write_file: {path: .graphlemon/integration/runs/ri/result.json, content: "{}"}
        expect: error
      - write_file: {path: src/snake.py, content: "x"}
        expect: error
    output: {ok: true}
  - match: {role: bug-triager}
    actions:
      - tool: extract_evidence
        args: {evidence: ["src/snake.py: def step"]}
        save_as: ev
      - write_file: {path: .graphlemon/integration/runs/ri/triage.json, content: "{}"}
        expect: error
      - tool: bug_open
        args: {title: x}
        expect: error
    output: {evidence_verified: "${ev.ok}"}
  - match: {role: validator}
    actions:
      - write_file: {path: .graphlemon/validation/runs/ri/report.md, content: "ok"}
        expect: error
      - tool: bug_open
        args: {title: "wall collision is wrong", source: validator}
        expect: error
    output: {pass: false}
"""


@pytest.mark.parametrize(
    "role, unit, changed",
    [
        ("planner", None, [".graphlemon/plan/drafts/sdd.md"]),
        ("coder", "u1", ["src/snake.py"]),
        ("integrator", None, ["tests/integration/test_flow.py"]),
        ("bug-triager", None, []),
        ("validator", None, []),
    ],
)
def test_each_role_writes_only_its_own_paths(project, write_playbook, turn, role, unit, changed):
    (project.root / "src").mkdir()
    (project.root / "src" / "snake.py").write_text("def step(): ...\n")
    result = turn(build_executor("scripted", playbook=write_playbook(ROLE_PLAYBOOK)), role, unit_id=unit, run_id="ri")
    assert result.ok, result.output_error
    assert result.files_changed == changed
    assert all(e.code in ("SANDBOX_VIOLATION", "INVALID_PARAM") for e in result.tool_errors)
    if role == "bug-triager":
        assert result.output == {"evidence_verified": True}
        assert any("not available to the bug-triager role" in e.message for e in result.tool_errors)


def test_a_turn_that_matches_nothing_names_role_unit_and_attempt(project, write_playbook, turn):
    executor = build_executor("scripted", playbook=_tester_project(project, write_playbook))
    with pytest.raises(GraphLemonError) as err:
        turn(executor, "tester", unit_id="u1", attempt=3)
    assert err.value.code == ErrorCode.INVALID_PARAM
    assert "no turn matches role=tester unit=u1 attempt=3" in err.value.message
    assert "unit=u1 attempt=1" in err.value.message
    with pytest.raises(GraphLemonError, match="no turn for role coder"):
        turn(executor, "coder", unit_id="u1")


def test_the_most_specific_turn_wins_and_times_are_consumed(project, write_playbook, turn):
    book = write_playbook(
        """
        turns:
          - match: {role: coder}
            output: {which: any}
          - match: {role: coder, unit: u1, attempt: [1, 2]}
            output: {which: unit}
          - match: {role: coder, unit: u1, attempt: 1}
            raise: {error: quota_exceeded, limit_type: session, resets_in_s: 60}
            times: 1
        """
    )
    executor = build_executor("scripted", playbook=book)
    with pytest.raises(QuotaExceeded) as err:
        turn(executor, "coder", unit_id="u1")
    assert err.value.limit_type == "session" and err.value.resets_at is not None
    assert pickle.loads(pickle.dumps(err.value)).limit_type == "session"
    assert turn(executor, "coder", unit_id="u1").output == {"which": "unit"}
    assert turn(executor, "coder", unit_id="u2").output == {"which": "any"}


def test_a_times_1_turn_is_used_once_by_parallel_units(project, write_playbook, turn, monkeypatch):
    book = write_playbook(
        """
        turns:
          - match: {role: coder}
            output: {which: once}
            times: 1
          - match: {role: coder}
            output: {which: any}
        """
    )
    executor = build_executor("scripted", playbook=book)
    select = Playbook.select

    def slow_select(*args):  # widen the window between choosing a turn and counting its use
        chosen = select(*args)
        time.sleep(0.01)
        return chosen

    monkeypatch.setattr(Playbook, "select", slow_select)
    with ThreadPoolExecutor(8) as pool:
        outputs = list(pool.map(lambda u: turn(executor, "coder", unit_id=f"u{u}").output["which"], range(16)))
    assert sorted(outputs) == ["any"] * 15 + ["once"]


def test_simulated_classifier_block_and_executor_error(project, write_playbook, turn):
    book = write_playbook(
        """
        turns:
          - match: {role: coder, attempt: 1}
            raise: {error: classifier_blocked}
          - match: {role: coder, attempt: 2}
            raise: {error: executor_error, message: "model went away"}
        """
    )
    executor = build_executor("scripted", playbook=book)
    with pytest.raises(ClassifierBlocked) as blocked:
        turn(executor, "coder")
    assert blocked.value.code == ErrorCode.CLASSIFIER_BLOCKED
    with pytest.raises(GraphLemonError, match="model went away"):
        turn(executor, "coder", attempt=2)


def test_expectations_references_and_output_validation(project, write_playbook, turn):
    book = write_playbook(
        """
        turns:
          - match: {role: tester, attempt: 1}
            actions:
              - write_file: {path: tests/a.py, content: x}
                expect: error
          - match: {role: tester, attempt: 2}
            actions:
              - tool: list_files
                save_as: ls
            output: {n: "${ls.nope}"}
          - match: {role: tester, attempt: 3}
            output: {ok: "yes", failed: -1}
          - match: {role: tester, attempt: 4}
            output: {ok: true, failed: 0, note: "literal $${x} and ${request.attempt}"}
          - match: {role: tester, attempt: 5}
            actions: [{write_file: {path: tests/x.py, content: x}}, {write_file: {path: tests/y.py, content: y}}]
            output: {ok: true, failed: 0}
        """
    )
    executor = build_executor("scripted", playbook=book)
    with pytest.raises(GraphLemonError, match="step 1: write_file expected error but got success"):
        turn(executor, "tester")
    with pytest.raises(GraphLemonError, match=r"\$\{ls.nope\}: no 'nope' in ls"):
        turn(executor, "tester", attempt=2)
    bad = turn(executor, "tester", attempt=3, output_model=TurnOut)
    assert bad.stop_reason == "output_invalid" and bad.output is None and "failed" in bad.output_error
    good = turn(executor, "tester", attempt=4)
    assert good.output["note"] == "literal ${x} and 4"
    from graphlemon.agents import Limits

    capped = turn(executor, "tester", attempt=5, limits=Limits(max_turns=1))
    assert capped.stop_reason == "max_turns" and capped.files_changed == ["tests/x.py"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("turns: [", "not valid YAML"),
        ("[]", "expected a mapping"),
        ("turns: []", "turns"),
        ("turns: [{match: {role: hacker}}]", "role"),
        ("turns: [{match: {role: coder}, actions: [{write_file: {path: a}, tool: x}]}]", "one tool"),
        (
            "turns: [{match: {role: coder}, actions: [{write_file: {path: a, from_file: ../x}}]}]",
            "relative to the playbook",
        ),
        (
            "turns: [{match: {role: coder}, actions: [{write_file: {path: a, from_file: missing.py}}]}]",
            "does not exist",
        ),
        ("version: 2\nturns: [{match: {role: coder}}]", "version"),
    ],
)
def test_malformed_playbooks_are_clear_errors(write_playbook, text, message):
    with pytest.raises(GraphLemonError) as err:
        Playbook.load(write_playbook(text))
    assert err.value.code == ErrorCode.INVALID_PARAM and message in err.value.message


def test_missing_playbook_file(tmp_path):
    with pytest.raises(GraphLemonError, match="does not exist"):
        build_executor("scripted", playbook=tmp_path / "nope.yaml")
    with pytest.raises(GraphLemonError, match="needs a playbook"):
        from graphlemon.agents import AgentSettings

        build_executor("scripted", settings=AgentSettings())
    with pytest.raises(GraphLemonError, match="unknown executor"):
        build_executor("gpt")


def test_budget_preflight_stops_a_scripted_turn_before_it_does_anything(project, write_playbook, turn):
    book = write_playbook(
        """
        turns:
          - match: {role: coder}
            usage: {input_tokens: 600, output_tokens: 100}
            actions: [{write_file: {path: src/a.py, content: x}}]
            output: {ok: true}
        """
    )
    project.ledger.append(BudgetConfig(task_id="task-b", limit_type="token_count", limit_value=1000))
    executor = build_executor("scripted", playbook=book)
    assert turn(executor, "coder", task_id="task-b").ok  # 700 of 1000
    with pytest.raises(BudgetExceeded) as err:
        turn(executor, "coder", task_id="task-b")
    assert err.value.code == ErrorCode.BUDGET_EXCEEDED and err.value.context["used"] == 700
    assert len(project.ledger.read_as("usage", UsageRecord)) == 1
    project.ledger.append(BudgetConfig(task_id="task-b", limit_type="token_count", limit_value=1400))  # raised
    assert turn(executor, "coder", task_id="task-b").ok
    assert turn(executor, "coder", task_id="another-task").ok  # no budget for it


def test_a_playbook_fits_only_the_repository_it_was_written_for(tmp_path, git_repo, cli_in_process):
    """The snake playbook on a repository of one's own would write snake/ there and merge it: `run` refuses it,
    naming what is missing, and writes nothing; a copy of the example's repository fits."""
    from pathlib import Path

    snake = Path(__file__).resolve().parents[2] / "examples" / "snake"
    book = Playbook.load(snake / "playbook.yaml")
    assert book.fits == ["snake/__init__.py", "pyproject.toml"]
    book.check_fits(snake / "repo")  # the example's own repository
    with pytest.raises(Exception) as err:
        book.check_fits(tmp_path)
    assert err.value.code == "INVALID_PARAM" and "has no snake/__init__.py, pyproject.toml" in err.value.message
    for hostile in ("/etc/passwd", "../outside", ""):
        with pytest.raises(Exception) as bad:
            Playbook.from_data({"fits": [hostile], "turns": [{"match": {"role": "coder"}}]})
        assert bad.value.code == "INVALID_PARAM" and "must be a path inside the repository" in bad.value.message
    assert cli_in_process("init", str(git_repo)).returncode == 0
    before = sorted(p.name for p in (git_repo / ".graphlemon").iterdir())
    out = cli_in_process("run", "Add subtract", "--playbook", str(snake / "playbook.yaml"), "--engine", "direct",
                         "--project", str(git_repo))  # fmt: skip
    assert out.returncode == 2 and out.stderr.startswith("error[INVALID_PARAM]: playbook "), out.stderr
    assert "replays a scripted story written for another repository" in out.stderr
    assert sorted(p.name for p in (git_repo / ".graphlemon").iterdir()) == before  # no task, nothing written
