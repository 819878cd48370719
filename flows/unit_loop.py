"""The `unit-loop` flow: loop L1 for one unit in one round (coder turn → tester → hints → coder ...).

The devloop flow runs it as a subflow per unit and round; deployed (prefect.yaml
`unit-loop`), any worker of a work pool can run it for a devloop whose task settings
say `unit_runner: work_pool` (docs/scale.md). Its result is the unit's outcome record
in the ledger.
"""

from __future__ import annotations

from prefect import flow

from flows.run_names import unit_flow_run_name
from graphlemon.devloop.outcomes import UnitOutcome
from graphlemon.devloop.unit_loop import run_unit_loop
from tasks._common import finished, session_for, timeline_logged
from tasks._redacted_artifacts import sent_in_background


@flow(name="unit-loop", flow_run_name=unit_flow_run_name, persist_result=False)
def unit_loop(
    project: str, task_id: str, unit_id: str, loop_round: int, feedback: str | None = None, pass_tag: str = ""
) -> UnitOutcome:
    """L1 for one unit: coder turn -> tester stage -> retry with hints until green or the retry limit."""
    from .stages import PrefectStages

    with timeline_logged(session_for(project, task_id)) as session, sent_in_background():
        out = run_unit_loop(session, PrefectStages(session), unit_id, loop_round, feedback, pass_tag)
    why = (
        f"still red after {out.attempts} attempt(s): {out.error or ''}; open bugs {', '.join(out.open_bug_ids) or '-'}"
    )
    return finished(out, red=not out.green, name="Blocked", message=why)
