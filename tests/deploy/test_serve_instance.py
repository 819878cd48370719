"""`graphlemon serve` as the supervisor starts it: an instance runs its own checkout's code (PYTHONPATH first),
answers /healthz with its commit, and with --worker runs a real Prefect worker that registers with the server."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from graphlemon.deploy import instances
from graphlemon.deploy.haproxy import pid_alive, stop_group
from graphlemon.project import init_project

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkout(tmp_path):
    """A worktree of this repository's HEAD with one marker edit, so the test can tell whose code runs."""
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "start"], cwd=project, check=True)
    init_project(project)
    code = tmp_path / "code"
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(code), "HEAD"], cwd=ROOT, check=True)
    try:
        for rel in ("graphlemon/deploy/service.py", "graphlemon/cli/serve_cmd.py", "graphlemon/cli/__init__.py",
                    "graphlemon/cli/deploy_cmd.py",
                    *(str(p.relative_to(ROOT)) for p in (ROOT / "graphlemon" / "console").glob("*.py"))):  # fmt: skip
            (code / rel).write_text((ROOT / rel).read_text())  # this checkout's (maybe uncommitted) service code
        service = code / "graphlemon" / "deploy" / "service.py"
        service.write_text(service.read_text().replace('"worker": worker}', '"worker": worker, "marker": "instance"}'))
        yield project, code
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(code)], cwd=ROOT, check=False)


def _serve(code: Path, project: Path, **kw) -> instances.Instance:
    from graphlemon.deploy.supervisor import _free_port

    return instances.start(code, "c0ffee", _free_port(), project, **kw)


@pytest.mark.system
def test_instance_runs_its_own_checkout(checkout):
    project, code = checkout
    inst = _serve(code, project)
    try:
        reading = instances.wait_healthy(inst, 120)
        assert reading.status == 200 and reading.commit == "c0ffee" and reading.pid == inst.pid
        import json
        import urllib.request

        body = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{inst.port}/healthz", timeout=5).read())
        assert body["marker"] == "instance" and body["code_dir"] == str(code) and body["worker"] == "off"
    finally:
        instances.stop(inst)
    assert not pid_alive(inst.pid)


@pytest.mark.system
def test_worker_flag_runs_a_real_prefect_worker(checkout, prefect_harness):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    project, code = checkout
    inst = _serve(code, project, worker=True, env={"PREFECT_API_URL": PREFECT_API_URL.value()})
    try:
        assert instances.wait_healthy(inst, 120).status == 200
        deadline, workers = time.monotonic() + 180, []
        with get_client(sync_client=True) as client:
            while time.monotonic() < deadline and not workers:
                try:
                    workers = client.read_workers_for_work_pool("graphlemon")
                except Exception:  # the pool appears when the worker has started
                    workers = []
                time.sleep(1)
        assert workers, "the instance's worker never registered with the Prefect server"
        import json
        import urllib.request

        assert json.loads(urllib.request.urlopen(f"http://127.0.0.1:{inst.port}/healthz").read())["worker"] == "running"
    finally:
        stop_group(inst.pid)
    assert not pid_alive(inst.pid)
