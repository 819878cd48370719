"""What a task's own work says about it: its red units and the bugs its own runs reported.

Bugs are de-duplicated on `unit:test` across tasks, so a failure this task's tester saw
may be filed under another task's bug. A task is therefore judged by its own unit loops
and runs — never by which task a bug is filed under, nor by another task's bug states:
a unit whose latest coder node in this task is not done is red, and the bugs its last
attempt reported are this task's to attribute, whatever their task and status.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from .outcomes import UnitOutcome
from .session import LoopSession


class OwnState(BaseModel):
    red_units: list[str] = Field(default_factory=list)  # not green in this task (blocked, or never coded)
    bug_ids: list[str] = Field(default_factory=list)  # bugs the red units' last attempts reported

    @property
    def green(self) -> bool:
        return not self.red_units


def latest_coder_nodes(session: LoopSession) -> dict[str, tuple[str, str]]:
    """unit_id -> (node_exec_id, status) of the unit's latest coder node in this task."""
    latest: dict[str, tuple[tuple, str, str]] = {}
    for n in session.nodes.for_task(session.task_id):
        if n.stage == "coder" and n.unit_id:
            key = (n.loop_round, n.started_at)
            if n.unit_id not in latest or key >= latest[n.unit_id][0]:
                latest[n.unit_id] = (key, n.node_exec_id, n.status)
    return {unit: (nid, status) for unit, (_, nid, status) in latest.items()}


def own_state(session: LoopSession) -> OwnState:
    """This task's red units (every planned unit must be green in this task) and the bugs they reported."""
    latest = latest_coder_nodes(session)
    red, bug_ids = [], []
    for unit in session.unit_files.units().ids():
        nid, status = latest.get(unit, (None, "missing"))
        if status == "done":
            continue
        red.append(unit)
        outcome = session.load_outcome(nid, UnitOutcome) if nid else None
        bug_ids += [b for b in (outcome.open_bug_ids if outcome else []) if b not in bug_ids]
    return OwnState(red_units=red, bug_ids=bug_ids)
