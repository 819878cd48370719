"""REQ-09: loop termination and human escalation: evidence, manual_resume restores the state before the block,
other goals keep running, manual_resume on a done task is a clear error that changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import CALC, broken_mul, playbook_variant, run_flow, verdict
from prefect_stack import told_why_it_waits

from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.models import EscalationRecord, TaskEvent, TimelineEvent
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system


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


def test_boundary_a_blocked_task_does_not_hold_up_queued_goals_whose_done_task_is_not_resumed(blocked, cli):
    """The queued goal's task, done, is also the done task whose manual resume is refused and changes nothing."""
    project, task_id, _ = blocked
    other = run_flow(project, "Build calc again", CALC / "playbook.yaml")
    assert other["status"] == "done"
    assert TaskBoard(project.ledger).get(task_id).status == "blocked_pending_human"
    packs = [e for e in project.ledger.read_as("escalation", EscalationRecord) if e.task_id == task_id]
    assert len(packs) == 1 and packs[0].blocked_reason == "validator_inconclusive" and packs[0].open_bug_ids
    _manual_resume_of_a_done_task_is_refused_and_changes_nothing(project, other["task_id"], cli)


def _manual_resume_of_a_done_task_is_refused_and_changes_nothing(project, done_id: str, cli) -> None:
    events = len(project.ledger.read("task"))
    with pytest.raises(GraphLemonError) as info:
        TaskBoard(project.ledger).manual_resume(done_id)
    assert info.value.code == ErrorCode.INVALID_TRANSITION and "done" in info.value.message
    out = cli("resume", done_id, "--project", str(project.root))
    assert out.returncode == 1 and out.stderr.startswith("error[INVALID_TRANSITION]")
    assert len(project.ledger.read("task")) == events
    assert TaskBoard(project.ledger).get(done_id).status == "done"


@pytest.mark.slow
def suspended_deployed_run(calc, tmp_path, prefect_stack, client):
    """A devloop deployment run of calc whose validator cannot decide: it suspends for a person; (run, task)."""

    def edit(data):
        broken_mul(data, attempts=(1,))
        verdict(data, "coder", "planning", "coder")

    playbook = playbook_variant(tmp_path, CALC, edit)
    params = {"goal": "Build calc", "project": str(calc.root), "executor": "scripted", "playbook": str(playbook),
              "config": {"max_unit_attempts": 1}}  # fmt: skip
    deployment = client.read_deployment_by_name("devloop/devloop")
    run = client.create_flow_run_from_deployment(deployment.id, parameters=params)
    prefect_stack.wait(client, run.id, done=told_why_it_waits)
    (task,) = TaskBoard(calc.ledger).all().values()
    return run, task


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
    the form's answer resumes it (Prefect re-runs the flow from the top) with the same task, or abandons it. (A
    suspended run's pages in the Prefect UI, its Resume form and the runs list: test_issue14_deployed_snake.py.)"""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.flow_runs import resume_flow_run

    with prefect_stack.client() as client:
        run, task = suspended_deployed_run(calc, tmp_path, prefect_stack, client)
        assert (task.status, task.blocked_reason) == ("blocked_pending_human", "validator_inconclusive")
        artifacts = client.read_artifacts(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run.id])))
        key = f"{task.task_id}-escalation"
        evidence = {a.key: a.data for a in artifacts}[key]
        assert "What to decide" in evidence and "needs you: the validator could not decide" in evidence  # in words
        assert "click **Resume** on this flow run" in evidence  # a deployed run is resumed in the UI
        suspended = client.read_flow_run(run.id)
        assert suspended.name == f"devloop · Build calc · {task.task_id}"  # named after its task, not devloop-None
        message = suspended.state.message  # the Suspended state says why it waits (UI and API)
        assert suspended.state.name == "Suspended" and message.startswith(
            f"{task.task_id} blocked: validator_inconclusive — "
        )
        assert " ".join(task.note.split())[:80] in message and f"evidence: artifact {key}" in message
        resume_flow_run(run.id, run_input={"action": action, "note": note})
        state = prefect_stack.wait(client, run.id)
        ended = ("COMPLETED", "Completed") if ends == "done" else ("CANCELLED", "Abandoned")  # abandoned: not green
        assert (state.type.value, state.name) == ended, f"{state.message}\n{prefect_stack.tail()}"
    (task,) = TaskBoard(calc.ledger).all().values()  # the re-run found its task, it did not start a new one
    assert task.status == ends
    answered = [e for e in calc.ledger.read_as("task", TaskEvent) if e.note == note]
    assert [e.by for e in answered] == [by]


def test_cli_resume_answers_the_waiting_deployed_run(calc, tmp_path, prefect_stack):
    """`graphlemon resume` on a task whose deployed run is suspended resumes that run (no second run, nothing left
    Suspended); its worker finishes the task."""

    with prefect_stack.client() as client:
        run, task = suspended_deployed_run(calc, tmp_path, prefect_stack, client)
        proc = subprocess.run(
            [sys.executable, "-m", "graphlemon", "resume", task.task_id, "--note", "mul must multiply",
             "--project", str(calc.root)],
            env={**prefect_stack.env}, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "resumed the waiting Prefect flow run" in proc.stdout
        state = prefect_stack.wait(client, run.id)
        assert state.type.value == "COMPLETED", f"{state.message}\n{prefect_stack.tail()}"
    assert TaskBoard(calc.ledger).get(task.task_id).status == "done"
