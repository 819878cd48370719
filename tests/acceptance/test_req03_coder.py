"""REQ-03: the coder works in per-unit git worktrees; parallel units merge cleanly; a red unit reflects, retries, blocks."""

from __future__ import annotations

import subprocess

import pytest
from conftest import CALC, broken_mul, playbook_variant, run_flow

from graphlemon.artifacts import ArtifactStore
from graphlemon.models import NodeEvent, OutcomeRecord, TimelineEvent
from graphlemon.nodes import NodeTracker
from graphlemon.testrun import run_tests

pytestmark = pytest.mark.system


def test_happy_code_diff_and_test_report_and_all_tests_pass(snake_run):
    project, final = snake_run
    kinds = {(r.artifact_type, r.unit_id) for r in ArtifactStore(project.ledger).records() if r.task_id == final["task_id"]}
    for unit in ("board", "collision", "scoring", "game"):
        assert ("code_diff", unit) in kinds and ("test_report", unit) in kinds
    result = run_tests(project.root, ["tests"], timeout=120)  # unit + integration tests on the merged main branch
    assert result.ok and result.summary.failed == 0 and result.summary.total >= 30
    assert any(c.file and "integration" in c.file for c in result.cases)


def test_boundary_independent_units_get_their_own_worktrees_and_merge_without_residue(calc, prefect_harness):
    final = run_flow(calc, "Build calc", CALC / "playbook.yaml")
    assert final["status"] == "done"
    coder = [n for n in NodeTracker(calc.ledger).for_task(final["task_id"]) if n.stage == "coder"]
    refs = {n.unit_id: n.git_worktree_ref for n in coder}
    assert set(refs) == {"add", "mul"} and len(set(refs.values())) == 2
    branches = subprocess.run(["git", "branch", "--list", "graphlemon/*"], cwd=calc.root, capture_output=True, text=True).stdout
    assert all(ref in branches for ref in refs.values())
    grep = subprocess.run(["git", "grep", "-n", "-E", "^(<<<<<<<|>>>>>>>)"], cwd=calc.root, capture_output=True, text=True)
    assert grep.returncode == 1  # no conflict markers anywhere
    status = subprocess.run(["git", "status", "--porcelain"], cwd=calc.root, capture_output=True, text=True).stdout
    assert status == "" and (calc.root / "calc" / "add.py").is_file() and (calc.root / "calc" / "mul.py").is_file()


def test_failure_red_unit_reflects_retries_and_blocks_at_the_retry_limit(calc, tmp_path, prefect_harness):
    final = run_flow(calc, "Build calc", playbook_variant(tmp_path, CALC, lambda d: broken_mul(d, attempts=None)),
                     max_unit_attempts=2, max_loop_rounds=1)  # fmt: skip
    events = [e for e in calc.ledger.read_as("node", NodeEvent) if e.stage == "coder" and e.unit_id == "mul"]
    assert [(e.status, e.attempt) for e in events] == [
        ("running", 1), ("reflecting", 1), ("retrying", 2), ("running", 2), ("reflecting", 2), ("blocked", 2),
    ]  # fmt: skip
    assert events[-1].error_code == "RETRY_LIMIT"
    assert final["status"] == "blocked_pending_human"  # bubbled up: the org loop could not finish the task


def test_failure_a_coder_that_reports_files_its_commit_leaves_unchanged_is_told_so(calc, tmp_path, prefect_harness):
    """The mul coder's first write lands outside its unit (refused), yet its answer reports the file: the turn
    records what the commit changed, the timeline says the claim is unmet, and the next attempt is told first."""

    def edit(data):
        refused = {"match": {"role": "coder", "unit": "mul", "attempt": [1]},
                   "actions": [{"write_file": {"path": "calc/add.py", "from_file": "files/code/mul_broken.py"}}],
                   "output": {"summary": "mul", "files": ["./calc/add.py"]}}  # fmt: skip
        data["turns"].insert(0, refused)

    final = run_flow(calc, "Build calc", playbook_variant(tmp_path, CALC, edit), max_unit_attempts=2)
    assert final["status"] == "done"
    turns = [r.value for r in calc.ledger.read_as("outcome", OutcomeRecord) if r.model == "CoderTurn"]
    first = next(t for t in turns if t["attempt"] == 1 and t["summary"] == "mul")
    assert (first["commit"], first["files_changed"], first["claimed_unchanged"]) == (None, [], ["calc/add.py"])
    assert all(t["claimed_unchanged"] == [] for t in turns if t is not first)
    unmet = [e for e in calc.ledger.read_as("timeline", TimelineEvent) if e.event == "coder_claims_unmet"]
    assert [(e.unit_id, e.summary) for e in unmet] == [
        ("mul", "mul: attempt 1 reported calc/add.py as changed; its commit leaves them unchanged")
    ]
    reflecting = [e for e in calc.ledger.read_as("node", NodeEvent) if e.unit_id == "mul" and e.status == "reflecting"]
    assert reflecting[0].error.startswith("Your previous answer reported changing calc/add.py, but its commit leaves")
