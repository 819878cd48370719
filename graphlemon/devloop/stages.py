"""`Stages`: how the loops call each stage, the one implementation for both engines.

Each method names its step and the domain function that does it, and hands both to a `Runner`
with the run's reference (`RunRef`) and the step's arguments. The domain's runner, `call`, opens the
run's session and calls the function. The Prefect layer supplies a runner that runs the same step as
its Prefect task (a unit loop: as a subflow), which opens the session from the same reference and
calls the same function (flows/stages.py). Nothing else differs between the engines.

Unit loops of one wave run side by side in threads; each thread starts from the caller's context,
so the run's bound session (and a Prefect run context) reach it.

Every step starts at a safe point (`LoopSession.checkpoint`): nothing of the run is half-written there, so a
person's stop (or a lease taken over) ends the run before the step, never inside it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from ..stages.bug_triager import triage_integration
from ..stages.coder import CoderTurn, coder_turn
from ..stages.integrator import run_integration
from ..stages.outcomes import IntegrationOutcome, PlanOutcome, SkillUpdateOutcome, UnitOutcome, ValidationOutcome
from ..stages.planner import run_planner
from ..stages.session import LoopSession, RunRef, open_session
from ..stages.skill_editor import run_skill_update
from ..stages.tester import TesterOutput, test_unit
from ..stages.validator import run_validator
from ..testrun.process import end_live_runs
from .unit_loop import run_unit_loop

T = TypeVar("T")
MAX_PARALLEL_UNITS = 4  # unit loops of one wave running at once


class Runner(Protocol):
    """Runs one step: `step` names it (`planner`, `unit-loop`, `coder`, `tester`, `integrator`, `bug-triager`,
    `validator`, `skill-editor`), `fn(session, *args)` is the domain function that does it."""

    def __call__(self, step: str, fn: Callable[..., T], run: RunRef, *args: Any) -> T: ...


def call(step: str, fn: Callable[..., T], run: RunRef, *args: Any) -> T:
    """The domain's runner: the step as a plain call on the run's session."""
    return fn(open_session(run), *args)


class Stages:
    """Each stage of the loops, run by `runner` (default: plain calls); independent units run in threads."""

    def __init__(self, run: RunRef, runner: Runner = call, max_parallel_units: int = MAX_PARALLEL_UNITS) -> None:
        self.run, self.runner, self.max_parallel_units = run, runner, max_parallel_units

    def _step(self, step: str, what: str, fn: Callable[..., T], *args: Any) -> T:
        """Run one step from a safe point: `what` names it as the UI does (`coder add · attempt 2`)."""
        open_session(self.run).checkpoint(what)
        return self.runner(step, fn, self.run, *args)

    def plan(self, loop_round: int, feedback: str | None) -> PlanOutcome:
        return self._step("planner", f"planner · round {loop_round}", run_planner, loop_round, feedback)

    def code_units(
        self, unit_ids: list[str], loop_round: int, feedback: dict[str, str], pass_tag: str = ""
    ) -> list[UnitOutcome]:
        pool = ThreadPoolExecutor(max_workers=min(self.max_parallel_units, max(1, len(unit_ids))))
        interrupted = False  # a unit's error waits for its siblings' steps; Ctrl-C does not
        try:
            futures = [
                pool.submit(contextvars.copy_context().run, self.unit_loop, u, loop_round, feedback.get(u), pass_tag)
                for u in unit_ids
            ]
            return [f.result() for f in futures]
        except KeyboardInterrupt:  # the units' test runs and claude turns end now (GraphLemon is ending: this
            interrupted = True  # process starts no run after it); their threads stop at the next safe point
            end_live_runs()
            raise
        finally:
            pool.shutdown(wait=not interrupted, cancel_futures=interrupted)

    def unit_loop(self, unit_id: str, loop_round: int, feedback: str | None, pass_tag: str = "") -> UnitOutcome:
        what = f"unit {unit_id} · round {loop_round}" + (f" · {pass_tag}" if pass_tag else "")
        return self._step("unit-loop", what, self._unit_loop, unit_id, loop_round, feedback, pass_tag)

    def _unit_loop(self, session: LoopSession, unit_id: str, loop_round: int, feedback: str | None, pass_tag: str):
        return run_unit_loop(session, self, unit_id, loop_round, feedback, pass_tag)

    def coder_turn(
        self, nid: str, unit_id: str, attempt: int, first: int, loop_round: int, hints: str | None
    ) -> CoderTurn:
        what = f"coder {unit_id} · attempt {attempt - first + 1} (round {loop_round})"
        return self._step("coder", what, coder_turn, nid, unit_id, attempt, first, loop_round, hints)

    def test_unit(
        self, nid: str, unit_id: str, attempt: int, first: int, loop_round: int, code_ref: str | None
    ) -> TesterOutput:
        what = f"tester {unit_id} · attempt {attempt - first + 1} (round {loop_round})"
        return self._step("tester", what, test_unit, nid, unit_id, attempt, first, loop_round, code_ref)

    def integrate(self, loop_round: int, attempt: int) -> IntegrationOutcome:
        what = f"integrator · round {loop_round} · attempt {attempt}"
        return self._step("integrator", what, run_integration, loop_round, attempt)

    def triage(self, loop_round: int, attempt: int, run_id: str) -> IntegrationOutcome:
        what = f"bug-triager · round {loop_round} · attempt {attempt}"
        return self._step("bug-triager", what, triage_integration, loop_round, attempt, run_id)

    def validate(self, loop_round: int) -> ValidationOutcome:
        return self._step("validator", f"validator · round {loop_round}", run_validator, loop_round)

    def update_skill(self, loop_round: int) -> SkillUpdateOutcome:
        return self._step("skill-editor", f"skill-editor · round {loop_round}", run_skill_update, loop_round)
