"""TaskBoard.create: checked goals, and one task per flow run however often Prefect re-runs it."""

from __future__ import annotations

import pytest

from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.taskboard import MAX_GOAL_CHARS, TaskBoard


def test_a_flow_run_that_runs_again_finds_the_task_it_created(project):
    board = TaskBoard(project.ledger)
    first = board.create("Build calc", flow_run_id="run-1")
    again = board.create("Build calc", flow_run_id="run-1")  # a resumed suspended run starts from the top
    other = board.create("Build calc", flow_run_id="run-2")
    assert again.task_id == first.task_id and other.task_id != first.task_id
    assert len(board.all()) == 2
    assert len(project.ledger.read("task")) == 4  # created + queued, twice


def test_without_a_flow_run_every_create_is_a_new_task(project):
    board = TaskBoard(project.ledger)
    assert board.create("Build calc").task_id != board.create("Build calc").task_id


@pytest.mark.parametrize("goal", ["", "   \n", "x" * (MAX_GOAL_CHARS + 1)])
def test_an_empty_or_huge_goal_is_invalid_param_and_writes_nothing(project, goal):
    with pytest.raises(GraphLemonError) as err:
        TaskBoard(project.ledger).create(goal, flow_run_id="run-1")
    assert err.value.code == ErrorCode.INVALID_PARAM
    assert project.ledger.read("task") == []
