"""REQ-09: loop termination and human escalation: evidence, manual_resume restores the state before the block,
other goals keep running, manual_resume on a done task is a clear error that changes nothing."""

from __future__ import annotations

import json

import pytest
from conftest import CALC, broken_mul, playbook_variant, run_flow, verdict

from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.models import EscalationRecord, TaskEvent, TimelineEvent
from graphlemon.taskboard import TaskBoard


@pytest.fixture
def blocked(calc, tmp_path, prefect_harness):
    """calc whose validator cannot agree on mul's root cause -> blocked_pending_human (validator_inconclusive)."""

    def edit(data):
        broken_mul(data, attempts=(1,))  # wrong once; a later attempt writes the right mul
        verdict(data, "coder", "planning", "coder")

    playbook = playbook_variant(tmp_path, CALC, edit)
    final = run_flow(calc, "Build calc", playbook, max_unit_attempts=1)
    assert final["status"] == "blocked_pending_human" and final["blocked_reason"] == "validator_inconclusive"
    return calc, final["task_id"], playbook


def test_happy_manual_resume_restores_the_state_before_the_block_and_finishes(blocked, cli):
    project, task_id, playbook = blocked
    before = TaskBoard(project.ledger).get(task_id)
    assert before.resume_status == "validating"
    evidence = json.loads(cli("status", "--project", str(project.root), "--json").stdout)["blocked"]
    assert evidence[0]["task_id"] == task_id and evidence[0]["blocked_reason"] == "validator_inconclusive"
    assert "What to decide" in evidence[0]["evidence"] and "graphlemon resume" in evidence[0]["evidence"]
    resumed = TaskBoard(project.ledger).manual_resume(task_id, note="mul must multiply; the SDD is right")
    assert resumed.status == "validating"  # back where it was when it blocked
    event = [e for e in project.ledger.read_as("task", TaskEvent) if e.task_id == task_id][-1]
    assert (event.by, event.note) == ("human", "mul must multiply; the SDD is right")
    final = run_flow(project, None, playbook, task_id=task_id)
    assert final["status"] == "done" and final["loop_round"] == 1
    routed = [e.summary for e in project.ledger.read_as("timeline", TimelineEvent) if e.event == "routed"]
    assert routed == ["human resume -> round 1 (mul)"]


def test_boundary_a_blocked_task_does_not_hold_up_queued_goals(blocked):
    project, task_id, _ = blocked
    other = run_flow(project, "Build calc again", CALC / "playbook.yaml")
    assert other["status"] == "done"
    assert TaskBoard(project.ledger).get(task_id).status == "blocked_pending_human"
    packs = [e for e in project.ledger.read_as("escalation", EscalationRecord) if e.task_id == task_id]
    assert len(packs) == 1 and packs[0].blocked_reason == "validator_inconclusive" and packs[0].open_bug_ids


def test_failure_manual_resume_of_a_done_task_is_refused_and_changes_nothing(calc, cli, prefect_harness):
    final = run_flow(calc, "Build calc", CALC / "playbook.yaml")
    assert final["status"] == "done"
    events = len(calc.ledger.read("task"))
    with pytest.raises(GraphLemonError) as info:
        TaskBoard(calc.ledger).manual_resume(final["task_id"])
    assert info.value.code == ErrorCode.INVALID_TRANSITION and "done" in info.value.message
    out = cli("resume", final["task_id"], "--project", str(calc.root))
    assert out.returncode == 1 and out.stderr.startswith("error[INVALID_TRANSITION]")
    assert len(calc.ledger.read("task")) == events
    assert TaskBoard(calc.ledger).get(final["task_id"]).status == "done"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("action", "note", "ends", "by"),
    [
        ("resume", "mul must multiply; the SDD is right", "done", "human (Prefect UI)"),
        ("abandon", "not worth it", "abandoned", "human"),
    ],
)
def test_happy_a_deployed_run_suspends_for_a_person_and_goes_on_as_the_form_says(
    calc, tmp_path, prefect_stack, action, note, ends, by
):
    """The deployment path: a real server and worker; the run suspends with the evidence as an artifact, and
    the form's answer resumes it (Prefect re-runs the flow from the top) with the same task, or abandons it."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.flow_runs import resume_flow_run

    def edit(data):
        broken_mul(data, attempts=(1,))
        verdict(data, "coder", "planning", "coder")

    playbook = playbook_variant(tmp_path, CALC, edit)
    params = {"goal": "Build calc", "project": str(calc.root), "executor": "scripted", "playbook": str(playbook),
              "config": {"max_unit_attempts": 1}}  # fmt: skip
    with prefect_stack.client() as client:
        deployment = client.read_deployment_by_name("devloop/devloop")
        run = client.create_flow_run_from_deployment(deployment.id, parameters=params)
        prefect_stack.wait(client, run.id, done=lambda s: s.name == "Suspended")
        (task,) = TaskBoard(calc.ledger).all().values()
        assert (task.status, task.blocked_reason) == ("blocked_pending_human", "validator_inconclusive")
        artifacts = client.read_artifacts(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run.id])))
        evidence = {a.key: a.data for a in artifacts}[f"escalation-{task.task_id}".lower()]
        assert "What to decide" in evidence and "validator_inconclusive" in evidence
        resume_flow_run(run.id, run_input={"action": action, "note": note})
        state = prefect_stack.wait(client, run.id)
        assert state.type.value == "COMPLETED", f"{state.message}\n{prefect_stack.tail()}"
    (task,) = TaskBoard(calc.ledger).all().values()  # the re-run found its task, it did not start a new one
    assert task.status == ends
    answered = [e for e in calc.ledger.read_as("task", TaskEvent) if e.note == note]
    assert [e.by for e in answered] == [by]
