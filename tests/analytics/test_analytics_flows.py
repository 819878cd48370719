"""Report files and plots, the log-retention purge and flow, and prefect.yaml."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from analytics_helpers import ROOT
from analytics_synthetic import build

import analytics
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.models import TimelineEvent

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


# -- log retention ---------------------------------------------------------------------------


def _log(path: Path, age_days: float, text: str = "log line\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    stamp = time.time() - age_days * DAY
    os.utime(path, (stamp, stamp), follow_symlinks=False)
    return path


@pytest.fixture
def logs(project, tmp_path):
    """Old and new logs, nested, and a symlink to a file outside the logs folder."""
    from flows.log_retention import LOGS_DIR

    root = project.state_dir / LOGS_DIR
    outside = tmp_path / "precious.txt"
    outside.write_text("not a log")
    link = root / "link-to-outside.log"
    _log(root / "keep.log", 0.1)
    (root / "t-1").mkdir(parents=True)
    link.symlink_to(outside)
    os.utime(link, (time.time() - 5 * DAY,) * 2, follow_symlinks=False)
    return {
        "old": [_log(root / "old.log", 3, "x" * 100), _log(root / "t-1" / "node-7.log", 2.5), link],
        "new": [root / "keep.log", _log(root / "t-1" / "node-8.log", 0.5)],
        "outside": outside,
    }


def test_purge_removes_old_logs_only_and_records_each(project, logs):
    from flows.log_retention import purge_expired_logs

    result = purge_expired_logs(project, retention_days=1)
    assert sorted(p.path for p in result.purged) == sorted(str(p.relative_to(project.state_dir)) for p in logs["old"])
    assert result.failed == [] and result.kept == 2
    assert not any(os.path.lexists(p) for p in logs["old"])
    assert all(p.exists() for p in logs["new"]) and logs["outside"].read_text() == "not a log"
    events = project.ledger.read_as("timeline", TimelineEvent)
    assert sorted(e.ref for e in events if e.event == "log_purged") == sorted(p.path for p in result.purged)
    assert next(p for p in result.purged if p.path == "logs/old.log").size_bytes == 100


def test_a_failed_removal_is_recorded_and_retried_next_run(project, logs):
    from flows.log_retention import purge_expired_logs

    stuck = logs["old"][0]

    def remove(path: Path) -> None:
        if path == stuck:
            raise PermissionError(13, "Permission denied", str(path))
        os.unlink(path)

    first = purge_expired_logs(project, 1, remove=remove)
    assert [f.path for f in first.failed] == ["logs/old.log"] and "PermissionError" in first.failed[0].error
    assert len(first.purged) == 2 and stuck.exists()
    second = purge_expired_logs(project, 1)
    assert [p.path for p in second.purged] == ["logs/old.log"] and not stuck.exists()
    kinds = [e.event for e in project.ledger.read_as("timeline", TimelineEvent)]
    assert kinds.count("log_purge_failed") == 1 and kinds.count("log_purged") == 3


@pytest.mark.parametrize("days", [0, -1, float("nan"), float("inf"), "7", True])
def test_retention_must_be_a_positive_number(project, days):
    from flows.log_retention import purge_expired_logs

    with pytest.raises(GraphLemonError) as err:
        purge_expired_logs(project, days)
    assert err.value.code == ErrorCode.INVALID_PARAM


def test_no_logs_folder_is_nothing_to_do(project):
    from flows.log_retention import purge_expired_logs

    result = purge_expired_logs(project, 1, now=datetime.now(UTC) + timedelta(days=30))
    assert (result.purged, result.failed, result.kept) == ([], [], 0)


def test_log_retention_flow_runs_in_prefect(prefect_harness, project, logs):
    from flows.log_retention import log_retention

    result = log_retention(project=str(project.root), retention_days=1)
    assert len(result.purged) == 3 and result.kept == 2
    assert all(p.exists() for p in logs["new"])


def test_flows_need_a_project(monkeypatch):
    from flows.reports import artifact_key, project_dir

    monkeypatch.delenv("GRAPHLEMON_PROJECT", raising=False)
    with pytest.raises(GraphLemonError, match="GRAPHLEMON_PROJECT"):
        project_dir(None)
    monkeypatch.setenv("GRAPHLEMON_PROJECT", "/somewhere")
    assert project_dir(None) == "/somewhere" and project_dir("/here") == "/here"
    assert artifact_key("p-1A2b", "Bug History!", "md") == "p-1a2b-bug-history-md"


# -- prefect.yaml ----------------------------------------------------------------------------


def test_prefect_yaml_declares_the_five_deployments():
    import inspect

    from prefect.client.schemas.schedules import CronSchedule

    from flows.devloop import devloop
    from flows.pull_steps import code_root

    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    deployments = {d["name"]: d for d in spec["deployments"]}
    assert set(deployments) == {"devloop", "unit-loop", "reports", "log-retention", "deploy-supervisor"}
    assert deployments["devloop"]["entrypoint"] == "flows/devloop.py:devloop"
    assert deployments["deploy-supervisor"]["entrypoint"] == "flows/deploy_supervisor.py:deploy_supervisor"
    assert deployments["unit-loop"]["entrypoint"] == "flows/unit_loop.py:unit_loop"
    # every parameter the deployment sets is one of the flow's, and nothing machine-specific is baked in
    assert set(deployments["devloop"]["parameters"]) <= set(inspect.signature(devloop.fn).parameters)
    assert "{{" not in yaml.safe_dump(deployments["devloop"]["parameters"])
    for name, entry in (
        ("reports", "flows/reports.py:reports"),
        ("log-retention", "flows/log_retention.py:log_retention"),
    ):
        assert deployments[name]["entrypoint"] == entry
        (schedule,) = deployments[name]["schedules"]
        CronSchedule(cron=schedule["cron"], timezone=schedule["timezone"])  # valid cron
        assert (ROOT / entry.split(":")[0]).is_file()
    assert {d["work_pool"]["name"] for d in deployments.values()} == {"graphlemon"}
    # the pull step finds the worker's own GraphLemon at run time: no build step, no path from the deploying machine
    assert spec.get("build") is None
    locate, workdir = spec["pull"]
    assert "flows.pull_steps.code_root" in locate
    assert workdir["prefect.deployments.steps.set_working_directory"]["directory"] == "{{ code-root.directory }}"
    assert code_root() == {"directory": str(ROOT)}
