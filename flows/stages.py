"""`PrefectRunner`: runs each step of the loops (graphlemon/devloop/stages.py) as its Prefect task or subflow,
so the UI shows the loop as it happens.

    devloop flow run
    ├── planner · round 0                 (task)
    ├── unit collision · round 0          (subflow, one per unit and round)
    │   ├── coder collision · attempt 1   (task)
    │   └── tester collision · attempt 1  (task)
    ├── integrator · round 0 · attempt 1  (task)
    ├── bug-triager · round 0 · attempt 1 (task, only when the integration run failed)
    ├── validator · round 0               (task)
    └── skill-editor · round 0            (task, only when the validator blamed a skill)

Each task receives the run's reference and calls the same domain function the plain runner would.
Unit loops of one wave run side by side: in this process (threads, each a subflow run),
or — with `unit_runner: work_pool` in the task's settings — as runs of the `unit-loop`
deployment on a work pool, which write their outcome to the shared ledger where this
flow reads it back, or — with `unit_runner: remote_pool` — as runs of the `remote-unit-loop`
deployment on workers that share no filesystem with this one: their results come back through
Prefect's result storage and this flow, the ledger's one writer, appends them (docs/scale.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphlemon.devloop.stages import Stages
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.stages.coder import unit_node_id
from graphlemon.stages.outcomes import UnitOutcome
from graphlemon.stages.session import RunRef, open_session
from graphlemon.tasks._common import stage_result
from graphlemon.tasks.bug_triager import bug_triager_task
from graphlemon.tasks.coder import coder_task
from graphlemon.tasks.integrator import integrator_task
from graphlemon.tasks.planner import planner_task
from graphlemon.tasks.skill_editor import skill_editor_task
from graphlemon.tasks.tester import tester_task
from graphlemon.tasks.validator import validator_task

TASKS: dict[str, Callable[..., Any]] = {
    "planner": planner_task,
    "coder": coder_task,
    "tester": tester_task,
    "integrator": integrator_task,
    "bug-triager": bug_triager_task,
    "validator": validator_task,
    "skill-editor": skill_editor_task,
}


class PrefectRunner:
    """A `Runner` for `Stages`: each stage a Prefect task run, each unit loop a subflow run (in this process, or a
    run of the unit-loop deployment on a work pool)."""

    def __init__(self, progress=None) -> None:
        self.progress = progress  # the task's progress artifact id (flows/devloop.py), updated after each round
        self._quiet_settings = None  # the flow's Prefect settings with subflow heartbeats off, derived once

    def stages(self, run: RunRef) -> Stages:
        return Stages(run, self)

    def __call__(self, step: str, fn: Callable[..., Any], run: RunRef, *args: Any) -> Any:
        if step == "unit-loop":
            where = open_session(run).config.unit_runner
            if where == "remote_pool":
                return RemoteUnits()(run, *args)
            return self._unit_on_pool(run, *args) if where == "work_pool" else self._unit_in_process(run, *args)
        out = stage_result(TASKS[step](run, *args, return_state=True))
        if step == "validator":
            self.report_progress(run, args[0], done=out.ok)
        return out

    def report_progress(self, run: RunRef, loop_round: int, *, done: bool = False) -> None:
        """Rounds used of the limit after `loop_round`; 100 % when the task is done."""
        if self.progress is None:
            return
        from graphlemon.tasks._redacted_artifacts import update_progress_artifact

        used = 100.0 if done else 100.0 * (loop_round + 1) / open_session(run).config.max_loop_rounds
        update_progress_artifact(self.progress, progress=min(100.0, used))

    def _unit_in_process(self, run: RunRef, unit_id: str, loop_round: int, feedback: str | None, pass_tag: str):
        """A subflow run in this process. It sends no heartbeats of its own: the devloop flow run's heartbeat
        already says this process is alive, and Prefect's heartbeat thread costs a subflow up to a second at its
        end (the thread sleeps in one-second steps and is joined)."""
        from .unit_loop import unit_loop

        with self.without_heartbeat():
            return stage_result(unit_loop(run, unit_id, loop_round, feedback, pass_tag, return_state=True))

    def _unit_on_pool(self, run: RunRef, unit_id: str, loop_round: int, feedback: str | None, pass_tag: str):
        """A run of the unit-loop deployment (any worker of its pool); its outcome is read from the shared ledger."""
        from prefect.deployments import run_deployment

        from .run_names import unit_run_name

        session = open_session(run)
        params = {"run": run.model_dump(), "unit_id": unit_id, "loop_round": loop_round, "feedback": feedback,
                  "pass_tag": pass_tag}  # fmt: skip
        flow_run = run_deployment(session.config.unit_deployment, parameters=params, timeout=None,
                                  flow_run_name=unit_run_name(unit_id, loop_round, pass_tag))  # fmt: skip
        outcome = session.load_outcome(unit_node_id(run.task_id, unit_id, loop_round, pass_tag), UnitOutcome)
        if outcome is None:
            state = flow_run.state.name if flow_run.state else "unknown"
            raise GraphLemonError(
                ErrorCode.EXECUTOR_ERROR,
                f"unit {unit_id} (round {loop_round}) ran on the work pool as flow run {flow_run.name} and ended "
                f"{state} without recording an outcome in the ledger",
                flow_run_id=str(flow_run.id),
            )
        return outcome

    def without_heartbeat(self):
        """The current Prefect settings with flow heartbeats off, as a settings context. Derived once per runner:
        `temporary_settings` rebuilds and validates the whole settings model on every call (53 ms here, more
        under load), once per unit subflow."""
        import prefect.context
        from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY

        current = prefect.context.get_settings_context()
        base, derived = self._quiet_settings or (None, None)
        if base is not current.settings:
            derived = current.settings.copy_with_update(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})
            self._quiet_settings = (current.settings, derived)
        return prefect.context.SettingsContext(profile=current.profile, settings=derived)


def result_store():
    """Prefect's default result storage block (PREFECT_DEFAULT_RESULT_STORAGE_BLOCK, e.g.
    `local-file-system/graphlemon-results` or an `s3-bucket/...` block): where remote unit loops keep their results
    and the devloop its state snapshots for them. Both sides must name the same block."""
    from prefect.blocks.core import Block
    from prefect.settings import PREFECT_DEFAULT_RESULT_STORAGE_BLOCK

    slug = PREFECT_DEFAULT_RESULT_STORAGE_BLOCK.value()
    if not slug:
        raise GraphLemonError(
            ErrorCode.INVALID_PARAM,
            "remote unit loops need a shared result store: set PREFECT_DEFAULT_RESULT_STORAGE_BLOCK (e.g. "
            "local-file-system/graphlemon-results) for the devloop and every worker (docs/scale.md)",
        )
    try:
        return Block.load(slug)
    except ValueError as exc:
        raise GraphLemonError(ErrorCode.INVALID_PARAM, f"result storage block {slug!r}: {exc}") from None


class RemoteUnits:
    """Unit loops on workers that see only the project's git remote and Prefect: each unit loop a run of the
    remote-unit-loop deployment; this flow, the ledger's one writer, takes its result in.

    A run is found again by its idempotency key (task, unit, round, pass): a devloop resumed after a kill waits
    for the run it had started (or reads its finished result) instead of starting another. A run that ended with
    no result (its worker died) is followed by one new run, keyed after it, so a second resume finds that one."""

    POLL_S = 1.0
    TRIES = 2

    def __call__(self, run: RunRef, unit_id: str, loop_round: int, feedback: str | None, pass_tag: str) -> UnitOutcome:
        from graphlemon.blocks.git_remote import resolve_remote
        from graphlemon.devloop.remote_unit import RemoteUnitResult, dispatch, take_in
        from graphlemon.devloop.stages import MAX_PARALLEL_UNITS

        session = open_session(run)
        stored = session.load_outcome(unit_node_id(run.task_id, unit_id, loop_round, pass_tag), UnitOutcome)
        if stored is not None:  # taken in before the devloop was stopped
            return stored
        store = result_store()
        job = dispatch(session, unit_id, loop_round, feedback, pass_tag, store, MAX_PARALLEL_UNITS, resolve_remote)
        key = f"graphlemon/{job.node_exec_id}"
        for _ in range(self.TRIES):
            flow_run = self._run(session.config.remote_unit_deployment, job, key)
            data = _result_of(flow_run)
            if data is not None:
                return take_in(session, job, RemoteUnitResult.model_validate(data), resolve_remote)
            key = f"graphlemon/{job.node_exec_id}/after-{flow_run.id}"
        state = flow_run.state.name if flow_run.state else "unknown"
        raise GraphLemonError(
            ErrorCode.EXECUTOR_ERROR,
            f"unit {unit_id} (round {loop_round}) ran on the remote pool as flow run {flow_run.name} and ended {state} "
            f"without a result, {self.TRIES} times",
            flow_run_id=str(flow_run.id),
        )

    def _run(self, deployment: str, job, key: str):
        from prefect.deployments import run_deployment

        from .run_names import unit_run_name

        name = unit_run_name(job.unit_id, job.loop_round, job.pass_tag)
        return run_deployment(deployment, parameters={"job": job.model_dump(mode="json")}, timeout=None,
                              poll_interval=self.POLL_S, flow_run_name=name, idempotency_key=key)  # fmt: skip


def _result_of(flow_run) -> dict | None:
    """A finished run's result from the result store, or None when it ended without one."""
    state = flow_run.state
    if state is None or not state.is_completed():
        return None
    try:
        return state.result(raise_on_failure=False)
    except Exception:  # noqa: BLE001 - a result lost with its storage: the run is as good as never finished
        return None
