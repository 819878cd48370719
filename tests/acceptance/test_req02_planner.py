"""REQ-02: the planner writes brd / prd / sdd / benchmark with lineage; contradictions reflect; bad lineage is refused."""

from __future__ import annotations

import pytest
from conftest import CALC, playbook_variant, run_flow, turn

from graphlemon.artifacts import ArtifactStore
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.models import NodeEvent, TimelineEvent


@pytest.mark.system
def test_happy_four_artifacts_with_an_unbroken_lineage(snake_run):
    project, final = snake_run
    store = ArtifactStore(project.ledger)
    latest = {kind: store.latest(kind, task_id=final["task_id"]) for kind in ("brd", "prd", "sdd", "benchmark")}
    assert all(latest.values())
    assert [r.artifact_type for r in store.lineage(latest["sdd"].artifact_id)] == ["sdd", "prd", "brd"]
    assert latest["benchmark"].depends_on_artifact_ids == [latest["sdd"].artifact_id]
    for record in latest.values():
        assert (project.state_dir / record.path).is_file() and store.read_text(record).strip()
    assert (project.state_dir / "units.json").is_file() and (project.state_dir / "units" / "collision" / "spec.json").is_file()


@pytest.mark.system
def test_boundary_contradictory_prd_is_caught_in_verifying_and_replanned(calc, tmp_path, prefect_harness):
    def edit(data):
        planner = turn(data, role="planner")
        bad = {**planner, "name": "planner writes a PRD that contradicts itself", "match": {"role": "planner", "attempt": 1},
               "actions": [dict(a) for a in planner["actions"]]}  # fmt: skip
        bad["actions"][1] = {"write_file": {"path": ".graphlemon/plan/drafts/prd.md", "from_file": "files/plan/prd_contradictory.md"}}
        data["turns"].insert(0, bad)

    final = run_flow(calc, "Build calc", playbook_variant(tmp_path, CALC, edit))
    assert final["status"] == "done"
    planner = [e for e in calc.ledger.read_as("node", NodeEvent) if e.stage == "planner" and e.event == "transition"]
    assert [e.status for e in planner] == ["running", "verifying", "reflecting", "retrying", "running", "verifying", "done"]
    assert "contradict" in planner[2].error and "overflow" in planner[2].error
    rejected = [e for e in calc.ledger.read_as("timeline", TimelineEvent) if e.event == "plan_rejected"]
    assert len(rejected) == 1
    assert [r.artifact_type for r in ArtifactStore(calc.ledger).records()] [:4] == ["brd", "prd", "sdd", "benchmark"]


def test_failure_sdd_whose_prd_does_not_exist_is_refused(calc):
    store = ArtifactStore(calc.ledger)
    brd = store.write("brd", "# BRD\n", task_id="t")
    with pytest.raises(GraphLemonError) as info:
        store.write("sdd", "# SDD\n", task_id="t", depends_on=["art-prd-000000"])
    assert info.value.code == ErrorCode.ARTIFACT_NOT_FOUND and "art-prd-000000" in info.value.message
    assert [r.artifact_id for r in store.records()] == [brd.artifact_id]
    assert not (calc.state_dir / "artifacts" / "sdd").exists()
