"""triage_run: one integration run in, one verified triage.json and one ledger record out.

    load the run → how earlier triages of the same failure bear on it (history.retriage: fresh, without the
    environment hypothesis, or escalate) → propose a verdict (the decider, or the bug-triager role through an
    Executor with one retry) → self-check → on failure the fallback (spec_ambiguous, 0.3) → calibrate → the
    patch gate for a contract patch → archive an existing triage.json under history/ → write triage.json →
    append the TriageRecord.

Nothing else is written: not the SDD, not the bugs (the LoopController acts on
the verdict), not the units.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..bugs import Bug
from ..models import TriageRecord, utcnow
from ..project import ProjectHandle
from ..redact import write_redacted
from .agent import agent_proposal
from .calibration import calibrate, may_auto_apply
from .cite import Citer
from .decider import classify
from .findings import describe
from .history import behaviour_digest, failure_signature, retriage
from .patch_gate import patch_review, recode_review
from .proposal import Proposal, fallback
from .run_context import RunContext, load_run
from .verdict import TodoItem, TriagerOutput, TriageVerdict, Violation
from .verdict_selfcheck import self_check, triage_json_rel

UNCHECKED_PATCH = 0.7  # a contract_mismatch whose SDD patch waits for a person
WORKFLOW = (
    ("step-001", "collect the four kinds of evidence (Integrator output, SDD, code, history)"),
    ("step-002", "classify with the decision flow, then review the category"),
    ("step-003", "settle affected_units from involves and the root cause"),
    ("step-004", "draft proposed_sdd_patch (contract_mismatch only)"),
    ("step-005", "write triage.json after checking every evidence quote"),
)


@dataclass
class TriageOutcome:
    output: TriagerOutput
    record: TriageRecord
    rule: str
    hints: list[str]
    rejected: list[list[Violation]]

    def merged(self) -> dict[str, Any]:
        """What `graphlemon triage --json` prints: triage.json's fields with the TriagerOutput on top."""
        record = self.record.model_dump(mode="json", exclude={"kind", "schema_version"})
        return {**record, **self.output.model_dump(mode="json"), "rule": self.rule, "hints": self.hints}


def triage_run(
    project: ProjectHandle,
    run_id: str,
    *,
    executor: Any | None = None,
    task_id: str | None = None,
    node_exec_id: str | None = None,
    code_root: Path | str | None = None,
) -> TriageOutcome:
    """Triage integration run `run_id`: deterministic without an executor, the bug-triager role with one.

    `code_root`: where the units' code was merged for this run (the integration worktree), if not the project root.
    """
    started = time.monotonic()
    ctx = load_run(project, run_id, code_root=code_root)
    failure = ctx.result.failures[0]
    signature, behaviour = failure_signature(failure), behaviour_digest(failure)
    mode, earlier = retriage(ctx.prior_triage, ctx.bugs, signature, run_id, behaviour)
    without = frozenset({"environment"}) if mode == "without_environment" else frozenset()
    if executor is None:
        proposal = deterministic_proposal(ctx, without)
    else:
        proposal = agent_proposal(
            project, ctx, executor, task_id=task_id or ctx.result.task_id, node_exec_id=node_exec_id, without=without
        )
    verdict = proposal.verdict
    again = mode == "escalate" or (mode == "without_environment" and verdict.category == "infra_flake")
    if earlier is not None and again and proposal.fallback_reason is None and verdict.category != "spec_ambiguous":
        verdict = second_triage(ctx, verdict, earlier)
        proposal.rule = "spec:second_triage"
    violations, report = self_check(verdict, root=ctx.root, run_id=run_id, unit_ids=ctx.units.ids(), todolist=_done())
    if violations:
        proposal.rejected.append(violations)
        proposal.fallback_reason = proposal.fallback_reason or "; ".join(
            f"#{v.item} {v.detail}" for v in violations[:3]
        )
        verdict = fallback(ctx, proposal.fallback_reason)
        violations, report = self_check(
            verdict, root=ctx.root, run_id=run_id, unit_ids=ctx.units.ids(), todolist=_done()
        )
    is_fallback = proposal.fallback_reason is not None
    calibration = calibrate(verdict.confidence, report, ctx.run_rel, verdict.category)
    if calibration.reason:
        proposal.hints.append(f"confidence lowered to {calibration.confidence}: {calibration.reason}")
    verdict = verdict.model_copy(update={"confidence": calibration.confidence})
    verified = report is not None and report.ok
    review = patch_review(ctx, verdict, proposal.findings) if verdict.category == "contract_mismatch" else None
    if review:  # the patch's premise (the SDD's one statement, confirmed) is not verified: below auto-apply
        proposal.hints.append(f"the SDD patch waits for a person: {review}")
        verdict = verdict.model_copy(update={"confidence": min(verdict.confidence, UNCHECKED_PATCH)})
    recode = recode_review(verdict, proposal.findings) if executor and verdict.category == "impl_bug" else None
    if recode:  # the agent's reading alone, or against the rules': a person decides the re-code
        proposal.hints.append(f"the re-code waits for a person: {recode}")
        verdict = verdict.model_copy(update={"confidence": min(verdict.confidence, UNCHECKED_PATCH)})
    record = TriageRecord(
        **verdict.model_dump(include={"root_cause", "category", "affected_units", "proposed_sdd_patch", "confidence",
                                      "evidence", "l3_question"}),
        run_id=run_id, task_id=task_id or ctx.result.task_id, evidence_verified=verified, failure_signature=signature,
        will_auto_apply=may_auto_apply(verdict.category, calibration, is_fallback) and not review and not recode,
        fallback=is_fallback, fallback_reason=proposal.fallback_reason, executor=proposal.executor,
        triage_ref=triage_json_rel(run_id), duration_ms=int((time.monotonic() - started) * 1000),
        tokens_used=proposal.tokens_used, method="rules" if executor is None else "agent", behaviour=behaviour,
        patch_review=review, retriage=None if mode == "fresh" else mode,
    )  # fmt: skip
    write_triage(project, ctx, record)
    output = TriagerOutput(
        **record.model_dump(include={"run_id", "category", "confidence", "affected_units", "will_auto_apply",
                                     "evidence_verified", "duration_ms", "tokens_used", "executor", "method"}),
        ok=not is_fallback, triage_ref=record.triage_ref or "", fallback=is_fallback,
    )  # fmt: skip
    return TriageOutcome(output, record, proposal.rule, proposal.hints, proposal.rejected)


def deterministic_proposal(ctx: RunContext, without: frozenset[str] = frozenset()) -> Proposal:
    finding = classify(ctx, without=without)
    verdict = TriageVerdict(
        run_id=ctx.run_id, root_cause=finding.root_cause, category=finding.category, affected_units=finding.affected,
        proposed_sdd_patch=finding.patch, confidence=finding.confidence, evidence=finding.evidence,
        l3_question=finding.l3_question,
    )  # fmt: skip
    return Proposal(verdict, "none", rule=finding.rule, hints=finding.hints, findings=finding.facts or [finding])


def second_triage(ctx: RunContext, verdict: TriageVerdict, earlier: TriageRecord | Bug) -> TriageVerdict:
    """The same failure came back after a verdict was acted on, so a second verdict escalates instead of looping."""
    failure = ctx.result.failures[0]
    cite = Citer(ctx)
    before = earlier.category
    where = f"run {earlier.run_id}"
    evidence = cite.failure(failure)
    rel = triage_json_rel(earlier.run_id or "")
    ref = f'"failure_signature": "{failure_signature(failure)}"'
    at = cite.find(rel, ref) if (ctx.root / rel).is_file() else None
    if at is None:
        rel, ref = ".graphlemon/bugs.ndjson", failure_signature(failure)
        at = cite.find(rel, ref) if (ctx.root / rel).is_file() else None
    if at is not None:
        evidence.append(cite.line(rel, at, ref))
    return TriageVerdict(
        run_id=ctx.run_id,
        root_cause=(
            f"case {failure.case} step {failure.step} still receives {describe(failure.got)} instead of {describe(failure.expected)} "
            f"after {where} was triaged as {before}; this triage would say {verdict.category} "
            f"({', '.join(verdict.affected_units) or 'no unit'}), but a second triage of the same failure escalates instead of looping"
        ),
        category="spec_ambiguous",
        confidence=0.45,
        evidence=[e for e in evidence if e],
        l3_question=f"The {before} verdict of {where} did not fix case {failure.case}: is the SDD for this behaviour right? ({verdict.root_cause[:200]})",
    )


def write_triage(project: ProjectHandle, ctx: RunContext, record: TriageRecord) -> Path:
    """Archive an existing triage.json under history/, write the new one atomically, append the ledger record."""
    path = ctx.run_dir / "triage.json"
    if path.exists():
        history = ctx.run_dir / "history"
        history.mkdir(exist_ok=True)
        stamp = utcnow().strftime("%Y%m%dT%H%M%S%fZ")
        os.replace(path, history / f"triage-{stamp}.json")
    tmp = ctx.run_dir / f".triage.json.{os.getpid()}.tmp"
    body = record.model_dump(mode="json", exclude={"kind", "schema_version"})
    write_redacted(tmp, json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    project.ledger.append(record)
    return path


def _done() -> list[TodoItem]:
    return [TodoItem(id=i, title=t, status="done") for i, t in WORKFLOW]


def markdown(record: TriageRecord) -> str:
    """The verdict as markdown (the Prefect UI artifact and escalation notes)."""
    lines = [
        f"# Triage of {record.run_id}: {record.category} ({record.confidence:.2f})",
        "",
        f"**Root cause.** {record.root_cause}",
        "",
        f"- affected units: {', '.join(record.affected_units) or '-'}",
        f"- will_auto_apply: {str(record.will_auto_apply).lower()}; evidence_verified: {str(record.evidence_verified).lower()}",
        f"- method: {record.method}; executor: {record.executor}{' (fallback: ' + (record.fallback_reason or '') + ')' if record.fallback else ''}",
    ]
    if record.proposed_sdd_patch:
        p = record.proposed_sdd_patch
        lines += ["", f"**Proposed SDD patch** (`{p.op}` `{p.target_section}`): {p.text}"]
    if record.l3_question:
        lines += ["", f"**Question for a person.** {record.l3_question}"]
    lines += ["", "**Evidence**", "", *(f"- `{e}`" for e in record.evidence)]
    return "\n".join(lines) + "\n"
