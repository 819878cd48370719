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
How a unit loop runs (a subflow in this process, a run of a unit-loop deployment on a work pool or on
remote workers) is flows/unit_loop.py's `UnitRuns`, handed to the runner by the devloop flow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphlemon.devloop.stages import Stages
from graphlemon.errors import ErrorCode, GraphLemonError
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
    """A `Runner` for `Stages`: each stage a Prefect task run; a unit loop is run by `units` (flows/unit_loop.py's
    `UnitRuns`: a subflow in this process, or a run of a unit-loop deployment), which the devloop flow gives it."""

    def __init__(self, progress=None, units: Callable[..., UnitOutcome] | None = None) -> None:
        self.progress = progress  # the task's progress artifact id (flows/devloop.py), updated after each round
        self.units = units

    def stages(self, run: RunRef) -> Stages:
        return Stages(run, self)

    def __call__(self, step: str, fn: Callable[..., Any], run: RunRef, *args: Any) -> Any:
        if step == "unit-loop":
            if self.units is None:
                raise GraphLemonError(ErrorCode.INVALID_PARAM, "this runner runs no unit loops (a unit loop's stages)")
            return self.units(run, *args)
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
