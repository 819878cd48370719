"""Any text from people, agents, tests or files prints as text through every renderer (never read as markup).

Hypothesis feeds arbitrary text (and markup-, emoji- and escape-like fragments) into goals, notes, timeline
summaries, bug titles and details, evidence packs, test results, agent results and SQL rows; every command and
renderer must print it without raising, and a fragment that looks like rich markup must appear verbatim.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphlemon.cli import main

FRAGMENTS = ["[/bold]", "[red]", "[/]", "[bold]open", "[link=file:///etc]x", ":x:", "\x1b[31m", "[", "]", "\\[", "*_`#"]
texty = st.lists(st.one_of(st.text(max_size=40), st.sampled_from(FRAGMENTS)), min_size=1, max_size=6).map("".join)
non_blank = texty.filter(lambda s: s.strip() != "")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    from graphlemon.project import init_project

    repo = tmp_path_factory.mktemp("render") / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return init_project(repo).project


def _cli(argv: list[str], capsys) -> str:
    capsys.readouterr()
    try:
        main(argv)
    except SystemExit as exc:
        assert exc.code in (0, None), (argv, capsys.readouterr().err)
    return capsys.readouterr().out


@pytest.mark.timeout(240)  # twelve examples, each through every command (the SQL one opens DuckDB)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(goal=non_blank, note=texty, summary=texty, title=non_blank, detail=non_blank, evidence=texty)
def test_ledger_text_prints_through_every_command(project, capsys, goal, note, summary, title, detail, evidence):
    from graphlemon.bugs import BugTracker
    from graphlemon.models import EscalationRecord, TimelineEvent
    from graphlemon.taskboard import TaskBoard

    board = TaskBoard(project.ledger)
    task = board.create(goal)
    project.ledger.append(TimelineEvent(event="note", task_id=task.task_id, unit_id=None, summary=summary))
    board.transition(task.task_id, "planning")
    board.transition(task.task_id, "blocked_pending_human", blocked_reason="not_converging", note=note)
    project.ledger.append(EscalationRecord(task_id=task.task_id, blocked_reason="not_converging", summary_md=evidence))
    bug = BugTracker(project.ledger).report(title=title.strip(), description=detail)
    p = ["-p", str(project.root)]
    outputs = [
        _cli(["status", *p], capsys),
        _cli(["status", task.task_id, *p], capsys),
        _cli(["bugs", "list", *p], capsys),
        _cli(["bugs", "show", bug, *p], capsys),
        _cli(["sql", 'SELECT goal_text, goal_text AS "[/bold]" FROM tasks', *p], capsys),
    ]
    for fragment in ("[/bold]", "[red]", "[/]"):
        if fragment in goal and "\n" not in goal and len(goal) < 30:
            assert any(fragment in out for out in outputs), (fragment, goal)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=texty, message=texty, hint=texty, tail=texty, command=non_blank)
def test_test_results_print_as_text(capsys, name, message, hint, tail, command):
    from graphlemon.cli import test_cmd
    from graphlemon.testrun import TestFailure, TestRunResult

    result = TestRunResult(
        ok=False, framework="pytest", command=command, exit_code=1, duration_ms=3, crashed=True, output_tail=tail,
        failures=[TestFailure(name=name, file="t.py", line=3, message=message, expected=hint, got=tail, hint=hint)],
    )  # fmt: skip
    test_cmd._print_result(result)
    out = capsys.readouterr().out.replace("\n", "")  # (rich drops control characters; markup-like text stays)
    assert all(fragment in out for fragment in ("[/bold]", "[red]", "[/]") if fragment in command)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texty, message=texty, column=non_blank)
def test_agent_results_and_frames_print_as_text(capsys, text, message, column):
    import pandas as pd

    from graphlemon.agents import AgentResult, ToolError
    from graphlemon.cli import agent
    from graphlemon.cli._common import console
    from graphlemon.cli.frames import print_frame

    result = AgentResult(
        executor="scripted", role="tester", model=text, stop_reason="output_invalid", output_error=message,
        files_changed=[text], tool_errors=[ToolError(tool="write_file", code="SANDBOX_VIOLATION", message=message)],
        transcript_path=text,
    )  # fmt: skip
    agent._print(result)
    print_frame(console(), pd.DataFrame({column: [text, message]}), title=text, limit=0)
    capsys.readouterr()


def test_a_markup_goal_shows_verbatim_in_the_task_view(tmp_path: Path, capsys):
    """The probe's lasting crash: `run` with a goal holding `[/bold]`, then `status` on every later call."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    from graphlemon.project import init_project

    project = init_project(repo).project
    from graphlemon.bugs import BugTracker
    from graphlemon.cli._common import console
    from graphlemon.cli.show import show_task
    from graphlemon.taskboard import TaskBoard

    task = TaskBoard(project.ledger).create("[/bold] snake [red]")
    BugTracker(project.ledger).report(title="[/red] wall", description="[b]")
    show_task(project, task.task_id, console())
    assert "[/bold] snake [red]" in capsys.readouterr().out
