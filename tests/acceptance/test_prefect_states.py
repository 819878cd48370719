"""What a Prefect client reads of a devloop run (docs/devloop.md): a red tester attempt is a FAILED task run named
`Red`, a green one COMPLETED; a unit that ends blocked is a FAILED subflow run named `Blocked`; resumed, every stage
the ledger already holds is a CACHED run whose message names its outcome record."""

from __future__ import annotations

from conftest import CALC, broken_mul, playbook_variant, run_flow, verdict

from graphlemon.taskboard import TaskBoard


def _runs(client, task_id: str):
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(like_=task_id)))
    return sorted(runs, key=lambda r: r.created)


def _subflows(client, flow_run_id):
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

    return client.read_flow_runs(
        flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id]))
    )


def _task_runs(client, flow_run_id):
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    return client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))


def test_red_attempts_fail_blocked_units_fail_resumed_stages_are_cached(calc, tmp_path, prefect_harness):
    from prefect.client.orchestration import get_client

    def edit(data):
        broken_mul(data, attempts=(1,))  # red on its first attempt, green on the next
        verdict(data, "coder", "planning", "coder")  # the validator cannot agree: a person decides

    playbook = playbook_variant(tmp_path, CALC, edit)
    first = run_flow(calc, "Build calc", playbook, max_unit_attempts=1)
    assert (first["status"], first["blocked_reason"]) == ("blocked_pending_human", "validator_inconclusive")
    task_id = first["task_id"]
    TaskBoard(calc.ledger).manual_resume(task_id, note="mul must multiply")
    assert run_flow(calc, None, playbook, task_id=task_id)["status"] == "done"

    with get_client(sync_client=True) as client:
        devloops = [r for r in _runs(client, task_id) if r.name.startswith("devloop")]
        assert len(devloops) == 2, [r.name for r in devloops]
        before, after = devloops
        units = {u.name: u for u in _subflows(client, before.id)}
        assert (units["unit mul · round 0"].state.type.value, units["unit mul · round 0"].state.name) == (
            "FAILED", "Blocked")  # fmt: skip
        red = {t.name: (t.state.type.value, t.state.name) for t in _task_runs(client, units["unit mul · round 0"].id)}
        assert red["tester mul · attempt 1"] == ("FAILED", "Red"), red

        resumed = {u.name: u for u in _subflows(client, after.id)}
        green = {t.name: (t.state.type.value, t.state.name) for t in _task_runs(client, resumed["unit mul · round 1"].id)}
        assert green["tester mul · attempt 1"] == ("COMPLETED", "Completed"), green
        assert resumed["unit mul · round 0"].state.name == "Cached"  # replayed from its outcome record
        cached = {t.name: t.state.message for t in _task_runs(client, after.id) if t.state.name == "Cached"}
        assert {"planner · round 0", "validator · round 0"} <= set(cached), cached
        assert f"outcomes.ndjson#ne-{task_id}-planner-r0/outcome" in cached["planner · round 0"]
