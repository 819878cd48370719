"""Tester ↔ bugs.ndjson (seed 000 §7.3).

* every failure -> `bug_open` (dedup on unit:test: an active bug of the same test is
  reused, not reopened twice) and the failure carries the `bug_id`;
* a green run -> every open / fixing / reopened unit-test bug of the unit -> `fixed`,
  with `fix_refs=[run_id]`. Bugs found by the integrator or validator stay open: green
  unit tests do not prove them fixed; the stage that found them closes them.
"""

from __future__ import annotations

import re

from ..bugs import BugTracker
from ..lifecycle import ACTIVE_BUG
from ..models import BugSource, Severity
from .models import BugTransitionRef, TesterFailure

UNIT_TEST_SOURCES = ("unit_test", "unit_test_infra")


def guess_severity(failure: TesterFailure) -> Severity:
    name = failure.test.lower()
    if any(w in name for w in ("security", "auth", "token", "password")):
        return "critical"
    if re.search(r"\b5\d\d\b", str(failure.got)):
        return "high"
    return "medium"


def bridge_failures(
    tracker: BugTracker,
    failures: list[TesterFailure],
    *,
    unit_id: str,
    run_id: str,
    task_id: str | None,
    source: BugSource = "unit_test",
) -> list[str]:
    """Open (or reuse) a bug per failure; sets `failure.bug_id`. -> ids of newly opened bugs."""
    opened = []
    for f in failures:
        expectation = f" expected {f.expected} got {f.got}" if f.expected is not None or f.got is not None else ""
        bug_id, created = tracker.open(
            title=f"{f.test}:{expectation or ' ' + (f.message.splitlines() or ['failed'])[0]}"[:300],
            source=source,
            unit_id=unit_id,
            test_name=f.test,
            run_id=run_id,
            task_id=task_id,
            detail=(f.stack or f.message)[:4000],
            severity=guess_severity(f),
            affected_units=[unit_id],
            by="tester",
        )
        f.bug_id = bug_id
        if created:
            opened.append(bug_id)
    return opened


def bridge_pass(tracker: BugTracker, *, unit_id: str, run_id: str) -> list[BugTransitionRef]:
    """A green run fixes every active unit-test bug of the unit."""
    moved = []
    for bug in tracker.list(unit_id=unit_id, status=sorted(ACTIVE_BUG)):
        if bug.source not in UNIT_TEST_SOURCES:
            continue
        before, after = tracker.transition(bug.bug_id, "fixed", by="tester", fix_refs=[run_id])
        moved.append(BugTransitionRef(id=bug.bug_id, from_=before, to=after))
    return moved
