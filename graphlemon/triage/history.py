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
import re
from typing import Literal

from ..bugs import Bug
from ..models import TriageRecord
from .rundir import IntegrationFailure
from .sdd import normalize_path


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


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z][a-z0-9]{2,}", text.lower()) if w not in _COMMON)


_COMMON = frozenset("the and for with from that this was were are not but case step got expected".split())


def find_similar_bug(
    bugs: list[Bug], signature: str, *, unit_ids: list[str] | None = None, text: str = ""
) -> list[Bug]:
    """Bugs with this signature first, then bugs of the same units whose title/detail share most words with `text`."""
    exact = [b for b in bugs if b.signature == signature]
    if not unit_ids or not text:
        return sorted(exact, key=lambda b: b.opened_at)
    wanted = _words(text)
    similar = []
    for bug in bugs:
        if bug in exact or not (set(bug.affected_units) | {bug.unit_id}) & set(unit_ids):
            continue
        words = _words(f"{bug.title} {bug.detail} {bug.test_name or ''}")
        overlap = len(wanted & words) / max(len(wanted | words), 1)
        if overlap >= 0.3:
            similar.append((overlap, bug))
    return sorted(exact, key=lambda b: b.opened_at) + [b for _, b in sorted(similar, key=lambda x: -x[0])]


def behaviour_digest(failure: IntegrationFailure) -> str:
    """`got-<12 hex>` of what the failing step got: the same digest after a retry means the behaviour did not change."""
    got = failure.got.model_dump(mode="json", exclude_none=True)
    return "got-" + hashlib.sha1(json.dumps(got, sort_keys=True, default=str).encode()).hexdigest()[:12]


Retriage = Literal["fresh", "without_environment", "escalate"]


def retriage(
    records: list[TriageRecord], bugs: list[Bug], signature: str, run_id: str, behaviour: str
) -> tuple[Retriage, TriageRecord | Bug | None]:
    """How to triage a failure that was triaged before (in another run), from the ledger alone:

    | earlier verdicts of the same signature                         | this triage            |
    |----------------------------------------------------------------|------------------------|
    | none                                                            | fresh                  |
    | only infra_flake (its re-run failed the same way)               | without_environment    |
    | another verdict was acted on, and the step got the same answer  | escalate (the seed: a second triage escalates) |
    | another verdict was acted on, and the step's answer changed     | fresh, without the environment if it was dropped |

    A bug the loop re-categorised counts as an earlier verdict of its category (its answer is not recorded)."""
    earlier: list[TriageRecord | Bug] = [r for r in records if r.failure_signature == signature and r.run_id != run_id]
    earlier += [
        b for b in bugs if b.signature == signature and b.category != "unknown" and b.run_id not in (None, run_id)
    ]
    if not earlier:
        return "fresh", None
    acted = [e for e in earlier if e.category != "infra_flake"]
    if not acted:
        return "without_environment", earlier[-1]
    recorded = [e for e in acted if isinstance(e, TriageRecord)]  # a record knows the answer it saw; a bug does not
    last = (recorded or acted)[-1]
    same = getattr(last, "behaviour", None) in (None, behaviour)
    if same:
        return "escalate", last
    return ("without_environment" if len(acted) < len(earlier) else "fresh"), last
