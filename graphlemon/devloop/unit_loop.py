"""The L1 unit loop (REQ-03): coder turn → tester stage → (hints, bug ids) → coder retry, in the unit's worktree.

One node execution per unit and round (`ne-<task>-coder-<unit>-r<round>`) whose
status cycles running → reflecting → retrying → running until the tests are green
(done, merged into the integration branch) or the attempts run out (blocked,
bubbling up to the org loop). Each attempt's coder and tester outcomes are
persisted, so a resumed flow continues at the attempt it was in, without
repeating a finished turn.
"""

from __future__ import annotations

from ..errors import ErrorCode, GraphLemonError
from ..stages.coder import CoderTurn, prior_attempts, unit_node_id
from ..stages.outcomes import UnitOutcome
from ..stages.session import LoopSession
from ..stages.tester import TesterOutput, crash_reason, hints_for_coder


def run_unit_loop(
    session: LoopSession, stages, unit_id: str, loop_round: int, feedback: str | None = None, pass_tag: str = ""
) -> UnitOutcome:
    """L1 for one unit through `stages.coder_turn` / `stages.test_unit` (domain calls or Prefect tasks);
    `pass_tag` distinguishes an L2 reset of the unit within the same round."""
    nid = unit_node_id(session.task_id, unit_id, loop_round, pass_tag)
    node = session.nodes.find(nid)
    stored = session.load_outcome(nid, UnitOutcome)  # the record says the unit loop finished, whatever the node says
    if stored is not None:
        if node is not None and node.status not in ("done", "blocked"):  # killed between the record and the status
            session.nodes.transition(nid, "done" if stored.green else "blocked", attempt=stored.last_attempt)
        return stored
    first = prior_attempts(session, unit_id, nid) + 1
    worktree = session.worktrees.unit(unit_id, sync=node is None)
    if node is None:
        attempt = first
        session.nodes.transition(
            nid, "running", task_id=session.task_id, stage="coder", unit_id=unit_id, attempt=attempt,
            loop_round=loop_round, git_worktree_ref=worktree.branch,
        )  # fmt: skip
    else:
        attempt = node.attempt
        session.enter_node(nid, UnitOutcome, stage="coder", loop_round=loop_round)  # back to running, attempt kept
    hints = (_hints_after(session, nid, attempt - 1) if attempt > first else None) or feedback
    while True:
        coder = stages.coder_turn(nid, unit_id, attempt, first, loop_round, hints)
        try:
            tested = stages.test_unit(nid, unit_id, attempt, first, loop_round, coder.commit)
        except GraphLemonError as exc:
            if exc.code != ErrorCode.WORKTREE_TAMPERED:
                raise
            return _tampered(session, nid, unit_id, attempt, first, exc)
        if tested.ok:
            merged = session.worktrees.merge_into_integration(unit_id, green_merge_message(unit_id, loop_round))
            outcome = UnitOutcome(
                unit_id=unit_id, green=True, attempts=attempt - first + 1, last_attempt=attempt, run_id=tested.run_id,
                commit=merged,
            )  # fmt: skip
            ref = session.save_outcome(nid, outcome)
            session.nodes.transition(nid, "done", attempt=attempt, output_ref=ref)
            session.timeline("unit_green", f"{unit_id}: green at attempt {attempt}{_this_round(outcome.attempts, first)}",
                             unit_id=unit_id, ref=nid)  # fmt: skip
            return outcome
        hints = coder.claims_note() + hints_for_coder(tested, crash_reason(session, tested))
        session.nodes.transition(nid, "reflecting", attempt=attempt, error=hints[:2000])
        if attempt - first + 1 >= session.config.max_unit_attempts:
            outcome = UnitOutcome(
                unit_id=unit_id, green=False, attempts=attempt - first + 1, last_attempt=attempt, run_id=tested.run_id,
                open_bug_ids=sorted({f.bug_id for f in tested.failures if f.bug_id} | set(tested.bugs_opened)),
                hints=[f.hint for f in tested.failures], error="retry limit reached",
            )  # fmt: skip
            ref = session.save_outcome(nid, outcome)
            session.nodes.transition(
                nid, "blocked", attempt=attempt, error_code="RETRY_LIMIT", error=hints[:2000], output_ref=ref
            )
            session.timeline("unit_blocked", f"{unit_id}: still red at attempt {attempt}"
                             f"{_this_round(outcome.attempts, first)}", unit_id=unit_id, ref=nid)  # fmt: skip
            return outcome
        attempt += 1
        session.nodes.transition(nid, "retrying", attempt=attempt)
        session.nodes.transition(nid, "running", attempt=attempt)


def _hints_after(session: LoopSession, nid: str, attempt: int) -> str | None:
    """What the coder was told after `attempt` (from its recorded turn and test run): a node resumed at the next
    attempt (after a stop or a kill) gives its coder the same hints an uninterrupted run would."""
    coder = session.load_outcome(nid, CoderTurn, f"a{attempt}-coder")
    tested = session.load_outcome(nid, TesterOutput, f"a{attempt}-tester")
    if coder is None or tested is None:
        return None
    return coder.claims_note() + hints_for_coder(tested, crash_reason(session, tested))


def green_merge_message(unit_id: str, loop_round: int) -> str:
    return f"graphlemon: {unit_id} green in round {loop_round}"


def _tampered(
    session: LoopSession, nid: str, unit_id: str, attempt: int, first: int, exc: GraphLemonError
) -> UnitOutcome:
    """The unit's work tree is not what GraphLemon made, or its green run was not of the tests its branch holds:
    the unit is blocked with that evidence for a person, nothing of it merged."""
    outcome = UnitOutcome(
        unit_id=unit_id, green=False, attempts=attempt - first + 1, last_attempt=attempt, error=exc.message[:2000]
    )
    ref = session.save_outcome(nid, outcome)
    session.nodes.transition(
        nid, "blocked", attempt=attempt, error_code=str(exc.code), error=exc.message[:2000], output_ref=ref
    )
    session.timeline("unit_blocked", f"{unit_id}: {exc.message[:500]}", unit_id=unit_id, ref=nid)
    return outcome


def _this_round(attempts: int, first: int) -> str:
    """Attempts are numbered across the task's rounds (the node, the log and the tester say `attempt 3`); a unit that
    began this round at a later attempt says how many of them were this round's."""
    return "" if first == 1 else f" ({attempts} in this round)"
