"""The `devloop` flow: one goal = one flow run (REQ-01). The loop's logic is `graphlemon.devloop.loop`;
this module only says how each stage runs — as a Prefect task.

    devloop(goal="Implement a snake game", project=".", executor="scripted", playbook="...")

A new task is created `queued`; it starts when a slot of the project's global
concurrency limit `graphlemon-goals-<project_id>` (size `max_concurrent_goals`,
default 1) is free, so a second goal waits in `queued` while the first runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact
from prefect.concurrency.sync import concurrency
from prefect.context import get_run_context

from graphlemon.devloop import runmarker
from graphlemon.devloop.loop import prepare_run, run_devloop
from graphlemon.devloop.session import LoopConfig, LoopSession
from graphlemon.models import EscalationRecord, utcnow
from graphlemon.project import open_project
from graphlemon.taskboard import TaskBoard
from tasks._common import result_storage
from tasks.code import coder_turn_task, unit_loop_task
from tasks.integrate import integrate
from tasks.plan import plan
from tasks.test import tester_task
from tasks.validate import validate


class PrefectStages:
    """The `Stages` seam backed by Prefect tasks (results persisted under the project's .graphlemon/)."""

    def __init__(self, project: str, task_id: str, config: dict) -> None:
        self.args = (project, task_id, config)
        storage = result_storage(project, open_project(project).project_id)
        self._plan = plan.with_options(result_storage=storage)
        self._unit = unit_loop_task.with_options(result_storage=storage)
        self._coder = coder_turn_task.with_options(result_storage=storage)
        self._tester = tester_task.with_options(result_storage=storage)
        self._integrate = integrate.with_options(result_storage=storage)
        self._validate = validate.with_options(result_storage=storage)

    def plan(self, loop_round, feedback):
        return self._plan(*self.args, loop_round, feedback)

    def code_units(self, unit_ids, loop_round, feedback, pass_tag=""):
        futures = [self._unit.submit(*self.args, u, loop_round, feedback.get(u), pass_tag) for u in unit_ids]
        return [f.result() for f in futures]

    def coder_turn(self, nid, unit_id, attempt, loop_round, hints):
        return self._coder(*self.args, nid, unit_id, attempt, loop_round, hints)

    def test_unit(self, nid, unit_id, attempt, first, loop_round, code_ref):
        return self._tester(*self.args, nid, unit_id, attempt, first, loop_round, code_ref)

    def integrate(self, loop_round, attempt):
        return self._integrate(*self.args, loop_round, attempt)

    def validate(self, loop_round):
        return self._validate(*self.args, loop_round)


def goals_limit_name(project_id: str) -> str:
    return f"graphlemon-goals-{project_id}"


def ensure_goal_slots(project_id: str, limit: int) -> str:
    """Create (or resize) the project's global concurrency limit for running goals."""
    from prefect.client.orchestration import get_client

    name = goals_limit_name(project_id)
    with get_client(sync_client=True) as client:
        client.upsert_global_concurrency_limit_by_name(name, limit)
    return name


def close_dead_run(stale: runmarker.RunMarker, slots: str) -> None:
    """A killed run stays RUNNING in the API and keeps its goal slot (PREFECT_NOTES.md): mark it Crashed, free the slot."""
    from prefect.client.orchestration import get_client
    from prefect.states import Crashed

    with get_client(sync_client=True) as client:
        if stale.flow_run_id:
            try:
                client.set_flow_run_state(
                    stale.flow_run_id, Crashed(message="process killed; resumed by graphlemon"), force=True
                )
            except Exception:  # the run may be gone from this API (another server): nothing to close
                pass
        if stale.holds_goal_slot:
            occupied = max(1.0, (utcnow() - stale.started).total_seconds())
            client.release_concurrency_slots(names=[slots], slots=1, occupancy_seconds=occupied)


@flow(name="devloop", flow_run_name="devloop-{task_id}", log_prints=True, persist_result=False)
def devloop(
    goal: str = "",
    project: str = ".",
    executor: str = "scripted",
    playbook: str | None = None,
    task_id: str | None = None,
    config: dict[str, Any] | None = None,
) -> dict:
    """Run one goal (or resume `task_id`) through planner -> coder -> integrator -> validator until done or blocked."""
    handle = open_project(project)
    board = TaskBoard(handle.ledger)
    task = board.get(task_id) if task_id else board.create(goal)
    chosen = {**(config or {}), "executor": executor, "playbook": str(Path(playbook).resolve()) if playbook else None}
    loop_config = LoopConfig.load(handle.state_dir, task.task_id, **chosen)  # a resumed task keeps its settings
    loop_config.save(handle.state_dir, task.task_id)
    settings = loop_config.model_dump(mode="json")
    logger = get_run_logger()
    flow_run_id = str(get_run_context().flow_run.id)
    session = LoopSession(handle, task.task_id, LoopConfig.model_validate(settings))
    slots = ensure_goal_slots(handle.project_id, handle.meta.settings.max_concurrent_goals)
    stale = prepare_run(session, flow_run_id)
    if stale is not None:
        close_dead_run(stale, slots)
    logger.info("task %s queued for a goal slot (%s)", task.task_id, slots)
    try:
        with concurrency(slots, occupy=1, strict=True):
            runmarker.write_marker(
                handle.state_dir,
                runmarker.read_marker(handle.state_dir, task.task_id).model_copy(update={"holds_goal_slot": True}),
            )
            progress = create_progress_artifact(progress=0.0, description=f"{task.task_id}: rounds used of the limit")
            final = run_devloop(
                session, PrefectStages(str(handle.root), task.task_id, settings), flow_run_id=flow_run_id
            )
            update_progress_artifact(progress, progress=100.0 * (final.loop_round + 1) / session.config.max_loop_rounds)
    finally:
        runmarker.release(handle.state_dir, task.task_id)
    if final.status == "blocked_pending_human":
        packs = [e for e in handle.ledger.read_as("escalation", EscalationRecord) if e.task_id == task.task_id]
        if packs:
            create_markdown_artifact(key=f"escalation-{task.task_id}".lower(), markdown=packs[-1].summary_md,
                                     description=f"{task.task_id} needs a human: {final.blocked_reason}")  # fmt: skip
    logger.info("task %s: %s (round %s)", task.task_id, final.status, final.loop_round)
    return final.model_dump(mode="json")
