"""What the next step verifies (history.retriage, a pure decision over ledger records, as a table): an infra_flake
whose re-run failed the same way is triaged again without the environment hypothesis; a verdict that was acted on
and left the failing behaviour unchanged escalates (the seed: a second triage of the same failure)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphlemon.bugs import Bug
from graphlemon.models import TriageRecord
from graphlemon.stages.routing import triage_action
from graphlemon.triage import triage_run
from graphlemon.triage.history import retriage

from .runbuilder import RUN_ID, build_project

SIG, SAME, CHANGED = "sig-000000000001", "got-aaaaaaaaaaaa", "got-bbbbbbbbbbbb"


def _record(run: str, category: str, behaviour: str | None = SAME) -> TriageRecord:
    return TriageRecord(run_id=run, root_cause="x" * 20, category=category, confidence=0.9, failure_signature=SIG,
                        behaviour=behaviour)  # fmt: skip


def _bug(run: str, category: str) -> Bug:
    now = datetime.now(UTC)
    return Bug(bug_id=f"bug-{run}", title="t", status="open", source="integration", signature=SIG, category=category,
               run_id=run, opened_at=now, updated_at=now)  # fmt: skip


@pytest.mark.parametrize(
    ("records", "bugs", "mode"),
    [
        ([], [], "fresh"),
        ([_record("r0", "infra_flake")], [], "without_environment"),
        ([_record("r0", "infra_flake"), _record("r1", "infra_flake")], [], "without_environment"),
        ([_record("r0", "impl_bug")], [], "escalate"),
        ([_record("r0", "contract_mismatch")], [], "escalate"),
        ([_record("r0", "impl_bug", behaviour=None)], [], "escalate"),  # an old record: the answer is not known
        ([_record("r0", "impl_bug", behaviour=CHANGED)], [], "fresh"),  # the retry changed what the step got
        ([_record("r0", "infra_flake"), _record("r1", "impl_bug", behaviour=CHANGED)], [], "without_environment"),
        ([], [_bug("r0", "impl_bug")], "escalate"),
        ([], [_bug("r0", "infra_flake")], "without_environment"),
        ([_record("this-run", "impl_bug")], [], "fresh"),  # this run's own earlier verdict is no earlier triage
    ],
)
def test_retriage_table(records, bugs, mode):
    assert retriage(records, bugs, SIG, "this-run", SAME)[0] == mode


def _project(tmp_path, log: str):
    failure = {"case": "place-order", "involves": ["orders"], "request": {"method": "POST", "path": "/orders"},
               "expected": {"status": 201}, "got": {"status": 500, "body": "Internal Server Error"}}  # fmt: skip
    return build_project(tmp_path, units=[{"unit_id": "orders", "code": ["orders"]}],
                         files={"orders/app.py": "x = 1\n"}, sdd="# Shop\n\n## orders\n\nPOST /orders answers 201.\n",
                         failure=failure, log=log)  # fmt: skip


def test_an_infra_flake_that_failed_the_same_way_is_triaged_again_without_the_environment(tmp_path):
    project = _project(tmp_path, "2026-12-03T10:00:04Z [runner] OSError: [Errno 28] No space left on device\n")
    first = triage_run(project, RUN_ID).record
    # a hypothesis below auto-apply: the loop's action for it is the re-run that checks it
    assert first.category == "infra_flake" and not first.will_auto_apply and first.retriage is None
    assert triage_action(first.category, first.will_auto_apply) == "rerun"
    other = project.state_dir / "integration" / "runs" / "run-int-rerun"
    other.mkdir()
    for name in ("result.json", "process.log", "http-trace.ndjson"):
        text = (project.state_dir / "integration" / "runs" / RUN_ID / name).read_text()
        (other / name).write_text(text.replace(RUN_ID, "run-int-rerun"))
    again = triage_run(project, "run-int-rerun")
    assert again.record.retriage == "without_environment" and again.record.category == "spec_ambiguous"
    assert not again.record.will_auto_apply
    assert any("environment hypothesis dropped" in h for h in again.hints)
