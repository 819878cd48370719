"""The decider: findings in, one verdict out (docs/triage.md, "The decider and the mechanisms it keeps").

A kept finding (`KEPT`: right >= 95 % on sets its rules were not shaped on) with every finding agreeing on the
category and units → that verdict; else a suggesting one (`SUGGESTING`: 50-95 %) with every finding agreeing →
its category, suggested, below auto-apply; else spec_ambiguous at FACTS_ONLY with the findings for a person.
Environment findings count only in the environment's voice, at or before the failing step, and not once the
environment hypothesis was dropped (`without={"environment"}`: a re-run failed the same way).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import TriageCategory
from .cite import Citer
from .findings import Finding, describe, squash
from .mechanisms import findings_of
from .run_context import RunContext

FACTS_ONLY = 0.4  # the seed: an unplaced failure goes to a person at ≤ 0.4
ENVIRONMENT_VOICES = frozenset({"runner", "os", "service"})  # who may speak for the environment
ENVIRONMENT_TIMES = frozenset({"before", "at"})  # and when, relative to the failing step
VETO = True  # a finding that points to another verdict, kept or not, sends the failure to a person


@dataclass(frozen=True)
class Measured:
    category: TriageCategory
    right: int  # verdicts of the mechanism that were right on sets it was not shaped on
    fired: int  # of its verdicts there
    sets: str  # which sets (each at the commit it was written against; holdout on TODAY's rules)

    @property
    def precision(self) -> float:
        return self.right / self.fired


KEEP_PRECISION = 0.95  # a mechanism decides (and may reach auto-apply) only at this precision on unseen sets
SUGGEST_PRECISION = 0.5  # below it a mechanism is more often wrong than right: it does not even suggest
SUGGESTED = 0.6  # the most a suggestion claims, whatever its mechanism measured

# Measured with benchmarks/bench_triage.py --mechanisms: each fresh set run through the rules at the commit it was
# written against (unseen), plus the held-out set; precision = right / fired. red45b (issue 45's second red team,
# 40 scenarios at 8febc7b) took impl:uncaught, impl:status_differs, impl:field_missing, impl:limit_violated,
# impl:call, contract:status_differs, infra:dns and infra:backing_service below the bar; red45c (the third, 38 at
# 10a53a6) impl:call_formula, contract:path_differs, impl:status_unproduced and three environment kinds; red45d (the
# fourth, 43 at 7e79fcc5) the last two kept ones, infra:out_of_resources and infra:missing_dependency.
MEASURED: dict[str, Measured] = {
    "infra:port_in_use": Measured("infra_flake", 6, 8, "final, blind, blind2, blind3, holdout, red45c (1/2), red45d (0/1)"),
    "infra:disk_full": Measured("infra_flake", 6, 8, "after, last, blind, blind3, blind4, red45b, red45c (0/1), red45d (0/1)"),
    "infra:dns": Measured("infra_flake", 5, 8, "before, blind, blind3, blind4, holdout, red45b (0/1), red45c (0/1), red45d (0/1)"),
    "infra:missing_dependency": Measured("infra_flake", 4, 9, "blind, blind2, holdout, red45d (1/6)"),
    "infra:out_of_resources": Measured("infra_flake", 2, 19, "holdout, red45d (1/18)"),
    "infra:backing_service": Measured("infra_flake", 5, 8, "before, after, last, blind, blind4, red45b (0/1), red45c (0/1)"),
    "infra:external_service": Measured("infra_flake", 1, 3, "blind5, red45c (0/2)"),
    "impl:uncaught": Measured("impl_bug", 8, 13, "blind, blind3, red45b (4/9), red45c (1/1), red45d (1/1)"),
    "impl:status_differs": Measured("impl_bug", 4, 6, "after, final, last, red45b (1/3)"),
    "impl:field_missing": Measured("impl_bug", 4, 6, "after, final, red45b (1/3), red45c (1/1)"),
    "impl:limit_violated": Measured("impl_bug", 4, 6, "after, last, blind3, holdout, red45b (0/2)"),
    "impl:status_unproduced": Measured("impl_bug", 1, 2, "holdout, red45c (0/1)"),
    "impl:call": Measured("impl_bug", 1, 3, "holdout (with impl:call_formula), red45b (0/2)"),
    "impl:call_formula": Measured("impl_bug", 2, 12, "holdout, red45c (1/11)"),
    "contract:status_differs": Measured("contract_mismatch", 8, 13, "final, last, blind (2), blind2, blind3, holdout (2), red45b (0/3), red45d (0/2)"),
    "contract:field_missing": Measured("contract_mismatch", 5, 8, "after, blind, blind3, final, holdout, last"),
    "contract:path_differs": Measured("contract_mismatch", 9, 12, "after, final, last, blind, blind2, red45b, red45c (2/5), red45d (1/1)"),
}  # fmt: skip
KEPT = {rule: m for rule, m in MEASURED.items() if m.precision >= KEEP_PRECISION}
SUGGESTING = {rule: m for rule, m in MEASURED.items() if SUGGEST_PRECISION <= m.precision < KEEP_PRECISION}


def admissible(f: Finding, without: frozenset[str], among: dict[str, Measured] = KEPT) -> bool:
    """A finding the decider may decide (or suggest) with: a mechanism `among` those given, an environment finding
    only in the environment's voice."""
    if f.rule not in among:
        return False
    if f.category == "infra_flake":
        said = f.said[0] if f.said else None
        voiced = said is not None and said.voice in ENVIRONMENT_VOICES and said.when in ENVIRONMENT_TIMES
        return voiced and "environment" not in without
    return True


def classify(ctx: RunContext, *, without: frozenset[str] = frozenset()) -> Finding:
    """Triage the first failure of the run (failures[0]; the others usually follow from it)."""
    failure = ctx.result.failures[0]
    findings = findings_of(ctx, failure)
    verdict = decide(ctx, findings, without)
    base = Citer(ctx).failure(failure)
    verdict.evidence = list(dict.fromkeys(x for x in [*base, *verdict.evidence] if x))
    verdict.hints = [*ctx.notes, *verdict.hints]
    if "environment" in without:
        verdict.hints.append("environment hypothesis dropped: an earlier infra_flake re-run failed the same way")
    if len(ctx.result.failures) > 1:
        verdict.hints.append(
            f"{len(ctx.result.failures) - 1} more failure(s) in this run; the verdict is for the first ({failure.case})"
        )
    verdict.confidence = round(min(max(verdict.confidence, 0.05), 0.97), 2)
    return verdict


def decide(ctx: RunContext, findings: list[Finding], without: frozenset[str] = frozenset()) -> Finding:
    kept = [f for f in findings if admissible(f, without)]
    dropped = "environment" in without
    voters = findings if VETO else kept
    pointing = {
        (f.category, tuple(sorted(f.affected))) for f in voters if not (dropped and f.category == "infra_flake")
    }
    if kept and len(pointing) == 1:
        best = max(kept, key=lambda f: f.confidence)
        others = [e for f in kept if f is not best for e in f.evidence]
        best.evidence = [*best.evidence, *others]
        best.hints = [*best.hints, *(f"fact: {_fact(f)}" for f in findings if f not in kept)]
        best.facts = findings
        return best
    suggesting = [f for f in findings if admissible(f, without, SUGGESTING)]
    if not kept and suggesting and len(pointing) == 1:
        return suggestion(findings, max(suggesting, key=lambda f: f.confidence))
    return facts_only(ctx, findings, disagree=len(pointing) > 1)


def suggestion(findings: list[Finding], best: Finding) -> Finding:
    """A mechanism below the bar, every finding agreeing: its category at the precision it measured, for a person."""
    measured = MEASURED[best.rule]
    best.confidence = min(best.confidence, SUGGESTED, round(measured.precision, 2))
    best.hints = [
        f"suggested, not decided: {best.rule} was right {measured.right} of {measured.fired} times on sets it was "
        f"not shaped on (the decider keeps only mechanisms right >= {KEEP_PRECISION:.0%}); "
        + ("the one re-run checks it" if best.category == "infra_flake" else "a person confirms"),
        *best.hints,
        *(f"fact: {_fact(f)}" for f in findings if f is not best),
    ]
    best.facts = findings
    return best


def facts_only(ctx: RunContext, findings: list[Finding], disagree: bool = False) -> Finding:
    """No kept mechanism decides (or two disagree): spec_ambiguous below auto-apply, the findings for a person."""
    failure = ctx.result.failures[0]
    what = f"case {failure.case} step {failure.step} received {describe(failure.got)} instead of {describe(failure.expected)}"
    if disagree:
        why = "the findings point to different verdicts: " + "; ".join(_fact(f) for f in findings[:4])
    elif findings:
        why = "no mechanism the decider keeps found it; the facts: " + "; ".join(_fact(f) for f in findings[:4])
    else:
        why = "no mechanism found a disagreement between the sides of the interface or an environment failure"
    question = next((f.l3_question for f in findings if f.l3_question), None) or (
        f"Which unit should change (or should the SDD change) so that case {failure.case} step {failure.step} "
        f"gets {describe(failure.expected)}?"
    )
    evidence = [e for f in findings for e in f.evidence if e][:8]
    out = Finding("spec_ambiguous", [], FACTS_ONLY, f"{what}, and {why}", evidence, "facts:only",
                  l3_question=question, hints=[f"fact: {_fact(f)}" for f in findings])  # fmt: skip
    out.facts = findings
    return out


def _fact(f: Finding) -> str:
    voices = ", ".join(f"{s.voice}{'/' + s.speaker if s.speaker else ''} {s.when}" for s in f.said)
    return f"{f.rule} suggests {f.category} {f.affected or ''} ({squash(f.root_cause)[:160]}{'; ' + voices if voices else ''})"
