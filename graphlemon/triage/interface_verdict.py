"""A verdict from the structural comparison (`interface_diff.py`), and the cap for verdicts that miss the input
that distinguishes the failing request.

The category is the finding's: it follows from which sides agree. Confidence is highest when the side the
verdict trusts is confirmed by another side (the SDD and the provider's contract agree, the run did otherwise);
a disagreement seen between two sides only is below the auto-apply bar. Evidence is the two lines that
disagree, and each finding's hint says which side says what.
"""

from __future__ import annotations

from ..models import SddPatch
from .cite import Citer
from .findings import Finding
from .interface import SIDE_NAMES
from .interface_diff import DistinguishingInput, InterfaceFinding
from .rundir import IntegrationFailure
from .verdict_helpers import describe

CONFIRMED = 0.85  # the two lines disagree and a third side agrees with the one the verdict trusts
TWO_SIDES = 0.76  # only the two sides that disagree
UNJUDGED = 0.72  # two contracts disagree and no agreed interface (the SDD) says which one departs from it
UNLINKED = 0.7  # the sides disagree by structure, but no SDD statement was tied to the case's situation
CONTRADICTION = 0.55  # two SDD statements disagree: a person decides which holds
INPUT_UNSPECIFIED = 0.5  # a person decides what the unmentioned input should do
MISSED_INPUT_CAP = 0.5  # a verdict whose reason never touches the distinguishing input
DAMAGED = 0.6  # a line that disagrees was read with undecodable bytes replaced: what it states may be damaged
_UNDECODABLE = "\ufffd"  # what a byte that is not UTF-8 reads as (documents are read with replacement)
WORDS_CAP = 0.79  # a verdict that chose its SDD clause by the words it shares with the case
# The decision flow's HTTP branches that pick the SDD clause for a case by shared words (matching.py).
WORD_RULES = frozenset(
    {"contract:upstream", "contract:failing", "impl:upstream", "impl:failing", "contract:body", "impl:body"}
)


def interface_verdict(found: InterfaceFinding, failure: IntegrationFailure, cite: Citer) -> Finding:
    evidence = [cite.line(found.a.rel, found.a.line), cite.line(found.b.rel, found.b.line)]
    what = f"case {failure.case} step {failure.step} {_outcome(failure)}"
    hints = [f"interface: {found.shows()}"]
    rule = f"{'contract' if found.category == 'contract_mismatch' else 'impl' if found.category == 'impl_bug' else 'spec'}:{found.kind}"
    if found.kind in ("limits_disagree", "fields_disagree"):
        what_holds = "limit" if found.kind == "limits_disagree" else "field"
        root = (
            f"The SDD contradicts itself about {found.endpoint}: {found.a_says} ({found.a.rel}:{found.a.line}), but "
            f"{found.b_says} ({found.b.rel}:{found.b.line}); so {what}, and which {what_holds} holds is for a person "
            "to decide"
        )
        question = f"Which {what_holds} holds for {found.endpoint}: {found.subject}?"
        return Finding("spec_ambiguous", [], CONTRADICTION, root, evidence, rule, l3_question=question, hints=hints)
    if found.category == "spec_ambiguous":
        root = (
            f"The failing request to {found.endpoint} differs from one that got {describe(failure.expected)} only by "
            f"{found.subject}, which the SDD never mentions; so {what}, and the SDD does not say which answer is right"
        )
        question = f"What should {found.endpoint} answer when the request has {found.subject}?"
        return Finding("spec_ambiguous", [], INPUT_UNSPECIFIED, root, evidence, rule, l3_question=question, hints=hints)
    unit = found.blamed[0]
    confidence = UNLINKED if found.kind == "status_unproduced" else CONFIRMED if found.corroborated else TWO_SIDES
    damaged = [f"{q.rel}:{q.line}" for q in (found.a, found.b) if _UNDECODABLE in _text(cite, q.rel, q.line)]
    if damaged and confidence > DAMAGED:
        confidence = DAMAGED
        hints.append(f"confidence capped at {DAMAGED}: a line that disagrees holds bytes that are not UTF-8 ({', '.join(damaged)})")
    root = (
        f"{found.b_says} ({SIDE_NAMES[found.b_side]}, {found.b.rel}:{found.b.line}) where {found.a_says} "
        f"({SIDE_NAMES[found.a_side]}, {found.a.rel}:{found.a.line}), so {what}"
    )
    if found.category == "impl_bug":
        root = f"{unit} does not do what its interface states: {root}"
        return Finding("impl_bug", [unit], confidence, root, evidence, rule, hints=hints)
    root = f"{unit}'s contract.json disagrees with the interface: {root}"
    patch = SddPatch(
        target_section=f"#unit-{unit}",
        op="update_contract",
        text=f"{found.endpoint}: {found.a_says}; {unit}'s contract.json must say the same ({found.kind}: {found.b_says}).",
    )
    return Finding("contract_mismatch", [unit], confidence, root, evidence, rule, patch=patch, hints=hints)


def _text(cite: Citer, rel: str, line: int) -> str:
    lines = cite.lines(rel)
    return lines[line - 1] if 0 < line <= len(lines) else ""


def _outcome(failure: IntegrationFailure) -> str:
    expected, got = failure.expected, failure.got
    if expected.status is not None and expected.status == got.status:
        fields = sorted(set(expected.body or {}) - set(got.body or {})) if isinstance(expected.body, dict) else []
        differ = (
            f" without {', '.join(fields)}"
            if fields and isinstance(got.body, dict)
            else " that differs from the expected one"
        )
        return f"received a {got.status} answer{differ}"
    return f"received {describe(got)} instead of {describe(expected)}"


def cap_word_verdict(finding: Finding) -> Finding:
    """Words pick a clause when the structure cannot (the SDD states both statuses for the endpoint); such a verdict
    goes to a person rather than being applied: words are a hint, not a disagreement between two sides."""
    if finding.rule in WORD_RULES and finding.confidence > WORDS_CAP:
        finding.confidence = WORDS_CAP
        finding.hints.append(
            f"confidence capped at {WORDS_CAP}: the SDD clause was matched to the case by shared words, and no two "
            "sides of the interface disagree structurally"
        )
    return finding


def cap_for_missed_input(finding: Finding, found: DistinguishingInput | None) -> Finding:
    """A verdict whose reason does not name the input that distinguishes the failing request from a passing one
    cannot be auto-applied: it explains something, but not what made this request fail."""
    if found is None or finding.category in ("infra_flake", "spec_ambiguous"):
        return finding
    reason = f"{finding.root_cause} {' '.join(finding.evidence)}".lower()
    if any(name.lower() in reason for name in found.names()):
        return finding
    if finding.confidence > MISSED_INPUT_CAP:
        finding.confidence = MISSED_INPUT_CAP
        finding.hints.append(
            f"confidence capped at {MISSED_INPUT_CAP}: the reason never touches what distinguishes the failing "
            f"request from one that succeeded ({found.describe()})"
        )
    return finding


__all__ = ["UNJUDGED", "cap_for_missed_input", "cap_word_verdict", "interface_verdict"]
