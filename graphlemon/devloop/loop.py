"""The org loop (REQ-01 / 05 / 09): planner → coder (L1 per unit) → integrator (L2) → validator → route.

`run_devloop(session, stages)` is the whole decision logic; *how* a stage runs is `Stages`
(devloop/stages.py: plain calls, or Prefect tasks and subflows through the runner the Prefect
layer gives it). Every stage is memoised by its node execution, so a resumed run replays
finished rounds from the ledger without running anything again and continues where it stopped;
task status events are only written when the task moves forward.

Routing: validator fast_lane → the coder fixes the named units next round;
full_replan → the planner re-plans; escalate / a plan that stays inconsistent / an L2
that cannot converge / the same bug active for `non_convergence_rounds` rounds →
`blocked_pending_human` with a reason and an evidence pack. So does a stage that fails with an
error it cannot retry past (`stage_failed`): the task never stays "running" with nobody running it.
A person's stop ends the loop at the next safe point (`stopped`): blocked with `stopped_by_person` and what
was running, or abandoned; a lease taken over ends it at once, writing nothing (the new holder owns the task).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .. import lease as leases
from ..errors import ClassifierBlocked, ErrorCode, GraphLemonError, StopRequested, invalid_param
from ..lifecycle import ACTIVE_BUG
from ..models import BlockedReason, SddPatch, TaskStatus
from ..nodes import node_exec_id
from ..stages.coder import red_units
from ..stages.outcomes import Noted, UnitOutcome, ValidationOutcome
from ..stages.planner import apply_sdd_patch, waves
from ..stages.routing import (
    RoundPlan,
    Step,
    after_human,
    after_integration,
    after_skill_update,
    after_validation,
    stuck_bugs,
)
from ..stages.session import LoopSession
from ..taskboard import DECISION_REASONS, Task
from ..wording import REASON_WORDS, shorten_text, status_words
from .escalation_pack import write_evidence_pack

if TYPE_CHECKING:
    from .stages import Stages

log = logging.getLogger(__name__)
PHASES: dict[str, int] = {"planning": 0, "coding": 1, "integrating": 2, "validating": 3}


class Blocked(Exception):
    """Internal: stop the loop with the task blocked for a human."""

    def __init__(self, reason: BlockedReason, note: str) -> None:
        super().__init__(note)
        self.reason, self.note = reason, note


def run_devloop(session: LoopSession, stages: Stages, *, flow_run_id: str | None = None) -> Task:
    """Run (or resume) one task until done or blocked_pending_human; returns the task."""
    task = session.board.get(session.task_id)
    if task.terminal:
        raise invalid_param(f"task {task.task_id} is already {task.status}; there is nothing to run")
    if task.status == "blocked_pending_human":
        raise GraphLemonError(
            ErrorCode.INVALID_TRANSITION,
            f"task {task.task_id} {status_words(task.status, task.blocked_reason)}; resume it first "
            f"(`graphlemon resume {task.task_id}`)",
        )
    if task.status == "queued":  # a slot is free: start (or continue where a human resumed it)
        session.board.transition(
            task.task_id,
            task.resume_status or "planning",
            loop_round=task.loop_round,
            by="scheduler",
            flow_run_id=flow_run_id,
        )
    try:
        with session.bound():
            _loop(session, stages)
    except Blocked as stop:
        return block(session, stop.reason, stop.note)
    except ClassifierBlocked as exc:
        return block(session, "classifier_blocked", exc.message)
    except GraphLemonError as exc:
        if exc.code == ErrorCode.STOPPED:
            return stopped(session, exc)
        if exc.code == ErrorCode.LEASE_LOST:  # another holder runs the task now: nothing more is written here
            raise
        if exc.code == ErrorCode.BUDGET_EXCEEDED:
            return block(session, "budget_exceeded", exc.message)
        if exc.code == ErrorCode.QUOTA_EXCEEDED:  # the usage-limit wait gave up (REQ-14 failure)
            return block(session, "usage_limit_wait_timeout", exc.message)
        if exc.code == ErrorCode.LEDGER_CORRUPT:
            return block(session, "state_corrupt", exc.message)
        return _stage_failed(session, exc)
    except Exception as exc:  # noqa: BLE001 - the task must not be left "running" with nobody running it
        return _stage_failed(session, exc)
    return session.board.get(session.task_id)


LIVE_NODE = frozenset({"running", "verifying", "reflecting", "retrying", "waiting_for_quota"})


def stopped(session: LoopSession, stop: GraphLemonError) -> Task:
    """A person's stop, served at a safe point: the task is blocked (`stopped_by_person`, resumable) or abandoned,
    the note saying who stopped it, before which step, and which stages had started and not finished (their
    finished steps are kept)."""
    running = sorted(
        f"{n.stage}{' ' + n.unit_id if n.unit_id else ''} (round {n.loop_round}, attempt {n.attempt}, {n.status})"
        for n in session.nodes.for_task(session.task_id) if n.status in LIVE_NODE
    )  # fmt: skip
    note = f"{stop.message}; " + (f"started, not finished: {', '.join(running)}" if running else "no stage was running")
    if stop.context.get("then") == "abandon":
        task = session.board.transition(session.task_id, "abandoned", note=note[:2000], by=str(stop.context["by"]))
        session.timeline("abandoned", note[:300])
        return task
    return block(session, "stopped_by_person", f"{note}. Finished work is kept: `graphlemon resume "
                 f"{session.task_id}` continues from there")  # fmt: skip


def _stage_failed(session: LoopSession, exc: Exception) -> Task:
    """An error no stage could retry past: the task waits for a person with the error as evidence. A stop a person
    asked for while that step ran is what ends the run: it is served, the error named in its note."""
    known = isinstance(exc, GraphLemonError)
    log.error("task %s: a stage failed: %s", session.task_id, exc, exc_info=None if known else exc)  # a bug: its trace
    code, text = (exc.code, exc.message) if known else (type(exc).__name__, str(exc))
    try:
        leases.check(session.ledger, session.task_id, None, f"the next step (the step in flight ended with {code}: "
                     f"{text[:300]})")  # fmt: skip
    except StopRequested as stop:
        return stopped(session, stop)
    return block(session, "stage_failed", f"{code}: {text}")


def _loop(session: LoopSession, stages: Stages) -> None:
    """Rounds until done. A block a human already resumed (replayed after a restart) continues instead."""
    notes = session.board.get(session.task_id).decision_resumes
    used = 0
    plan = RoundPlan()
    while True:
        try:
            step = _round(session, stages, plan)
        except Blocked as stop:
            if stop.reason not in DECISION_REASONS or used >= len(notes):
                raise
            active = sorted(
                {b.unit_id for b in session.bugs.list(task_id=session.task_id) if b.status in ACTIVE_BUG and b.unit_id}
            )
            step = after_human(
                stop.reason, stop.note, notes[used], plan.loop_round, active, session.unit_files.units().ids()
            )
            used += 1
        if step.action == "done":
            return
        _route_once(session, plan.loop_round, step.summary)
        plan = step.plan


def _round(session: LoopSession, stages: Stages, plan: RoundPlan) -> Step:
    r = plan.loop_round
    if plan.need_plan:
        advance(session, "planning", r)
        planned = stages.plan(r, plan.plan_feedback)
        if not planned.ok:
            raise Blocked("plan_inconsistent", "the plan stayed inconsistent: " + "; ".join(planned.violations[:5]))
    advance(session, "coding", r)
    outcomes = code_in_waves(session, stages, r, None if plan.need_plan else plan.units, plan.feedback)
    if all(o.green for o in outcomes):
        advance(session, "integrating", r)
        integrate(session, stages, r)
    advance(session, "validating", r)
    result = stages.validate(r)
    limit = session.config.non_convergence_rounds
    step = after_validation(result, r, session.config.max_loop_rounds, attributed_in_a_row(session, r, limit), limit)
    if step.action == "skill_update":  # REQ-08: the SkillEditor changes the blamed skill, the gate decides
        step = after_skill_update(stages.update_skill(r), result, r, session.config.max_loop_rounds)
    if step.action == "block":
        raise Blocked(step.reason, step.summary)
    if step.action == "done":
        finish(session, r)
    return step


def _route_once(session: LoopSession, loop_round: int, summary: str) -> None:
    """A `routed` timeline event per round, not repeated when a resumed run replays the round."""
    session.timeline_once("routed", summary, ref=f"route-r{loop_round}")


def code_in_waves(
    session, stages: Stages, loop_round: int, only: list[str] | None, feedback: dict[str, str]
) -> list[UnitOutcome]:
    units = session.unit_files.units()
    wanted = None if only is None else set(only) | set(red_units(session))  # plus units not yet green (a later wave)
    outcomes: list[UnitOutcome] = []
    for wave in waves(units, wanted):
        outcomes += stages.code_units(wave, loop_round, feedback)
        if not all(o.green for o in outcomes):
            break  # later waves depend on a red unit: let the validator attribute it first
    return outcomes


def integrate(session: LoopSession, stages: Stages, loop_round: int) -> None:
    """L2: integration runs until they pass, each failure judged by the BugTriager and routed (`after_integration`)."""
    reruns = 0
    for attempt in range(1, session.config.max_integration_attempts + 1):
        result = stages.integrate(loop_round, attempt)
        if result.action == "triage":
            result = stages.triage(loop_round, attempt, result.run_id)
        step = after_integration(result, attempt, session.config.max_integration_attempts, reruns)
        if step.action == "pass":
            return
        if step.action == "block":
            raise Blocked(step.reason, step.note)
        reruns += step.action == "rerun"
        if step.action == "patch_sdd" and result.sdd_patch is not None:
            _patch(session, result.sdd_patch, loop_round, attempt)
        if step.action in ("patch_sdd", "reset_units") and result.affected_units:
            note = f"integration {result.run_id}: {result.root_cause}"
            outcomes = stages.code_units(
                result.affected_units, loop_round, dict.fromkeys(result.affected_units, note), pass_tag=f"l2a{attempt}"
            )
            if not all(o.green for o in outcomes):
                return  # the validator attributes the red unit


def _patch(session: LoopSession, patch: SddPatch, loop_round: int, attempt: int) -> None:
    """The BugTriager's SDD patch, applied once (a resumed run finds it recorded)."""

    def apply() -> Noted:
        artifact_id = apply_sdd_patch(session, patch, reason=f"triage patch, round {loop_round}")
        return Noted(summary=f"{patch.target_section}: {patch.text[:120]} ({artifact_id})")

    nid = node_exec_id(session.task_id, "bug-triager", loop_round=loop_round, attempt=attempt)
    marker = f"sdd patch r{loop_round} a{attempt}"
    noted = session.memo(nid, "sdd-patch", Noted, apply)
    session.timeline_once("sdd_patched", noted.summary, ref=marker)


def attributed_in_a_row(session: LoopSession, loop_round: int, limit: int) -> list[str]:
    """Bugs the validator attributed in each of the last `limit` rounds (REQ-05), from the recorded outcomes."""
    first = loop_round - limit + 1
    if first < 0:
        return []
    per_round = []
    for r in range(first, loop_round + 1):
        stored = session.load_outcome(node_exec_id(session.task_id, "validator", loop_round=r), ValidationOutcome)
        per_round.append({a.bug_id for a in stored.attributions} if stored else set())
    return stuck_bugs(per_round, limit)


def finish(session: LoopSession, loop_round: int) -> None:
    merged, held = None, None
    if session.config.merge_into_main:
        result = session.worktrees.merge_into(session.project.root)
        merged, held = result.commit, result.held
    where = (
        f"merged into the main worktree ({merged[:10]})"
        if merged
        else f"on branch {session.worktrees.branch('_integration')}"
    )
    if held is not None:
        where = f"not merged into your branch: {held.says()}; {where}"
        session.timeline_once("merge_held", where[:2000], ref=held.kind)
    session.board.transition(session.task_id, "done", loop_round=loop_round, note=f"validated; {where}")
    session.timeline("done", f"task done in round {loop_round}; {where}", ref=merged)  # ref: the merge commit


def _blocked_words(reason: str, note: str) -> str:
    """"needs you: out of budget"; "needs you" alone when the note starts by saying the reason ("stopped by a person
    (graphlemon stop) before …": never "stopped by a person: stopped by a person")."""
    said = REASON_WORDS.get(reason)
    return status_words("blocked_pending_human", None if said and note.startswith(said) else reason)


def block(session: LoopSession, reason: BlockedReason, note: str) -> Task:
    """Block the task with its reason and an evidence pack. When the state folder cannot take the block (a full
    disk, a read-only ledger) the error says so plainly: what was recorded, why, and that resume continues."""
    task = session.board.get(session.task_id)
    try:
        if task.status != "blocked_pending_human":
            task = session.board.transition(
                session.task_id, "blocked_pending_human", blocked_reason=reason, note=note[:2000]
            )
        write_evidence_pack(session, reason, note)
        # whole words (a command in the note is never cut in the middle); the whole note is in the evidence pack
        session.timeline("escalated", f"{_blocked_words(reason, note)}: {shorten_text(note, 400)}")
    except GraphLemonError as exc:
        if exc.code != ErrorCode.LEDGER_WRITE_FAILED:
            raise
        done = "is blocked but its evidence pack is missing" if task.status == "blocked_pending_human" else (
            f"could not be marked blocked and stays {task.status}")  # fmt: skip
        raise GraphLemonError(
            exc.code, f"{exc.message}. Task {session.task_id} {done} ({reason}: {note[:300]}). The ledger keeps "
            f"whole records only: free the space or make it writable, then `graphlemon resume {session.task_id}`",
            task_id=session.task_id, **exc.context,
        ) from None  # fmt: skip
    return task


def advance(session: LoopSession, status: TaskStatus, loop_round: int) -> None:
    """Move the task forward to (status, round); replaying an earlier point writes nothing."""
    task = session.board.get(session.task_id)
    current = (task.loop_round, PHASES.get(task.status, -1))
    if task.status in PHASES and current >= (loop_round, PHASES[status]):
        return
    session.board.transition(session.task_id, status, loop_round=loop_round)
