"""End to end: the `reports` deployment (prefect.yaml) run by a process worker against a real
Prefect server (tests/prefect_stack.py), its artifacts read back through the Prefect client."""

from __future__ import annotations

import json
import time

import pytest
from analytics_synthetic import build

from graphlemon import analytics

pytestmark = pytest.mark.system


@pytest.mark.slow
def test_reports_deployment_runs_on_a_worker_and_publishes_artifacts(project, prefect_stack):
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    started = time.monotonic()
    project.ledger.append(*build(3).all())
    with prefect_stack.client() as client:
        deployment = client.read_deployment_by_name("reports/reports")
        assert deployment.pull_steps == [  # nothing of the deploying checkout: the worker finds its own GraphLemon
            {"graphlemon.flows.pull_steps.code_root": {"id": "code-root"}},
            {"prefect.deployments.steps.set_working_directory": {"directory": "{{ code-root.directory }}"}},
        ]
        assert [s.schedule.cron for s in deployment.schedules] == ["0 2 * * *"]
        run = client.create_flow_run_from_deployment(deployment.id, parameters={"project": str(project.root)})
        state = prefect_stack.wait(client, run.id)
        assert state.type.value == "COMPLETED", f"{state.message}\n{prefect_stack.tail()}"
        artifacts = client.read_artifacts(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run.id])))
    keys = {a.key: a for a in artifacts}
    prefix = project.project_id
    assert {f"{prefix}-{name}-{kind}" for name in analytics.REPORTS for kind in ("table", "md")} <= set(keys)
    units = analytics.convergence(project.root)
    table = keys[f"{prefix}-convergence-table"]
    rows = json.loads(table.data)  # the server stores a table artifact as JSON text
    assert table.type == "table" and len(rows) == len(units)
    assert {row["unit_id"] for row in rows} == set(units["unit_id"])
    assert "## tasks (" in keys[f"{prefix}-convergence-md"].data
    reports = project.state_dir / "reports"
    assert (reports / "failures-per-round.png").read_bytes().startswith(b"\x89PNG")
    assert (reports / "spend-over-time.png").stat().st_size > 10_000
    print(f"\nprefect deployment round trip: {time.monotonic() - started:.1f} s")
