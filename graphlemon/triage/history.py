"""Failure signatures and history: find_similar_bug (one of the triager's tools) and "have we triaged this before?".

A failure signature names *what* failed, not how: the case, the step, the units
involved, the request (method and path template) and the expected outcome. The
actual response is left out, so the same failing expectation keeps its
signature across rounds even when the wrong answer changes (500, then 200).
The Integrator should pass it to `BugTracker.open(signature=...)`.
"""

from __future__ import annotations

import hashlib
import json

from ..bugs import Bug
from ..models import TriageRecord
from .rundir import IntegrationFailure
from .sdd import normalize_path
from .sdd_terms import terms

ACTIVE_OR_DONE = ("open", "fixing", "reopened", "fixed", "verified")


def failure_signature(failure: IntegrationFailure) -> str:
    """`sig-<12 hex>`: stable for the same failing expectation of the same case step."""
    request = failure.request
    key = {
        "case": failure.case,
        "step": failure.step,
        "involves": sorted(failure.involves),
        "request": [request.method, normalize_path(request.path)] if request else None,
        "expected": failure.expected.model_dump(mode="json", exclude_none=True),
    }
    digest = hashlib.sha1(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()
    return f"sig-{digest[:12]}"


def find_similar_bug(
    bugs: list[Bug], signature: str, *, unit_ids: list[str] | None = None, text: str = ""
) -> list[Bug]:
    """Bugs with this signature first, then bugs of the same units whose title/detail share most words with `text`."""
    exact = [b for b in bugs if b.signature == signature]
    if not unit_ids or not text:
        return sorted(exact, key=lambda b: b.opened_at)
    wanted = terms(text)
    similar = []
    for bug in bugs:
        if bug in exact or not (set(bug.affected_units) | {bug.unit_id}) & set(unit_ids):
            continue
        words = terms(f"{bug.title} {bug.detail} {bug.test_name or ''}")
        overlap = len(wanted & words) / max(len(wanted | words), 1)
        if overlap >= 0.3:
            similar.append((overlap, bug))
    return sorted(exact, key=lambda b: b.opened_at) + [b for _, b in sorted(similar, key=lambda x: -x[0])]


def earlier_triage(
    records: list[TriageRecord], bugs: list[Bug], signature: str, run_id: str
) -> TriageRecord | Bug | None:
    """An earlier triage of the same failure in another run (its ledger record, or a bug the loop re-categorised)."""
    for record in reversed(records):
        if record.failure_signature == signature and record.run_id != run_id:
            return record
    for bug in bugs:
        if bug.signature == signature and bug.category != "unknown" and bug.run_id not in (None, run_id):
            return bug
    return None
