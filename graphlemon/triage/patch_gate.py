"""May a contract_mismatch's SDD patch be applied without a person? Only when two sides confirm it and the SDD says
nothing else about the element it changes (docs/triage.md, "What is applied without a person").

`patch_review` returns None when the patch may be applied, else why a person must approve it (the console's
approval page shows the diff; `graphlemon approve-patch` does the same). `recode_review` is the same question for an
agent's impl_bug: re-coding a unit without a person needs a finding of the rules that agrees and none that differs.
"""

from __future__ import annotations

from .decider import KEPT, MEASURED
from .findings import Finding
from .run_context import RunContext
from .sdd_element import cited_block, other_statements
from .verdict import TriageVerdict


def patch_review(ctx: RunContext, verdict: TriageVerdict, findings: list[Finding]) -> str | None:
    """None when the verdict's patch rests on a kept structural finding for the same unit(s), confirmed by a side
    beyond the two that disagree, whose cited SDD statement stands in the provider's own section and is the SDD's
    only statement about the element; else every reason a person must approve it, the SDD's other statements first."""
    units = sorted(verdict.affected_units)
    backing = [
        f for f in findings
        if f.category == "contract_mismatch" and f.rule in MEASURED and sorted(f.affected) == units and f.element
    ]  # fmt: skip
    if not backing:
        return "no structural finding of the rules shows this contract departing from the SDD"
    found = max(backing, key=lambda f: f.rule in KEPT)
    element = found.element
    assert element is not None
    reasons = []
    docs = [(d.rel, d.text) for d in ctx.sdd_docs]
    others = other_statements(docs, element, ctx.units.ids())
    if others:
        where = ", ".join(f"{b.rel}:{b.first}" for b in others[:5])
        what = f"{element.method or ''} {element.path}".strip()
        reasons.append(
            f"the SDD also speaks of {what}{' answers of that class' if element.statuses else ''} at {where}"
        )
    cited = cited_block(docs, element, ctx.units.ids())
    if element.unit and (cited is None or cited.unit != element.unit):
        reasons.append(f"the SDD statement it rests on ({element.statement}) is not in {element.unit}'s section")
    if not found.confirmed_by:
        reasons.append(
            "only the two sides that disagree show it (no trace, code or other contract confirms which departs)"
        )
    if found.rule not in KEPT:
        m = MEASURED[found.rule]
        reasons.append(f"only {found.rule} shows it, and that mechanism was right {m.right} of {m.fired} times on sets "
                       f"it was not shaped on")  # fmt: skip
    return "; ".join(reasons) or None


def recode_review(verdict: TriageVerdict, findings: list[Finding]) -> str | None:
    """None when the agent's re-code has a second reading: a finding of the rules points to the same units, and none
    points elsewhere (the decider's veto, applied to the agent); else why a person decides."""
    units = sorted(verdict.affected_units)
    elsewhere = [f for f in findings if (f.category, sorted(f.affected)) != (verdict.category, units)]
    if elsewhere:
        return "the rules' findings point elsewhere: " + "; ".join(
            f"{f.rule} suggests {f.category} {f.affected or ''}".rstrip() for f in elsewhere[:3]
        )
    if not findings:
        return "no finding of the rules reads the failure as this unit's bug (a re-code needs a second reading)"
    return None
