"""A killed CLI run's open subflows are closed with it: when a new run takes over the gone holder's lease, the gone
devloop run is marked Crashed, and so is every subflow it ran in its own process that was still open (a unit
subflow, however deep), with their open task runs — never a unit subflow `Running` forever under a `Crashed`
parent. A run of a deployment under it (a unit run on a worker) is left to its own worker."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

pytestmark = pytest.mark.system


def _state(client, run_id):
    return client.read_flow_run(run_id).state


def test_a_gone_runs_open_subflows_and_task_runs_are_closed_with_it(prefect_harness):
    from prefect import flow, task
    from prefect.client.orchestration import get_client
    from prefect.states import Completed, Running

    from graphlemon.flows.devloop import close_gone_run
    from graphlemon.lease import Holder, Lease

    @flow(name="devloop-killed")
    def parent() -> None: ...

    @flow(name="unit-loop-killed")
    def unit() -> None: ...

    @task(name="tester-killed")
    def step() -> None: ...

    with get_client(sync_client=True) as client:
        devloop = client.create_flow_run(parent, state=Running())
        tracking = client.create_task_run(step, devloop.id, "unit-1", state=Running())
        sub = client.create_flow_run(unit, parent_task_run_id=tracking.id, state=Running())
        deeper_tracking = client.create_task_run(step, sub.id, "unit-2", state=Running())
        deeper = client.create_flow_run(unit, parent_task_run_id=deeper_tracking.id, state=Running())
        tester = client.create_task_run(step, deeper.id, "tester", state=Running())
        finished = client.create_task_run(step, sub.id, "done", state=Completed())
        now = datetime.now(UTC)
        gone = Lease(lease_id="L-gone", task_id="t", holder=Holder(label="graphlemon run", flow_run_id=str(devloop.id)),
                     since=now, heartbeat=now)  # fmt: skip
        close_gone_run(gone, "another-run")
        for run_id in (devloop.id, sub.id, deeper.id):
            state = _state(client, run_id)
            assert state.type.value == "CRASHED" and "lease was taken over (L-gone)" in state.message, state
        for task_run in (tracking, deeper_tracking, tester):
            assert client.read_task_run(task_run.id).state.type.value == "CRASHED"
        assert client.read_task_run(finished.id).state.type.value == "COMPLETED"  # what ended stays as it ended
