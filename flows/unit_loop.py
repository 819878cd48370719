"""The `unit-loop` flow: loop L1 for one unit in one round (coder turn → tester → hints → coder ...).

The devloop flow runs it as a subflow per unit and round; deployed (prefect.yaml
`unit-loop`), any worker of a work pool can run it for a devloop whose task settings
say `unit_runner: work_pool` (docs/scale.md). Its result is the unit's outcome record
in the ledger.

`remote-unit-loop` is the same loop for workers that share no filesystem with the devloop
(`unit_runner: remote_pool`): its result is everything the unit loop wrote, which the devloop appends.
"""

from __future__ import annotations

from prefect import flow

from graphlemon.devloop.unit_loop import run_unit_loop
from graphlemon.flows.run_names import remote_flow_run_name, unit_flow_run_name
from graphlemon.stages.coder import unit_node_id
from graphlemon.stages.outcomes import UnitOutcome
from graphlemon.stages.session import RunRef
from graphlemon.tasks._common import finished, timeline_logged
from graphlemon.tasks._redacted_artifacts import sent_in_background


@flow(name="unit-loop", flow_run_name=unit_flow_run_name, persist_result=False)
def unit_loop(
    run: RunRef, unit_id: str, loop_round: int, feedback: str | None = None, pass_tag: str = ""
) -> UnitOutcome:
    """L1 for one unit: coder turn -> tester stage -> retry with hints until green or the retry limit."""
    from .stages import PrefectRunner

    logged = timeline_logged(run, step=(unit_node_id(run.task_id, unit_id, loop_round, pass_tag), "outcome"))
    with logged as session, session.bound(), sent_in_background():
        out = run_unit_loop(session, PrefectRunner().stages(run), unit_id, loop_round, feedback, pass_tag)
    if logged.reused:
        return logged.cached(out)
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

    from graphlemon.blocks.agents import load_agent_settings
    from graphlemon.blocks.git_remote import resolve_remote
    from graphlemon.devloop.remote_unit import RemoteUnitJob, run_remote_unit

    from .stages import PrefectRunner, result_store

    unit = RemoteUnitJob.model_validate(job)
    with tempfile.TemporaryDirectory(prefix="graphlemon-unit-") as scratch, sent_in_background():
        out = run_remote_unit(
            unit, result_store(), Path(scratch), PrefectRunner().stages, load_agent_settings(), resolve_remote
        )
    return out.model_dump(mode="json")
