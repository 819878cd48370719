"""The `devloop` flow: one goal = one flow run (REQ-01), named `devloop · <goal> · <task>`. The loop's logic
is `graphlemon.devloop.loop`; flows/stages.py says how each stage runs (Prefect tasks, unit loops as subflows).

    devloop(goal="Implement a snake game", project="/path/to/repo", executor="scripted", playbook="...",
            config={"max_unit_attempts": 2})

A new task is created `queued`; it starts when one of the project's goal slots (`max_concurrent_goals`, default 1:
leases holding a slot, in the journal, shared with the direct engine) is free, so a second goal waits in `queued`
while the first runs.

The run holds the task's lease (graphlemon/lease.py): a run whose task another holder runs is refused and ends
`Cancelled` named `Refused`, naming the holder. Its final state is written from the journal, never read back:
done is `Completed`; a task blocked for a person is `Cancelled` named `Blocked` (a run the CLI started: `graphlemon
resume` continues it) or a `Suspended` run with a form (a deployed run); a person's stop is `Cancelled` named
`Stopped`; an abandoned task `Cancelled` named `Abandoned`; `stage_failed` is `Failed`. Cancel in the Prefect UI is
a person's stop: recorded on the lease, served at the run's next safe point (docs/prefect.md, "States").

In GraphLemon's own repository (a self-hosted project, `graphlemon deploy bootstrap`) a task that ends `done`
and merged is deployed by the `deploy-supervisor` flow, a subflow of the same run, with no person (REQ-15).
"""

from __future__ import annotations

import contextvars
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from prefect import flow, get_run_logger
from prefect.context import get_run_context
from prefect.input import RunInput
from prefect.states import Cancelled, Failed, State
from pydantic import Field

from graphlemon import lease as leases
from graphlemon.blocks.agents import load_agent_settings
from graphlemon.deploy.self_deploy import pending_self_deploy, spawn_deploy
from graphlemon.devloop.driver import Decision, drive
from graphlemon.devloop.escalation_pack import suspension_message
from graphlemon.devloop.stages import Stages
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.lease import Holder, Lease
from graphlemon.models import EscalationRecord, utcnow
from graphlemon.project import open_project
from graphlemon.redact import DEFAULT as _REDACTOR
from graphlemon.stages.session import LoopSession, LoopSettings
from graphlemon.taskboard import TaskBoard
from graphlemon.tasks._common import task_key, timeline_streamed
from graphlemon.tasks._redacted_artifacts import create_markdown_artifact, create_progress_artifact, sent_in_background

from ._params import project_dir
from .remote_units import result_store
from .run_names import devloop_flow_run_name, devloop_run_name
from .stages import PrefectRunner
from .unit_loop import UnitRuns


def close_gone_run(gone: Lease, this_run: str) -> None:
    """A gone holder's flow run stays RUNNING in the API (Prefect has no process to notice a kill): it is marked
    Crashed, written from the journal (the lease that names it was taken over), and so is every subflow it ran in
    its own process that was still open (a unit subflow, however deep), with their open task runs. Runs of a
    deployment under it (a unit run on a work pool or a remote worker) are left alone: their own worker runs
    them, and a resumed devloop waits for them (docs/scale.md)."""
    from prefect.client.orchestration import get_client
    from prefect.states import Crashed

    if not gone.holder.flow_run_id or gone.holder.flow_run_id == this_run:
        return
    why = f"its process is gone; the task's lease was taken over ({gone.lease_id})"
    with get_client(sync_client=True) as client:
        try:
            client.set_flow_run_state(gone.holder.flow_run_id, Crashed(message=why), force=True)
            closed = _open_subflows(client, gone.holder.flow_run_id)
            for run_id in closed:
                client.set_flow_run_state(run_id, Crashed(message=f"{why}: its parent flow run ended with it"),
                                          force=True)  # fmt: skip
            for task_run_id in _open_task_runs(client, [gone.holder.flow_run_id, *closed]):
                client.set_task_run_state(task_run_id, Crashed(message=why), force=True)
        except Exception:  # noqa: BLE001 - the run may be gone from this API (another server): nothing to close
            pass


OPEN = ("SCHEDULED", "PENDING", "RUNNING", "PAUSED", "CANCELLING")


def _open_subflows(client, flow_run_id: str) -> list[str]:
    """The open subflow runs under the flow run that ran in its process (no deployment), however deep."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterDeploymentId,
        FlowRunFilterParentFlowRunId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    found, parents = [], [flow_run_id]
    while parents:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=parents),
            deployment_id=FlowRunFilterDeploymentId(is_null_=True),
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType(s) for s in OPEN]))))  # fmt: skip
        parents = [str(r.id) for r in runs]
        found += parents
    return found


def _open_task_runs(client, flow_run_ids: list[str]) -> list:
    """The ids of the open task runs of these flow runs."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        TaskRunFilter,
        TaskRunFilterState,
        TaskRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    runs = client.read_task_runs(
        flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=flow_run_ids)),
        task_run_filter=TaskRunFilter(
            state=TaskRunFilterState(type=TaskRunFilterStateType(any_=[StateType(s) for s in OPEN]))
        ),
    )
    return [r.id for r in runs]


class HumanDecision(RunInput):
    """The form a person fills in the Prefect UI when a deployed run waits for them (REQ-09)."""

    action: Literal["resume", "abandon"] = Field(
        default="resume",
        description="resume: the loop continues where it stopped (with your note); abandon: the task ends here.",
    )
    note: str = Field(
        default="",
        max_length=20_000,
        description="What you decided. It reaches the coder (and the planner when the plan was the problem) as "
        "feedback in the next round, and is kept in the task's history.",
    )


HUMAN_WAIT_S = 7 * 24 * 3600  # a suspended run waits up to a week for its person
Executor = Literal["scripted", "anthropic", "claude_code"]


@flow(name="devloop", flow_run_name=devloop_flow_run_name, log_prints=True, persist_result=False)
def devloop(
    goal: str = "",
    project: str | None = None,
    executor: Executor = "scripted",
    playbook: str | None = None,
    task_id: str | None = None,
    config: LoopSettings | None = None,
    budget_block: str | None = "default",
) -> dict:
    """Run one goal (or resume `task_id`) through planner, coder, tester, integrator, bug-triager and validator
    until it is done or needs a person.

    Started from a deployment, a blocked task suspends the flow run with a form (resume with a note, or abandon)
    and carries on when a person submits it; started from the CLI, the run ends with the task blocked and
    `graphlemon resume` continues it.

    Args:
        goal: What to build, e.g. "Implement a snake game" (ignored when task_id is given).
        project: The target git repository (`graphlemon init` once); empty: the worker's $GRAPHLEMON_PROJECT.
        executor: Who runs the agents: scripted (replays `playbook`, no model), anthropic, or claude_code.
        playbook: The scripted executor's playbook (a YAML path on the worker).
        task_id: Continue this task instead of creating one (after a crash or a block).
        config: The loop's limits (attempts, rounds, timeouts, where unit loops run); a resumed task keeps its own.
        budget_block: The GraphLemon Budget Guardrail block a new task starts with, if that block exists.
    """
    handle = open_project(project_dir(project))
    board = TaskBoard(handle.ledger)
    flow_run_id = str(get_run_context().flow_run.id)
    task = board.get(task_id) if task_id else board.create(goal, flow_run_id=flow_run_id)  # a re-run finds its task
    _name_run(flow_run_id, task)
    url = flow_run_url(flow_run_id)
    if url:
        get_run_logger().info("%s: Prefect flow run %s", task.task_id, url, extra=SAY)
    if not task_id:
        _apply_budget_block(handle, task.task_id, budget_block)
    overrides = config.model_dump(exclude_unset=True) if config else {}
    chosen = {**overrides, "executor": executor, "playbook": str(Path(playbook).resolve()) if playbook else None}
    session = LoopSession.start(handle, task.task_id, load_agent_settings(), **chosen)
    session.human_step = "prefect_ui" if _from_deployment() else "cli"
    if session.config.unit_runner == "remote_pool":  # refused before the loop: the task stays as it was
        result_store()  # INVALID_PARAM without PREFECT_DEFAULT_RESULT_STORAGE_BLOCK (or with a block not there)
    reserved = leases.reserved_for(handle.ledger, task.task_id, flow_run_id)  # handed to this run before it started
    try:
        with session.bound(), timeline_streamed(session), cancel_watched(session, flow_run_id):
            final = drive(session, PrefectEngine(flow_run_id), run_id=flow_run_id, on_done=[_deploy_merge],
                          adopt=reserved)  # fmt: skip
    except GraphLemonError as exc:
        if exc.code not in (ErrorCode.TASK_HELD, ErrorCode.LEASE_LOST):
            raise
        get_run_logger().warning("task %s: %s", task.task_id, exc.message)  # a state and its message, no traceback
        return end_run(Cancelled(name="Refused" if exc.code == ErrorCode.TASK_HELD else "Lease lost",
                                 message=exc.message[:500]))  # fmt: skip
    if final.status == "blocked_pending_human":
        _publish_evidence(session, final)
    get_run_logger().info("task %s: %s (round %s)", task.task_id, final.status, final.loop_round)
    return end_run(cancelled_too_late(flow_run_id, final, final_state(final)))


def cancelled_too_late(flow_run_id: str, task, state: State | dict) -> State | dict:
    """The run's final state when Cancel was pressed after the loop's last safe point (nothing was left to stop, the
    task ended on its own): Prefect lets a Cancelling run end only Cancelled (a Completed or Failed is refused and the
    run would stay Cancelling), so it ends Cancelled and says what happened. Otherwise `state` as it is."""
    from prefect.client.orchestration import get_client

    if isinstance(state, State) and state.is_cancelled():
        return state
    with get_client(sync_client=True) as client:
        now = client.read_flow_run(flow_run_id).state
    if now is None or not now.is_cancelling():
        return state
    said = f"Cancel came after the last step, with nothing left to stop: the task is {task.status}"
    get_run_logger().warning("task %s: %s", task.task_id, said, extra=SAY)
    return Cancelled(name=state.name if isinstance(state, State) else "Done",
                     message=f"{said} ({now.message})"[:500] if now.message else said, data=_summary(task))  # fmt: skip


def final_state(task) -> State | dict:
    """The run's final state, from the task's journal: done is Completed; anything that stopped before done is not
    green, its message says why (and how it goes on)."""
    summary = _summary(task)
    if task.status == "done":
        return summary
    if task.status == "abandoned":
        return Cancelled(name="Abandoned", message=(task.note or "abandoned")[:500], data=summary)
    if task.status != "blocked_pending_human":
        return summary
    why = f"{task.blocked_reason}: {task.note or ''}"[:400] + f" · resume: graphlemon resume {task.task_id}"
    if task.blocked_reason == "stage_failed":  # an error no stage could retry past: the run failed
        return Failed(name="Stage failed", message=why, data=summary)
    if task.blocked_reason == "stopped_by_person":
        return Cancelled(name="Stopped", message=why, data=summary)
    return Cancelled(name="Blocked", message=why, data=summary)  # waits for `graphlemon resume`


def end_run(state: State | dict):
    """Return the run's final state. A deployed run (a worker's process) would have Prefect read a non-completed
    state's result and log a traceback for it, so the state is set through the API and the run ends there, as the
    orchestrator ends a run it aborts (`Abort`: exit 0, one info line)."""
    if not isinstance(state, State) or state.is_completed() or not _from_deployment():
        return state
    from prefect.client.orchestration import get_client
    from prefect.exceptions import Abort

    with get_client(sync_client=True) as client:
        client.set_flow_run_state(get_run_context().flow_run.id, state.model_copy(update={"data": None}), force=True)
    raise Abort(f"{state.name}: {state.message}")


CANCEL_POLL_S = 5.0  # a stop lands at the next safe point anyway: a step takes seconds


@contextmanager
def cancel_watched(session: LoopSession, flow_run_id: str):
    """Cancel in the Prefect UI is a person's stop: while the block runs, the run's state is polled, and a run put
    in `Cancelling` gets a stop request on the task's lease (the one thing read from Prefect: a person's command,
    turned at once into a journal record). The loop then stops at its next safe point like any stop."""
    from prefect.client.orchestration import get_client

    done = threading.Event()

    def watch() -> None:
        with get_client(sync_client=True) as client:
            while not done.wait(CANCEL_POLL_S):
                try:
                    state = client.read_flow_run(flow_run_id).state
                except Exception:  # noqa: BLE001 - the API did not answer this time: asked again next time
                    continue
                if state is not None and state.is_cancelling():
                    stop = leases.request_stop(session.ledger, session.task_id,
                                               by="a person (Cancel in the Prefect UI)",
                                               note=state.message or f"flow run {flow_run_id} cancelled")  # fmt: skip
                    if stop is not None:
                        return

    watcher = threading.Thread(
        target=contextvars.copy_context().run, args=(watch,), name=f"cancel-watch-{flow_run_id}", daemon=True
    )  # this run's Prefect settings and API, in the thread too
    watcher.start()
    try:
        yield
    finally:
        done.set()


# a line of this run's log that `graphlemon run` also prints on the terminal, whose output is otherwise the task's
# timeline, one line per event (Prefect's own INFO lines, and the timeline it streams to the run's logs, are not)
SAY = {"graphlemon_say": True}


def flow_run_url(flow_run_id: str) -> str | None:
    """The flow run's page in the Prefect UI of the API this process uses (None when that API has no UI)."""
    from prefect.settings import get_current_settings

    ui = get_current_settings().ui_url
    return f"{ui.rstrip('/')}/runs/flow-run/{flow_run_id}" if ui else None


class PrefectEngine:
    """The driver's engine for a flow run: the flow run holds the task's lease, stages run as Prefect tasks and
    subflows, stage artifacts are sent off the loop's path, and — in a deployed run — a blocked task suspends the
    run with a form for a person."""

    def __init__(self, flow_run_id: str) -> None:
        self.flow_run_id = flow_run_id

    def holder(self, session: LoopSession) -> Holder:
        name = get_run_context().flow_run.name
        return Holder.here(f"Prefect flow run {name}", flow_run_id=self.flow_run_id)

    def on_wait(self, message: str) -> None:
        get_run_logger().info("%s", message, extra=SAY)

    def running(self, session: LoopSession):
        return sent_in_background()

    def close_gone(self, session: LoopSession, gone: Lease) -> None:
        close_gone_run(gone, self.flow_run_id)

    def stages(self, session: LoopSession) -> Stages:
        return PrefectRunner(progress=_progress(session), units=UnitRuns()).stages(session.run)

    def ask_person(self, session: LoopSession, task) -> Decision | None:
        """A deployed run suspends with the form; the answer comes back when the rescheduled run passes here
        again. A run the CLI started ends with the task blocked (`graphlemon resume` continues it)."""
        if not _from_deployment():
            return None
        _publish_evidence(session, task)
        rounds = sum(e.task_id == task.task_id for e in session.ledger.read_as("escalation", EscalationRecord))
        form = HumanDecision.with_initial_data(description=_form_description(session, task))
        if session.lease is not None:  # the lease is let go while the run waits; the journal says which run waits
            session.lease.waiting_run = self.flow_run_id
        answer = suspend_with_message(form, f"human-{task.task_id}-{rounds}", _suspension_message(session, task))
        now = session.board.get(task.task_id)
        if now.status != "blocked_pending_human":  # decided meanwhile (`graphlemon resume` / abandon from the CLI)
            get_run_logger().info("task %s was already %s when this form was submitted", now.task_id, now.status,
                                  extra=SAY)  # fmt: skip
            return None
        return Decision(action=answer.action, note=answer.note, by="human (Prefect UI)", place="in the Prefect UI")


def _deploy_merge(session: LoopSession, task) -> None:
    """On done, in GraphLemon's own repository (self-hosted): the merge the finished task left is deployed with no
    person (REQ-15) — by the `deploy-supervisor` flow as a subflow of this run, or, when this run is a deployment's
    (a worker, perhaps the live instance's own, which finalize stops), by a detached `graphlemon deploy merged`."""
    handle, task_id = session.project, task.task_id
    if task.status != "done" or pending_self_deploy(handle, task_id) is None:
        return
    if _from_deployment():
        pid, log = spawn_deploy(handle, task_id)
        get_run_logger().info("task %s: deploying its merge in a detached process (PID %s, log %s)", task_id, pid, log)
        return
    from .deploy_supervisor import deploy_merge  # only GraphLemon's own repository deploys: not at every start

    try:
        deploy_merge(handle, task_id)
    except GraphLemonError as exc:  # refused (e.g. another deployment still runs): the task stays done, as recorded
        get_run_logger().error("task %s: its merge was not deployed: %s", task_id, exc.message)


def _summary(task) -> dict:
    return task.model_dump(mode="json")


def _apply_budget_block(handle, task_id: str, name: str | None) -> None:
    """A new task starts with the BudgetGuardrail block `name`'s limit, when that block exists (blocks/budget.py)."""
    from graphlemon.agents.budget import update_budget
    from graphlemon.blocks.budget import load_budget_guardrail
    from graphlemon.models import BudgetConfig

    if any(b.task_id == task_id for b in handle.ledger.read_as("budget", BudgetConfig)):
        return  # not new: a resumed (rescheduled) run passes here again and keeps the budget a person may have raised
    block = load_budget_guardrail(name)
    if block is not None:
        update_budget(
            handle.ledger, task_id, block.limit_value, block.limit_type, by=f"budget guardrail block {name!r}"
        )
        get_run_logger().info(
            "task %s: budget %g (%s) from block %r", task_id, block.limit_value, block.limit_type, name
        )


def _form_description(session: LoopSession, task) -> str:
    return (
        f"**{task.task_id} is blocked: {task.blocked_reason}.** {task.note or ''}\n\n"
        f"The evidence (open bugs, rounds, budget, what to decide) is the artifact "
        f"`{task_key(session, 'escalation')}` of this run, as of {utcnow():%Y-%m-%d %H:%M} UTC when the task "
        f"stopped (what is true now: `graphlemon status`, `graphlemon budget show {task.task_id}`). **Resume** "
        f"continues the loop with your note as feedback for the coder; **abandon** ends the task."
    )


def _suspension_message(session: LoopSession, task) -> str:
    packs = [e for e in session.ledger.read_as("escalation", EscalationRecord) if e.task_id == task.task_id]
    return suspension_message(task.task_id, packs[-1] if packs else None, task.note, task_key(session, "escalation"))


def suspend_with_message(form: type[RunInput], key: str, message: str, timeout: int = HUMAN_WAIT_S) -> RunInput:
    """`prefect.flow_runs.suspend_flow_run(wait_for_input=form, key=key, timeout=timeout)` for the current run, whose
    Suspended state then carries `message` (why it waits), shown in the UI and the API: the function saves the form
    and leaves the process (the run is rescheduled when resumed), or returns the submitted input when this
    suspension has already been answered (the re-run of a resumed run passes here again with the same key). Its
    state takes no message, so the accepted Suspended state is set again with the message through the client,
    unless the run has left it already (a person who answered at once is never sent back to waiting)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import Pause
    from prefect.flow_runs import suspend_flow_run

    get_run_logger().info("Suspending flow run until a person answers its form: %s", message)
    try:
        return suspend_flow_run(wait_for_input=form, key=key, timeout=timeout)
    except Pause as pause:
        if pause.state is not None:
            told = pause.state.model_copy(update={"message": _REDACTOR.value(message)})
            run_id = get_run_context().flow_run.id
            with get_client(sync_client=True) as client:
                if client.read_flow_run(run_id).state_id == pause.state.id:  # not already resumed by a quick person
                    client.set_flow_run_state(run_id, told, force=True)
        raise


def _progress(session: LoopSession):
    """The task's progress artifact (rounds used of the limit), keyed per task, updated each round."""
    task = session.board.get(session.task_id)
    return create_progress_artifact(
        progress=min(100.0, 100.0 * task.loop_round / session.config.max_loop_rounds),
        key=task_key(session, "progress"),
        description=f"{session.task_id}: rounds used of {session.config.max_loop_rounds} (100 % when done)",
    )


def _name_run(flow_run_id: str, task) -> None:
    """Name the run after its task and goal (`devloop · snake game · task-…`) once its task exists: a run that
    started without one (a new goal) gets its task id; a run created with its final name keeps it."""
    from prefect.client.orchestration import get_client

    name = devloop_run_name(task.goal_text, task.task_id)
    if get_run_context().flow_run.name != name:
        with get_client(sync_client=True) as client:
            client.update_flow_run(flow_run_id, name=name)


def _from_deployment() -> bool:
    return get_run_context().flow_run.deployment_id is not None


def _publish_evidence(session: LoopSession, task) -> None:
    packs = [e for e in session.ledger.read_as("escalation", EscalationRecord) if e.task_id == task.task_id]
    if packs:
        create_markdown_artifact(key=task_key(session, "escalation"), markdown=packs[-1].summary_md,
                                 description=f"{task.task_id} needs a human: {task.blocked_reason}")  # fmt: skip


def resume_suspended_run(flow_run_id: str, note: str | None, action: str = "resume") -> bool:
    """`graphlemon resume` on a task whose journal says a deployed run waits for a person: answer that run's form,
    so the two paths are one. False when no Prefect API is set or Prefect refuses (that run no longer waits: it was
    cancelled, deleted, or answered): then the caller runs the task itself."""
    from prefect.flow_runs import resume_flow_run

    from graphlemon.blocks.agents import prefect_api_configured

    if not prefect_api_configured():
        return False
    try:
        resume_flow_run(flow_run_id, run_input={"action": action, "note": note or ""})
    except Exception:  # noqa: BLE001 - not paused, of another server, or deleted: nothing waits there
        return False
    return True
