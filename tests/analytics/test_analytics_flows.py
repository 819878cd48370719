"""Report files and plots, the log-retention purge and flow, and prefect.yaml."""

from __future__ import annotations

import contextlib

import pytest
import yaml
from analytics_helpers import ROOT
from analytics_synthetic import build

from graphlemon import analytics
from graphlemon.errors import GraphLemonError

PNG = b"\x89PNG\r\n\x1a\n"
DAY = 86400


def test_write_reports_writes_markdown_json_and_plots(project):
    project.ledger.append(*build(2).all())
    bundle = analytics.write_reports(project.root)
    out = project.state_dir / "reports"
    names = sorted(p.name for p in bundle.files)
    assert names == sorted(p.name for p in out.iterdir())
    assert names == [
        "budget.json", "budget.md", "bugs.json", "bugs.md", "convergence.json", "convergence.md",
        "failures-per-round.png", "skills.json", "skills.md", "spend-over-time.png",
    ]  # fmt: skip
    for png in out.glob("*.png"):
        assert png.read_bytes().startswith(PNG) and png.stat().st_size > 10_000
    assert "## units (" in (out / "convergence.md").read_text()
    assert [r.name for r in bundle.reports] == list(analytics.REPORTS)


def test_write_reports_on_an_empty_ledger(project):
    bundle = analytics.write_reports(project.root)
    assert all(p.exists() for p in bundle.files)
    assert "_(no rows)_" in (project.state_dir / "reports" / "bugs.md").read_text()


# (the log-retention cleanup and its flow: tests/foundation/test_execlogs.py, tests/acceptance/test_req13_logs.py)


def test_flows_need_a_project(monkeypatch):
    from graphlemon.flows.reports import artifact_key, project_dir

    monkeypatch.delenv("GRAPHLEMON_PROJECT", raising=False)
    with pytest.raises(GraphLemonError, match="GRAPHLEMON_PROJECT"):
        project_dir(None)
    monkeypatch.setenv("GRAPHLEMON_PROJECT", "/somewhere")
    assert project_dir(None) == "/somewhere" and project_dir("/here") == "/here"
    assert artifact_key("p-1A2b", "Bug History!", "md") == "p-1a2b-bug-history-md"


# -- prefect.yaml ----------------------------------------------------------------------------


def test_prefect_yaml_declares_the_six_deployments():
    import inspect

    from prefect.client.schemas.schedules import CronSchedule
    from prefect.flows import load_flow_from_entrypoint

    from graphlemon.flows.devloop import devloop
    from graphlemon.flows.pull_steps import code_root

    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    deployments = {d["name"]: d for d in spec["deployments"]}
    assert set(deployments) == {"devloop", "unit-loop", "remote-unit-loop", "reports", "log-retention",
                                "deploy-supervisor"}
    assert deployments["devloop"]["entrypoint"] == "graphlemon.flows.devloop:devloop"
    assert deployments["deploy-supervisor"]["entrypoint"] == "graphlemon.flows.deploy_supervisor:deploy_supervisor"
    assert deployments["unit-loop"]["entrypoint"] == "graphlemon.flows.unit_loop:unit_loop"
    assert deployments["remote-unit-loop"]["entrypoint"] == "graphlemon.flows.unit_loop:remote_unit_loop"
    # every parameter the deployment sets is one of the flow's, and nothing machine-specific is baked in
    assert set(deployments["devloop"]["parameters"]) <= set(inspect.signature(devloop.fn).parameters)
    assert "{{" not in yaml.safe_dump(deployments["devloop"]["parameters"])
    for name, entry in (
        ("reports", "graphlemon.flows.reports:reports"),
        ("log-retention", "graphlemon.flows.log_retention:log_retention"),
    ):
        assert deployments[name]["entrypoint"] == entry
        (schedule,) = deployments[name]["schedules"]
        CronSchedule(cron=schedule["cron"], timezone=schedule["timezone"])  # valid cron
        with contextlib.chdir(ROOT):  # what the pull step does: the worker runs in the folder holding graphlemon
            assert load_flow_from_entrypoint(entry).fn.__name__ == entry.rsplit(":", 1)[1]
    assert {d["work_pool"]["name"] for d in deployments.values()} == {"graphlemon"}
    # the pull step finds the worker's own GraphLemon at run time: no build step, no path from the deploying machine
    assert spec.get("build") is None
    locate, workdir = spec["pull"]
    assert "graphlemon.flows.pull_steps.code_root" in locate
    assert workdir["prefect.deployments.steps.set_working_directory"]["directory"] == "{{ code-root.directory }}"
    assert code_root() == {"directory": str(ROOT)}
