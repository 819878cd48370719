"""What a person reads from the command line the same day as the console: tables that fit 80 columns, a task
prefix wherever a TASK_ID is taken, logs for people, reports that say "no task" and refuse an unknown one,
bugs with the validator's attribution, and `status` refusing a corrupt ledger as its JSON does. Each through
`python -m graphlemon` as a real process (a command's further cases through the same entry point in this process),
on ledgers written by the domain's own calls."""

from __future__ import annotations

import json

import pytest
from logview_kit import RunningNode

from graphlemon.bugs import BugTracker
from graphlemon.execlogs import log_path
from graphlemon.log_render import render
from graphlemon.models import SkillGateResult
from graphlemon.skills.iteration import SkillIterations
from graphlemon.taskboard import TaskBoard

NARROW = {"COLUMNS": "80"}
TOOL_CALL = ('coder scripted model=scripted tool_call {"step": 1, "tool": "write_file", "args": {"path": "a.py", '
             '"content": "x = 1\\ny = 2\\n"}}')  # fmt: skip


def in_project(cli, project, *args, env=None):
    """`graphlemon ARGS --project ROOT` as a real process (the `cli` fixture of tests/conftest.py)."""
    return cli(*args, "--project", str(project.root), env=env)


@pytest.mark.system
def test_skills_log_fits_80_columns_without_cutting_every_cell(cli, project):
    tracker = BugTracker(project.ledger)
    its = SkillIterations(project.state_dir, project.ledger)
    for unit in ("mul", "add"):
        bug, _ = tracker.open(title=f"{unit} failed", source="unit_test", unit_id=unit, test_name="t", task_id="t1")
        tracker.update(bug, by="validator", root_cause_category="skill_defect", root_cause_detail="silent skill")
        it = its.propose("coder", bug, f"You are the Coder agent.\nCheck {unit}.\n", author="skill-editor",
                         rationale="ask for operator checks")  # fmt: skip
        its.start_gate(it.iteration_id)
        its.apply(it.iteration_id, SkillGateResult(ok=True, note="the gate passed"))
    out = in_project(cli, project, "skills", "log", env=NARROW)
    assert out.returncode == 0, out.stderr
    assert max(len(line) for line in out.stdout.splitlines()) <= 80
    assert "s…" not in out.stdout and it.iteration_id in out.stdout  # ids whole, cells not cut to one letter
    assert "applied" in out.stdout and "passed" in out.stdout and "coder" in out.stdout


@pytest.mark.system
def test_logs_take_a_task_prefix_and_read_for_people_on_request(cli, project):
    node = RunningNode(project).start()
    node.line(TOOL_CALL)
    node.finish()
    prefix = node.task_id[: len("task-20261204-")]
    listed = in_project(cli, project, "logs", "--task", prefix, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [g["node_exec_id"] for g in json.loads(listed.stdout)["logs"]] == [node.nid]
    unknown = in_project(cli, project, "logs", "--task", "task-1999")
    assert unknown.returncode == 2 and unknown.stderr.startswith("error[TASK_NOT_FOUND]")
    people = in_project(cli, project, "logs", node.nid, "--view", "people")
    assert 'coder calls write_file(path="a.py", content=<12 chars, 3 lines>)' in people.stdout
    assert '{"' not in people.stdout
    raw = in_project(cli, project, "logs", node.nid)  # into a pipe: the lines as written
    assert raw.stdout == log_path(project.state_dir, node.nid).read_text()
    assert in_project(cli, project, "logs", node.nid, "--view", "fancy").stderr.startswith("error[INVALID_PARAM]")


def test_render_keeps_every_line_and_folds_indented_output_under_its_line():
    text = ("2026-12-04T20:25:07.358Z [tests] unit tests: output tail\n    E   assert False\n"
            "not a log line\n2026-12-04T20:25:08.000Z [agent] coder scripted step 3 of 4\n")  # fmt: skip
    entries = render(text)
    assert [(e.kind, e.text) for e in entries] == [("tests", "unit tests: output tail"), ("text", "not a log line"),
                                                  ("agent", "coder scripted step 3 of 4")]  # fmt: skip
    assert entries[0].detail == "E   assert False" and entries[0].detail_kind == "text"
    broken = render('2026-12-04T20:25:08.000Z [agent] coder x tool_call {"args": {"unclosed"\n')[0]
    assert broken.kind == "agent" and broken.text.endswith('{"args": {"unclosed"')  # shown as written


@pytest.mark.system
def test_a_report_names_taskless_work_and_refuses_an_unknown_task(cli, cli_in_process, project):
    tid = TaskBoard(project.ledger).create("Implement a snake game").task_id
    BugTracker(project.ledger).open(title="score resets", source="human_reported")  # no task
    table = in_project(cli, project, "report", "convergence", "--section", "tasks", env=NARROW)
    rows = [line for line in table.stdout.splitlines() if line.startswith("│")]
    assert len(rows) == 2 and "(no task)" in rows[0] and tid[:12] in rows[1]
    args = ("report", "convergence", "--section", "tasks", "--json", "--project", str(project.root))
    as_json = json.loads(cli_in_process(*args).stdout)  # `report --json` as a real process: tests/analytics
    assert [r["task_id"] for r in as_json["sections"]["tasks"]] == [None, tid]  # the JSON keeps its null
    for name in ("skills", "convergence", "budget", "bugs"):  # in this process: the table above is the real one
        nope = cli_in_process("report", name, "--task", "nope", "--project", str(project.root))
        assert nope.returncode == 2 and nope.stderr.startswith("error[TASK_NOT_FOUND]"), (name, nope.stderr)


@pytest.mark.system
def test_bugs_list_shows_the_validators_attribution(cli, project):
    tracker = BugTracker(project.ledger)
    bug, _ = tracker.open(title="wall", source="unit_test", unit_id="collision", test_name="t", task_id="t1")
    tracker.update(bug, by="validator", root_cause_category="coder", root_cause_detail="x > width")
    out = in_project(cli, project, "bugs", "list", "--wide")
    row = next(line for line in out.stdout.splitlines() if bug in line)
    assert "coder" in row and "not triaged yet" in row  # attributed to the coder; the triage category never set (unknown)


@pytest.mark.system
@pytest.mark.parametrize("as_json", [False, True])
def test_status_of_a_task_refuses_a_corrupt_ledger_as_its_json_does(cli, project, as_json):
    tid = TaskBoard(project.ledger).create("Implement a snake game").task_id
    with open(project.state_dir / "nodes.ndjson", "a") as f:
        f.write('{"kind": "node", broken\n{"kind": "node"}\n')
    out = in_project(cli, project, "status", tid, *(["--json"] if as_json else []))
    assert out.returncode == 1 and out.stderr.startswith("error[LEDGER_CORRUPT]") and "nodes.ndjson" in out.stderr
