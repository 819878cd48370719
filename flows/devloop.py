"""The `devloop` flow: one goal = one flow run (REQ-01). The loop's logic is `graphlemon.devloop.loop`;
this module only says how each stage runs — as a Prefect task.

    devloop(goal="Implement a snake game", project=".", executor="scripted", playbook="...")

A new task is created `queued`; it starts when a slot of the project's global
concurrency limit `graphlemon-goals-<project_id>` (size `max_concurrent_goals`,
default 1) is free, so a second goal waits in `queued` while the first runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from prefect import flow, get_run_logger
from prefect.concurrency.sync import concurrency
from prefect.context import get_run_context
from prefect.flow_runs import suspend_flow_run
from prefect.input import RunInput

from graphlemon.agents.classifier import reset_classifier_counts
from graphlemon.devloop import runmarker
from graphlemon.devloop.loop import prepare_run, run_devloop
from graphlemon.devloop.session import LoopConfig, LoopSession
from graphlemon.models import EscalationRecord, utcnow
from graphlemon.project import open_project
from graphlemon.taskboard import TaskBoard
from tasks._common import result_storage
from tasks._redacted_artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact
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


class HumanDecision(RunInput):
    """The form a person fills in the Prefect UI when a deployed run waits for them (REQ-09)."""

    action: Literal["resume", "abandon"] = "resume"
    note: str = ""


HUMAN_WAIT_S = 7 * 24 * 3600  # a suspended run waits up to a week for its person


@flow(name="devloop", flow_run_name="devloop-{task_id}", log_prints=True, persist_result=True)
def devloop(
    goal: str = "",
    project: str = ".",
    executor: str = "scripted",
    playbook: str | None = None,
    task_id: str | None = None,
    config: dict[str, Any] | None = None,
) -> dict:
    """Run one goal (or resume `task_id`) through planner -> coder -> integrator -> validator until done or blocked.

    Started from a deployment, a blocked task suspends the flow run with a form (resume / resume with a note /
    abandon) and carries on when a person submits it; started from the CLI, the run ends with the task blocked
    and `graphlemon resume` continues it."""
    handle = open_project(project)
    board = TaskBoard(handle.ledger)
    flow_run_id = str(get_run_context().flow_run.id)
    task = board.get(task_id) if task_id else board.create(goal, flow_run_id=flow_run_id)  # a re-run finds its task
    chosen = {**(config or {}), "executor": executor, "playbook": str(Path(playbook).resolve()) if playbook else None}
    loop_config = LoopConfig.load(handle.state_dir, task.task_id, **chosen)  # a resumed task keeps its settings
    loop_config.save(handle.state_dir, task.task_id)
    session = LoopSession(handle, task.task_id, loop_config)
    final = board.get(task.task_id)
    if final.status != "blocked_pending_human":  # a suspended run that was resumed starts over here: skip to the wait
        final = _run_with_slot(handle, session, loop_config.model_dump(mode="json"))
    while final.status == "blocked_pending_human" and _from_deployment():
        _publish_evidence(handle, final)
        rounds = sum(e.task_id == task.task_id for e in handle.ledger.read_as("escalation", EscalationRecord))
        decision = suspend_flow_run(
            wait_for_input=HumanDecision, timeout=HUMAN_WAIT_S, key=f"human-{task.task_id}-{rounds}"
        )
        if decision.action == "abandon":
            final = board.transition(
                task.task_id, "abandoned", note=decision.note or "abandoned in the Prefect UI", by="human"
            )
            break
        board.manual_resume(task.task_id, note=decision.note or None, by="human (Prefect UI)")
        reset_classifier_counts(handle.ledger, task.task_id, decision.note or "resumed in the Prefect UI")
        final = _run_with_slot(handle, session, loop_config.model_dump(mode="json"))
    if final.status == "blocked_pending_human":
        _publish_evidence(handle, final)
    get_run_logger().info("task %s: %s (round %s)", task.task_id, final.status, final.loop_round)
    return final.model_dump(mode="json")


def _run_with_slot(handle, session: LoopSession, settings: dict):
    """Wait for a goal slot (the task stays queued), run the loop, give the slot back (also while a human decides)."""
    task_id = session.task_id
    flow_run_id = str(get_run_context().flow_run.id)
    slots = ensure_goal_slots(handle.project_id, handle.meta.settings.max_concurrent_goals)
    stale = prepare_run(session, flow_run_id)
    if stale is not None:
        close_dead_run(stale, slots)
    get_run_logger().info("task %s waits for a goal slot (%s)", task_id, slots)
    try:
        with concurrency(slots, occupy=1, strict=True):
            marker = runmarker.read_marker(handle.state_dir, task_id)
            runmarker.write_marker(handle.state_dir, marker.model_copy(update={"holds_goal_slot": True}))
            progress = create_progress_artifact(progress=0.0, description=f"{task_id}: rounds used of the limit")
            final = run_devloop(session, PrefectStages(str(handle.root), task_id, settings), flow_run_id=flow_run_id)
            update_progress_artifact(progress, progress=100.0 * (final.loop_round + 1) / session.config.max_loop_rounds)
    finally:
        runmarker.release(handle.state_dir, task_id)
    return final


def _from_deployment() -> bool:
    return get_run_context().flow_run.deployment_id is not None


def _publish_evidence(handle, task) -> None:
    packs = [e for e in handle.ledger.read_as("escalation", EscalationRecord) if e.task_id == task.task_id]
    if packs:
        create_markdown_artifact(key=f"escalation-{task.task_id}".lower(), markdown=packs[-1].summary_md,
                                 description=f"{task.task_id} needs a human: {task.blocked_reason}")  # fmt: skip
