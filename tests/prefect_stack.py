"""A real Prefect stack for the deployment tests: `prefect server start` on a free port, the
process work pool `graphlemon`, `prefect deploy` from the repository's prefect.yaml and a
process worker, all in a temp PREFECT_HOME. Every process started here is stopped by process
group. Used through the session fixture `prefect_stack` (tests/conftest.py). `artifacts_keyed` reads artifacts
by key from whichever API is current (this stack or the session harness)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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
def _started(args: list[str], env: dict, log: Path) -> Iterator[subprocess.Popen]:
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


@dataclass
class PrefectStack:
    url: str
    env: dict
    worker_log: Path

    def cli(self, *args: str, cwd: Path = ROOT) -> str:
        proc = subprocess.run([*PREFECT, *args], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, f"prefect {' '.join(args)}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        return proc.stdout

    @contextmanager
    def client(self):
        """A sync Prefect client of this server (also points `prefect.flow_runs` helpers at it)."""
        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: self.url}), get_client(sync_client=True) as client:
            yield client

    def wait(self, client, run_id, done: Callable[[object], bool] | None = None, timeout: float = 240):
        """Poll the flow run until `done(state)` (default: a final state); returns the state."""
        done = done or (lambda state: state.type.value in FINAL)
        deadline = time.monotonic() + timeout
        while not done(state := client.read_flow_run(run_id).state):
            assert state.type.value not in FINAL, f"flow run ended {state.type}: {state.message}\n{self.tail()}"
            assert time.monotonic() < deadline, f"flow run stuck in {state.name}: {self.tail()}"
            time.sleep(0.5)
        return state

    def tail(self) -> str:
        return self.worker_log.read_text()[-4000:]


@contextmanager
def running_stack(
    tmp: Path,
    deployments: tuple[str, ...],
    workers: int = 1,
    limit: int | None = None,
    deploy_from: Path = ROOT,
    before_workers: Callable[[PrefectStack], None] | None = None,
) -> Iterator[PrefectStack]:
    """The server, the pool, the deployments (`prefect deploy` run in `deploy_from`, a checkout with prefect.yaml)
    and `workers` process workers named worker-1.., started in this repository (logs worker-N.log; `limit`: flow
    runs each worker runs at once; `before_workers(stack)` runs after the deploy, before any worker starts)."""
    url = f"http://127.0.0.1:{_free_port()}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp / "prefect-home"),
        "PREFECT_API_URL": url,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_WORKER_QUERY_SECONDS": "1",
        "PREFECT_LOGGING_LEVEL": "INFO",  # the workers log each flow run they submit (whatever this process set)
        "PREFECT_WORKER_PREFETCH_SECONDS": "5",
        "PREFECT_UI_API_URL": url,  # the UI (served by the same server) talks to this API
    }
    server_log, worker_log = tmp / "server.log", tmp / "worker-1.log"
    stack = PrefectStack(url, env, worker_log)
    with ExitStack() as running:
        port = url.split(":")[-1].split("/")[0]
        server = running.enter_context(
            _started([*PREFECT, "server", "start", "--host", "127.0.0.1", "--port", port], env, server_log)
        )
        _wait_healthy(url, server, server_log)
        stack.cli("work-pool", "create", "graphlemon", "--type", "process")
        stack.cli("--no-prompt", "deploy", *(arg for name in deployments for arg in ("-n", name)), cwd=deploy_from)
        if before_workers is not None:
            before_workers(stack)
        for n in range(1, workers + 1):
            args = [*PREFECT, "worker", "start", "--pool", "graphlemon", "--type", "process", "--name", f"worker-{n}"]
            running.enter_context(
                _started(args + (["--limit", str(limit)] if limit else []), env, tmp / f"worker-{n}.log")
            )
        yield stack


def artifacts_keyed(*keys: str, prefix: str | None = None) -> list:
    """Artifacts with these keys (or keys starting with `prefix`) on the current API, filtered by the server:
    an unfiltered `read_artifacts()` returns only the first page (200), too few for a session-wide harness."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    by_key = ArtifactFilterKey(like_=f"{prefix}%") if prefix is not None else ArtifactFilterKey(any_=list(keys))
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=by_key))
    return [a for a in found if prefix is None or (a.key or "").startswith(prefix)]
