"""End to end: a real Prefect server, a process work pool, `prefect deploy` from prefect.yaml, a
process worker, a run of the `reports` deployment against a temp project, its artifacts read
back through the Prefect client. Every process started here is stopped by process group."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from analytics_helpers import ROOT
from analytics_synthetic import build

import analytics

PREFECT = [sys.executable, "-m", "prefect"]
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen, grace: float = 10) -> None:
    """SIGTERM the process group, SIGKILL it if it has not exited after `grace` seconds."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # also any child left in the group
    except ProcessLookupError:
        pass
    proc.wait(5)


@contextmanager
def _started(args: list[str], env: dict, log: Path):
    with open(log, "w") as out:
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield proc
    finally:
        _stop(proc)


def _wait_healthy(url: str, proc: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"prefect server exited: {log.read_text()[-2000:]}"
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"prefect server not healthy after {timeout} s: {log.read_text()[-2000:]}")


def _prefect(env: dict, *args: str) -> str:
    proc = subprocess.run([*PREFECT, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"prefect {' '.join(args)}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    return proc.stdout


@pytest.mark.slow
def test_reports_deployment_runs_on_a_worker_and_publishes_artifacts(project, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    started = time.monotonic()
    project.ledger.append(*build(3).all())
    url = f"http://127.0.0.1:{_free_port()}/api"
    home = tmp_path / "prefect-home"
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "PREFECT_API_URL": url,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_WORKER_QUERY_SECONDS": "1",
        "PREFECT_WORKER_PREFETCH_SECONDS": "5",
        "PREFECT_UI_ENABLED": "false",
    }
    server_log, worker_log = tmp_path / "server.log", tmp_path / "worker.log"
    server_cmd = [*PREFECT, "server", "start", "--host", "127.0.0.1", "--port", url.split(":")[-1].split("/")[0]]
    with _started(server_cmd, env, server_log) as server:
        _wait_healthy(url, server, server_log)
        _prefect(env, "work-pool", "create", "graphlemon", "--type", "process")
        _prefect(env, "--no-prompt", "deploy", "-n", "reports")
        with _started([*PREFECT, "worker", "start", "--pool", "graphlemon", "--type", "process"], env, worker_log):
            with temporary_settings(updates={PREFECT_API_URL: url}), get_client(sync_client=True) as client:
                deployment = client.read_deployment_by_name("reports/reports")
                assert deployment.pull_steps == [
                    {"prefect.deployments.steps.set_working_directory": {"directory": str(ROOT)}}
                ]
                assert [s.schedule.cron for s in deployment.schedules] == ["0 2 * * *"]
                run = client.create_flow_run_from_deployment(deployment.id, parameters={"project": str(project.root)})
                deadline = time.monotonic() + 240
                while (state := client.read_flow_run(run.id).state).type.value not in FINAL:
                    assert time.monotonic() < deadline, (
                        f"flow run stuck in {state.type}: {worker_log.read_text()[-3000:]}"
                    )
                    time.sleep(0.5)
                assert state.type.value == "COMPLETED", f"{state.message}\n{worker_log.read_text()[-3000:]}"
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
