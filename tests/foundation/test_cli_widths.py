"""CLI tables at 80 and 120 columns, on a real ledger with several tasks: a header never
breaks inside a word, a task id is printed whole and never wraps or is cut (issue 47: a cut id names no task a person
can copy; every TASK_ID argument still takes a unique prefix), the columns that do not fit are named, `--wide` shows
them all, `--json` is unchanged."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from graphlemon.cli.fit import Col, column_widths, unique_prefixes

GOALS = [
    "Implement a snake game with walls that wrap around, a scoreboard and a pause key",
    "Build calc",
    "Add a high-score table that survives restarts and shows the best ten players with their dates",
    "Refactor the board module",
]


@pytest.fixture(scope="module")
def ledger_project(tmp_path_factory):
    """Four tasks (two of them created within the same second), one blocked, one done; bugs and timeline events."""
    from graphlemon.bugs import BugTracker
    from graphlemon.models import TimelineEvent
    from graphlemon.project import init_project
    from graphlemon.taskboard import TaskBoard

    repo = tmp_path_factory.mktemp("widths") / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    handle = init_project(repo).project
    board = TaskBoard(handle.ledger)
    tasks = [board.create(goal) for goal in GOALS]
    board.transition(tasks[0].task_id, "planning")
    board.transition(tasks[0].task_id, "blocked_pending_human", blocked_reason="retry_limit_exceeded",
                     note="unit collision stayed red after 2 attempts: hits_wall((10, 3)) returned False")  # fmt: skip
    bugs = BugTracker(handle.ledger)
    for n in range(3):
        bugs.open(title=f"test_ac1_wall_{n}_is_hit: expected True got False", source="unit_test",
                  unit_id="collision", task_id=tasks[0].task_id, test_name=f"t{n}")  # fmt: skip
    for event, summary in [("planned", "round 0: 4 units, attempt 1"), ("test_failed", "2 failed; first: " + "x" * 90)]:
        handle.ledger.append(TimelineEvent(event=event, task_id=tasks[0].task_id, unit_id="collision", summary=summary))
    return handle, [t.task_id for t in tasks]


def _run(project, *args: str, columns: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "200"}
    return subprocess.run([sys.executable, "-m", "graphlemon", *args, "--project", str(project.root)],
                          capture_output=True, text=True, env=env, timeout=120)  # fmt: skip


def _header(out: str, title: str) -> str:
    """The header row(s) of the table titled `title`: between the ┏ line and the ┡ line."""
    block = out[out.index(title) :]
    return block[block.index("┏") : block.index("┡")]


def _cells(header: str) -> list[str]:
    """The column headers as printed, each joined over its lines (a header may wrap between words)."""
    rows = [line.strip("┃").split("┃") for line in header.splitlines()[1:]]
    return [" ".join(r[i].strip() for r in rows if r[i].strip()) for i in range(len(rows[0]))]


@pytest.mark.system
@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize(
    ("args", "title", "names"),
    [
        (("status",), "4 task(s)", ["task_id", "status", "round", "reason / note", "goal"]),
        (("bugs", "list"), "3 bug(s)", ["bug_id", "status", "unit", "root_cause", "category", "severity", "title"]),
        (("report", "convergence", "--section", "tasks"), "tasks (4)", None),
    ],
)
def test_happy_tables_fit_with_whole_headers_and_unwrapped_ids(ledger_project, columns, args, title, names):
    project, ids = ledger_project
    proc = _run(project, *args, columns=columns)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # the table, up to the next step: its command is one line however long (soft-wrapped: copied whole)
    table = out[out.index(title) :].split("\nnext: ")[0]
    assert all(len(line) <= columns for line in table.splitlines()), table
    shown = _cells(_header(out, title))
    full_names = names or json.loads(_run(project, *args, "--json", columns=columns).stdout)["sections"]["tasks"][0]
    assert set(shown) <= set(full_names), f"a header broke inside a word: {shown}"
    hidden = [n for n in full_names if n not in shown]
    if hidden:
        assert f"{len(hidden)} more column(s) ({', '.join(hidden)})" in " ".join(out.split())
    for line in table.splitlines():  # an id is printed whole on one line, or not at all
        for piece in re.findall(r"task-[0-9a-f-]*", line):
            assert piece in ids, f"wrapped or cut id {piece!r} in {line!r}"
    if "task_id" in shown:
        assert sum(t in table for t in ids) == 4


@pytest.mark.system
def test_happy_narrow_hides_columns_and_wide_shows_all(ledger_project):
    project, ids = ledger_project
    narrow = _run(project, "status", columns=80).stdout
    wide = _run(project, "status", "--wide", columns=80).stdout
    assert "--wide shows all" in narrow
    assert _cells(_header(wide, "4 task(s)")) == ["task_id", "status", "round", "reason / note", "goal"]
    assert "more column(s)" not in wide
    assert "stayed red" in wide and "retry_limit_exceeded" not in wide  # the reason in words (--json: the name)


@pytest.mark.system
def test_happy_json_keeps_full_ids_and_a_unique_prefix_names_its_task(ledger_project):
    project, ids = ledger_project
    data = json.loads(_run(project, "status", "--json", columns=80).stdout)
    assert sorted(t["task_id"] for t in data["tasks"]) == sorted(ids)
    prefix = unique_prefixes(ids)[ids[1]]
    one = _run(project, "status", prefix, "--json", columns=80)
    assert one.returncode == 0, one.stderr
    assert [t["task_id"] for t in json.loads(one.stdout)["tasks"]] == [ids[1]]
    budget = _run(project, "budget", "show", prefix, "--json", columns=80)
    assert json.loads(budget.stdout)["task_id"] == ids[1]


@pytest.mark.system
def test_failure_an_ambiguous_prefix_is_invalid_param_and_an_unknown_one_not_found(ledger_project):
    project, _ = ledger_project
    ambiguous = _run(project, "status", "task-", columns=80)
    assert ambiguous.returncode == 2 and ambiguous.stderr.startswith("error[INVALID_PARAM]"), ambiguous.stderr
    unknown = _run(project, "budget", "show", "task-1999", columns=80)
    assert unknown.returncode != 0 and unknown.stderr.startswith("error[TASK_NOT_FOUND]")


def test_boundary_prefixes_are_unique_and_columns_drop_by_priority():
    ids = ["task-20261203-165510-ab12", "task-20261203-165510-ab13", "task-20261203-171000-0000"]
    short = unique_prefixes(ids)
    assert short == {ids[0]: ids[0], ids[1]: ids[1], ids[2]: "task-20261203-17"}
    assert unique_prefixes(["task-1"]) == {"task-1": "task-1"}  # shorter than the minimum: whole
    cols = [Col("id", whole=True), Col("note"), Col("goal")]
    rows = [["x" * 30, "a " * 40, "b " * 40]]
    assert list(column_widths(cols, rows, 60, wide=False, priority=["id", "goal"])) == [0, 2]
    assert list(column_widths(cols, rows, 60, wide=True)) == [0, 1, 2]
    assert sum(column_widths(cols, rows, 200, wide=False).values()) + 3 * 3 + 1 <= 200
