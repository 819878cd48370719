"""The names of GraphLemon's flow runs, one rule for a run Prefect names when it starts (the flows' `flow_run_name`)
and for a run GraphLemon creates (`run_deployment(..., flow_run_name=...)`), so a created run carries its final name
from the start: the engine's own renaming at start then sets the same name again."""

from __future__ import annotations

GOAL_CHARS = 48


def devloop_run_name(goal: str, task_id: str | None) -> str:
    """`devloop · snake game · task-…` (the goal on one line, cut to 48 characters); without a task yet (a run of the
    deployment started by hand creates its task when it starts) `devloop · snake game`."""
    goal = " ".join(goal.split())
    goal = goal if len(goal) <= GOAL_CHARS else goal[: GOAL_CHARS - 1] + "…"
    return " · ".join(part for part in ("devloop", goal, task_id) if part)


def unit_run_name(unit_id: str, loop_round: int, pass_tag: str = "") -> str:
    tag = f" · L2 reset {pass_tag.removeprefix('l2a')}" if pass_tag else ""
    return f"unit {unit_id} · round {loop_round}{tag}"


def devloop_flow_run_name() -> str:
    """The devloop flow's `flow_run_name`: its task's goal (from the ledger when the run continues a task)."""
    from prefect.runtime import flow_run

    params = flow_run.parameters
    task_id, goal = params.get("task_id"), params.get("goal") or ""
    if task_id:
        goal = _goal_of(params.get("project"), task_id) or goal
    return devloop_run_name(goal, task_id)


def unit_flow_run_name() -> str:
    from prefect.runtime import flow_run

    params = flow_run.parameters
    return unit_run_name(params["unit_id"], params["loop_round"], params.get("pass_tag") or "")


def remote_flow_run_name() -> str:
    from prefect.runtime import flow_run

    job = flow_run.parameters["job"]
    return unit_run_name(job["unit_id"], job["loop_round"], job.get("pass_tag") or "")


def _goal_of(project: str | None, task_id: str) -> str | None:
    from graphlemon.errors import GraphLemonError
    from graphlemon.project import open_project
    from graphlemon.taskboard import TaskBoard

    from ._params import project_dir

    try:
        return TaskBoard(open_project(project_dir(project)).ledger).get(task_id).goal_text
    except GraphLemonError:  # the flow itself reports a missing project or task: the name falls back to the goal
        return None
