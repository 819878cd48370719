"""The `unit-loop` flow: loop L1 for one unit in one round (coder turn → tester → hints → coder ...), and how the
devloop runs it (`UnitRuns`).

The devloop flow runs it as a subflow per unit and round; deployed (prefect.yaml
`unit-loop`), any worker of a work pool can run it for a devloop whose task settings
say `unit_runner: work_pool` (docs/scale.md). Its result is the unit's outcome record
in the ledger.

`remote-unit-loop` is the same loop for workers that share no filesystem with the devloop
(`unit_runner: remote_pool`): its result is everything the unit loop wrote, which the devloop appends.

A unit loop that stops for a known reason (a person's stop, a budget, a usage-limit wait that timed out)
ends in a state named for it with its message (tasks/_common.py, `ended_state`), never as a traceback; the
devloop raises the error again where the loop decides.
"""

from __future__ import annotations

from prefect import flow

from graphlemon.devloop.unit_loop import run_unit_loop
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.flows.run_names import remote_flow_run_name, unit_flow_run_name
from graphlemon.stages.coder import unit_node_id
from graphlemon.stages.outcomes import UnitOutcome
from graphlemon.stages.session import RunRef, open_session
from graphlemon.tasks._common import ended_state, finished, stage_result, timeline_logged
from graphlemon.tasks._redacted_artifacts import sent_in_background

from .remote_units import RemoteUnits, result_store
from .stages import PrefectRunner


@flow(name="unit-loop", flow_run_name=unit_flow_run_name, persist_result=False)
def unit_loop(
    run: RunRef, unit_id: str, loop_round: int, feedback: str | None = None, pass_tag: str = ""
) -> UnitOutcome:
    """L1 for one unit: coder turn -> tester stage -> retry with hints until green or the retry limit."""
    logged = timeline_logged(run, step=(unit_node_id(run.task_id, unit_id, loop_round, pass_tag), "outcome"))
    try:
        with logged as session, session.bound(), sent_in_background():
            out = run_unit_loop(session, PrefectRunner().stages(run), unit_id, loop_round, feedback, pass_tag)
    except GraphLemonError as exc:  # a stop, a budget, a backend that gave up: a state with its message
        return ended_state(exc)
    if logged.reused:
        return logged.cached(out, red=not out.green)
    why = (
        f"still red at attempt {out.last_attempt} ({out.attempts} this round): {out.error or ''}; open bugs {', '.join(out.open_bug_ids) or '-'}"
    )
    return finished(out, red=not out.green, name="Blocked", message=why)


@flow(name="remote-unit-loop", flow_run_name=remote_flow_run_name, persist_result=True, result_serializer="json")
def remote_unit_loop(job: dict) -> dict:
    """L1 for one unit on a worker that sees only the project's git remote and Prefect: a scratch clone and a
    copy of the task's state, the unit's branch pushed back; the result (what the unit loop wrote) is kept in
    Prefect's result storage for the devloop, the one writer of the ledger, to take in (docs/scale.md)."""
    import tempfile
    from pathlib import Path

    from prefect.runtime import flow_run

    from graphlemon.blocks.agents import load_agent_settings
    from graphlemon.blocks.git_remote import resolve_remote
    from graphlemon.devloop.remote_unit import RemoteUnitJob, run_remote_unit
    from graphlemon.devloop.remote_watch import beating, heartbeat_key

    unit, store = RemoteUnitJob.model_validate(job), result_store()
    with (
        beating(store.write_path, heartbeat_key(str(flow_run.id)), unit.heartbeat_s),  # the devloop sees it alive
        tempfile.TemporaryDirectory(prefix="graphlemon-unit-") as scratch,
        sent_in_background(),
    ):
        out = run_remote_unit(unit, store, Path(scratch), PrefectRunner().stages, load_agent_settings(), resolve_remote)
    return out.model_dump(mode="json")


class UnitRuns:
    """How the devloop runs one unit loop (the runner's `unit-loop` step): a subflow run in this process, or — with
    `unit_runner: work_pool` in the task's settings — a run of the unit-loop deployment on a work pool, or — with
    `unit_runner: remote_pool` — a run of remote-unit-loop (`RemoteUnits`)."""

    def __init__(self) -> None:
        self._quiet_settings = None  # the flow's Prefect settings with subflow heartbeats off, derived once

    def __call__(self, run: RunRef, unit_id: str, loop_round: int, feedback: str | None, pass_tag: str) -> UnitOutcome:
        where = open_session(run).config.unit_runner
        if where == "remote_pool":
            return RemoteUnits()(run, unit_id, loop_round, feedback, pass_tag)
        if where == "work_pool":
            return self.on_pool(run, unit_id, loop_round, feedback, pass_tag)
        return self.in_process(run, unit_id, loop_round, feedback, pass_tag)

    def in_process(self, run: RunRef, unit_id: str, loop_round: int, feedback: str | None, pass_tag: str):
        """A subflow run in this process. It sends no heartbeats of its own: the devloop flow run's heartbeat
        already says this process is alive, and Prefect's heartbeat thread costs a subflow up to a second at its
        end (the thread sleeps in one-second steps and is joined)."""
        with self.without_heartbeat():
            return stage_result(unit_loop(run, unit_id, loop_round, feedback, pass_tag, return_state=True))

    def on_pool(self, run: RunRef, unit_id: str, loop_round: int, feedback: str | None, pass_tag: str):
        """A run of the unit-loop deployment (any worker of its pool); its outcome is read from the shared ledger.
        A run that recorded none because a person stopped the task is that stop, raised here."""
        from prefect.deployments import run_deployment

        from .run_names import unit_run_name

        session = open_session(run)
        params = {"run": run.model_dump(), "unit_id": unit_id, "loop_round": loop_round, "feedback": feedback,
                  "pass_tag": pass_tag}  # fmt: skip
        flow_run = run_deployment(session.config.unit_deployment, parameters=params, timeout=None,
                                  flow_run_name=unit_run_name(unit_id, loop_round, pass_tag))  # fmt: skip
        outcome = session.load_outcome(unit_node_id(run.task_id, unit_id, loop_round, pass_tag), UnitOutcome)
        if outcome is None:
            session.checkpoint(f"unit {unit_id} · round {loop_round} (its run on the work pool ended)")
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
