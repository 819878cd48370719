"""`PrefectStages`: the DevLoop's `Stages` seam as Prefect runs, so the UI shows the loop as it happens.

    devloop flow run
    ├── planner · round 0                 (task)
    ├── unit collision · round 0          (subflow, one per unit and round)
    │   ├── coder collision · attempt 1   (task)
    │   └── tester collision · attempt 1  (task)
    ├── integrator · round 0 · attempt 1  (task)
    ├── bug-triager · round 0 · attempt 1 (task, only when the integration run failed)
    ├── validator · round 0               (task)
    └── skill-editor · round 0            (task, only when the validator blamed a skill)

Unit loops of one wave run side by side: in this process (threads, each a subflow run),
or — with `unit_runner: work_pool` in the task's settings — as runs of the `unit-loop`
deployment on a work pool, which write their outcome to the shared ledger where this
flow reads it back (docs/scale.md).
"""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor

from graphlemon.devloop.outcomes import UnitOutcome
from graphlemon.devloop.session import LoopSession
from graphlemon.devloop.unit_loop import prior_attempts, unit_node_id
from graphlemon.errors import ErrorCode, GraphLemonError
from tasks._common import stage_result
from tasks.code import coder_task
from tasks.integrate import integrator_task
from tasks.plan import planner_task
from tasks.skill_update import skill_editor_task
from tasks.test import tester_task
from tasks.triage import bug_triager_task
from tasks.validate import validator_task


class PrefectStages:
    """Each stage a Prefect task run (unit loops: subflow runs, in process or on a work pool)."""

    def __init__(self, session: LoopSession, max_parallel_units: int = 4, progress=None) -> None:
        self.session = session
        self.args = (str(session.project.root), session.task_id)
        self.max_parallel_units = max_parallel_units
        self.progress = progress  # the task's progress artifact id (flows/devloop.py), updated after each round

    def report_progress(self, loop_round: int, *, done: bool = False) -> None:
        """Rounds used of the limit after `loop_round`; 100 % when the task is done."""
        if self.progress is None:
            return
        from tasks._redacted_artifacts import update_progress_artifact

        used = 100.0 if done else 100.0 * (loop_round + 1) / self.session.config.max_loop_rounds
        update_progress_artifact(self.progress, progress=min(100.0, used))

    def plan(self, loop_round, feedback):
        return stage_result(planner_task(*self.args, loop_round, feedback))

    def code_units(self, unit_ids, loop_round, feedback, pass_tag=""):
        run = self._unit_on_pool if self.session.config.unit_runner == "work_pool" else self._unit_in_process
        with ThreadPoolExecutor(max_workers=min(self.max_parallel_units, max(1, len(unit_ids)))) as pool:
            futures = [
                pool.submit(contextvars.copy_context().run, run, u, loop_round, feedback.get(u), pass_tag)
                for u in unit_ids
            ]
            return [f.result() for f in futures]

    def coder_turn(self, nid, unit_id, attempt, loop_round, hints):
        first = prior_attempts(self.session, unit_id, nid) + 1  # names the turn by its attempt within the round
        return stage_result(coder_task(*self.args, nid, unit_id, attempt, loop_round, hints, first))

    def test_unit(self, nid, unit_id, attempt, first, loop_round, code_ref):
        return stage_result(tester_task(*self.args, nid, unit_id, attempt, first, loop_round, code_ref))

    def integrate(self, loop_round, attempt):
        return stage_result(integrator_task(*self.args, loop_round, attempt))

    def triage(self, loop_round, attempt, run_id):
        return stage_result(bug_triager_task(*self.args, loop_round, attempt, run_id))

    def validate(self, loop_round):
        outcome = stage_result(validator_task(*self.args, loop_round))
        self.report_progress(loop_round, done=outcome.ok)
        return outcome

    def update_skill(self, loop_round):
        return skill_editor_task(*self.args, loop_round)

    # -- unit loops -------------------------------------------------------------------------------
    def _unit_in_process(self, unit_id: str, loop_round: int, feedback: str | None, pass_tag: str) -> UnitOutcome:
        """A subflow run in this process. It sends no heartbeats of its own: the devloop flow run's heartbeat
        already says this process is alive, and Prefect's heartbeat thread costs a subflow up to a second at its
        end (the thread sleeps in one-second steps and is joined)."""
        from .unit_loop import unit_loop

        with _without_heartbeat():
            return stage_result(unit_loop(*self.args, unit_id, loop_round, feedback, pass_tag))

    def _unit_on_pool(self, unit_id: str, loop_round: int, feedback: str | None, pass_tag: str) -> UnitOutcome:
        """A run of the unit-loop deployment (any worker of its pool); its outcome is read from the shared ledger."""
        from prefect.deployments import run_deployment

        from .run_names import unit_run_name

        name = self.session.config.unit_deployment
        params = {"project": self.args[0], "task_id": self.args[1], "unit_id": unit_id, "loop_round": loop_round,
                  "feedback": feedback, "pass_tag": pass_tag}  # fmt: skip
        flow_run = run_deployment(name, parameters=params, timeout=None,
                                  flow_run_name=unit_run_name(unit_id, loop_round, pass_tag))  # fmt: skip
        outcome = self.session.load_outcome(unit_node_id(self.args[1], unit_id, loop_round, pass_tag), UnitOutcome)
        if outcome is None:
            state = flow_run.state.name if flow_run.state else "unknown"
            raise GraphLemonError(
                ErrorCode.EXECUTOR_ERROR,
                f"unit {unit_id} (round {loop_round}) ran on the work pool as flow run {flow_run.name} and ended "
                f"{state} without recording an outcome in the ledger",
                flow_run_id=str(flow_run.id),
            )
        return outcome


_heartbeat_free: tuple = (None, None)  # (the settings it was derived from, the same with heartbeats off)


def _without_heartbeat():
    """The current Prefect settings with flow heartbeats off, as a settings context. Derived once per settings
    object: `temporary_settings` rebuilds and validates the whole settings model on every call (53 ms here, more
    under load), once per unit subflow."""
    import prefect.context
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY

    global _heartbeat_free
    current = prefect.context.get_settings_context()
    base, derived = _heartbeat_free
    if base is not current.settings:
        derived = current.settings.copy_with_update(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})
        _heartbeat_free = (current.settings, derived)
    return prefect.context.SettingsContext(profile=current.profile, settings=derived)
