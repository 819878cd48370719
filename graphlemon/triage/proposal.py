"""What the triager and the agent path share: a proposal (a verdict and what it cost) and the seed's fallback."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..models import ExecutorName
from .cite import Citer
from .findings import Finding, describe
from .run_context import RunContext
from .verdict import FALLBACK_CONFIDENCE, TriageVerdict, Violation


@dataclass
class Proposal:
    """A verdict that passed its self-check (or the fallback), and what it cost."""

    verdict: TriageVerdict
    executor: ExecutorName
    tokens_used: int = 0
    rule: str = ""
    hints: list[str] = field(default_factory=list)
    rejected: list[list[Violation]] = field(default_factory=list)
    fallback_reason: str | None = None
    findings: list[Finding] = field(default_factory=list)  # the rules' findings about the run


def fallback(ctx: RunContext, reason: str) -> TriageVerdict:
    """When a proposal fails its self-check twice, a minimal spec_ambiguous verdict at confidence 0.3."""
    failure = ctx.result.failures[0]
    return TriageVerdict(
        run_id=ctx.run_id,
        root_cause=(
            f"case {failure.case} step {failure.step} receives {describe(failure.got)} instead of {describe(failure.expected)}; "
            f"the proposed triage failed its self-check ({reason[:300]}), so a person must attribute it"
        ),
        category="spec_ambiguous",
        confidence=FALLBACK_CONFIDENCE,
        evidence=Citer(ctx).failure(failure),
        l3_question=f"Which unit is at fault for case {failure.case} step {failure.step}, and should the SDD change?",
    )
