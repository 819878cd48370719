"""BugTriager stage (loop L2): judge a failed integration run; its verdict becomes the L2 action.

The verdict (docs/triage.md) maps to an action by `routing.triage_action`: infra_flake → rerun,
contract_mismatch + will_auto_apply → patch the SDD and reset the affected units, impl_bug → reset
the affected units, spec_ambiguous or low confidence → escalate. Each failed case opens a bug.
"""

from __future__ import annotations

from pathlib import Path

from ..models import TriageRecord
from ..nodes import node_exec_id
from ..triage.rundir import IntegrationFailure, IntegrationResult
from .outcomes import IntegrationOutcome
from .routing import triage_action
from .session import LoopSession


def triage_integration(session: LoopSession, loop_round: int, attempt: int, run_id: str) -> IntegrationOutcome:
    """The BugTriager node of a failed integration run: its verdict, the bugs it opens, and the L2 action."""
    nid = node_exec_id(session.task_id, "bug-triager", loop_round=loop_round, attempt=attempt)
    stored = session.enter_node(nid, IntegrationOutcome, stage="bug-triager", loop_round=loop_round, attempt=attempt)
    if stored is not None:
        return stored
    result = IntegrationResult.model_validate_json(
        (session.project.state_dir / "integration" / "runs" / run_id / "result.json").read_text(encoding="utf-8")
    )
    outcome = _triage(session, run_id, result.failures, session.worktrees.integration().path, nid)
    ref = session.save_outcome(nid, outcome)
    session.nodes.transition(nid, "done", output_ref=ref)
    session.timeline(
        "triaged", f"round {loop_round} attempt {attempt}: {outcome.category} -> {outcome.action}", ref=run_id
    )
    return outcome


def _triager(session: LoopSession):
    """The executor that triages: a model backend, or a scripted playbook that scripts the bug-triager (labelled
    scripted, as all its output); else None, the rules."""
    executor = session.executor
    if session.config.executor != "scripted" or executor.plays("bug-triager"):
        return executor
    return None


def _triage(
    session: LoopSession, run_id: str, failures: list[IntegrationFailure], workdir: Path, nid: str
) -> IntegrationOutcome:
    """The BugTriager's verdict becomes the L2 action (`routing.triage_action`)."""
    from ..triage import failure_signature, triage_run

    verdict = triage_run(
        session.project, run_id, executor=_triager(session),
        task_id=session.task_id, node_exec_id=nid, code_root=workdir,
    ).record  # fmt: skip
    category = verdict.category
    action = triage_action(category, verdict.will_auto_apply)
    for f in failures:
        session.bugs.open(
            title=f"integration case {f.case} failed: {f.message.splitlines()[0][:200] if f.message else category}",
            source="integration", unit_id=(verdict.affected_units or f.involves or [None])[0], test_name=f"case:{f.case}",
            run_id=run_id, task_id=session.task_id, detail=verdict.root_cause, category=category, severity="high",
            affected_units=verdict.affected_units, signature=failure_signature(f), by="integrator",
        )  # fmt: skip
    return IntegrationOutcome(
        ok=False, run_id=run_id, action=action, category=category, confidence=verdict.confidence,  # type: ignore[arg-type]
        affected_units=verdict.affected_units, sdd_patch=verdict.proposed_sdd_patch, root_cause=_note(verdict, run_id),
        failures=len(failures),
    )  # fmt: skip


def _note(record: TriageRecord, run_id: str) -> str:
    """The verdict's root cause; for an SDD patch that waits for a person, where to approve it."""
    if record.category != "contract_mismatch" or record.proposed_sdd_patch is None or record.will_auto_apply:
        return record.root_cause
    return (f"{record.root_cause} — its SDD patch waits for a person ({record.patch_review}): approve it on the "
            f"console's /patches page or with `graphlemon approve-patch --run {run_id}`, then resume")  # fmt: skip
