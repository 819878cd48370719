"""Tester ↔ bugs.ndjson (the bug lifecycle: docs/tester.md, `lifecycle.BUG`).

* every failure -> `bug_open` (dedup on unit:test: an active bug of the same test is
  reused, not reopened twice) and the failure carries the `bug_id`;
* a green run -> every open / fixing / reopened unit-test bug of the unit -> `fixed`,
  with `fix_refs=[run_id]`; a red run that ran the unit's tests (not a crash) fixes the
  unit-test bugs whose test no longer fails (`except_tests`), so a bug never stays open
  after its test passed. Bugs found by the integrator or validator stay open: green
  unit tests do not prove them fixed; the stage that found them closes them.
"""

from __future__ import annotations

import re

from ..bugs import BugTracker
from ..lifecycle import ACTIVE_BUG
from ..models import BugSource, Severity
from .tester_models import BugTransitionRef, TesterFailure

UNIT_TEST_SOURCES = ("unit_test", "unit_test_infra")


def guess_severity(failure: TesterFailure) -> Severity:
    name = failure.test.lower()
    if any(w in name for w in ("security", "auth", "token", "password")):
        return "critical"
    if re.search(r"\b5\d\d\b", str(failure.got)):
        return "high"
    return "medium"


def bug_title(failure: TesterFailure) -> str:
    """`test_name: expected X got Y`, or the assertion with pytest's `where` line when there is no expected/got."""
    short = failure.test.rsplit("::", 1)[-1]
    if failure.expected is not None or failure.got is not None:
        return f"{short}: expected {failure.expected} got {failure.got}"[:300]
    lines = [line.strip() for line in failure.message.splitlines() if line.strip()]
    where = next((line.lstrip("+ ").strip() for line in lines[1:] if "where" in line), None)
    text = (lines[0] if lines else "failed") + (f" ({where})" if where else "")
    return f"{short}: {text}"[:300]


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
        bug_id, created = tracker.open(
            title=bug_title(f),
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


def bridge_pass(
    tracker: BugTracker, *, unit_id: str, run_id: str, except_tests: frozenset[str] = frozenset()
) -> list[BugTransitionRef]:
    """A run of the unit's tests fixes every active unit-test bug of the unit whose test did not fail in it."""
    moved = []
    for bug in tracker.list(unit_id=unit_id, status=sorted(ACTIVE_BUG)):
        if bug.source not in UNIT_TEST_SOURCES or bug.test_name in except_tests:
            continue
        before, after = tracker.transition(bug.bug_id, "fixed", by="tester", fix_refs=[run_id])
        moved.append(BugTransitionRef(id=bug.bug_id, from_=before, to=after))
    return moved
