"""The thin Prefect task `triage-run` in a real flow run (session Prefect harness)."""

from __future__ import annotations

import pytest
from prefect_stack import artifacts_keyed

pytestmark = pytest.mark.system


@pytest.mark.slow
def test_triage_run_task_writes_the_verdict_and_an_artifact(prefect_harness, scenario, keep):
    from prefect import flow

    from graphlemon.tasks.triage import triage_run

    keep("contract:path_differs")  # a verdict the loop applies: the task passes it on whole
    s = scenario("fb02_stock_path_renamed_consumer")

    @flow
    def triage_flow():
        return triage_run(str(s.root), s.run_id)

    record = triage_flow()
    assert record.category == "contract_mismatch" and record.will_auto_apply and (s.run_dir / "triage.json").is_file()

    from graphlemon.project import open_project

    key = f"{open_project(str(s.root)).project_id}-triage-int-0912-1400"  # scoped by project (two projects may hold the same run id)
    found = artifacts_keyed(key)
    assert found and "contract_mismatch" in found[0].data and "storefront" in found[0].data
