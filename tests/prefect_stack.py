"""One real Prefect stack for the whole test session: `prefect server start` on a free port in a temp PREFECT_HOME
(the API of the flows the tests run in-process, session fixture `prefect_harness`), and on the same server the
process work pool `graphlemon`, `prefect deploy` from the repository's prefect.yaml and process workers (session
fixture `prefect_stack`), each started by the first test that needs it (tests/conftest.py). Every process started
here is stopped by process group. Tests sharing the stack tell their runs apart by id, project and task, never by
reading everything on the server. `artifacts_keyed` reads artifacts by key from the current API."""

from __future__ import annotations

import inspect
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PREFECT = [sys.executable, "-m", "prefect"]
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def told_why_it_waits(state) -> bool:
    """A suspended run whose state says why it waits: `suspend_flow_run` sets Suspended first, then the flow sets
    the same state again with its message, so a poll between the two sees no message yet."""
    return state.name == "Suspended" and bool(state.message)


DEPLOYMENTS = ("devloop", "unit-loop", "reports")  # of prefect.yaml, on the session's stack
COPY_IGNORE = shutil.ignore_patterns(".venv", ".git", "tests", "node_modules", "__pycache__", "*.egg-info", ".*cache")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(*procs: subprocess.Popen, grace: float = 10) -> None:
    """SIGTERM each process group at once, SIGKILL those that have not exited after one shared `grace` of seconds
    (a worker can sit out a SIGTERM: several stopped one after the other cost a grace each)."""
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in procs:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # also any child left in the group
        except ProcessLookupError:
            pass
        proc.wait(5)


def _popen(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


@contextmanager
def _started(*commands: tuple[list[str], Path], env: dict) -> Iterator[list[subprocess.Popen]]:
    """Each (args, log) started in its own process group; all stopped together on exit."""
    procs: list[subprocess.Popen] = []
    try:
        for args, log in commands:
            procs.append(_popen(args, env, log))
        yield procs
    finally:
        _stop(*procs)


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
    folder: Path  # the server's and the workers' logs
    workers: int
    deployed_from: Path

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

    def run_tree(self, client, run_id) -> list:
        """The ids of the flow run and of every subflow run under it, however deep."""
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

        tree, parents = [run_id], [run_id]
        while parents:
            below = FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=parents))
            parents = [r.id for r in client.read_flow_runs(flow_run_filter=below)]
            tree += parents
        return tree

    def worker_log(self, n: int) -> Path:
        return self.folder / f"worker-{n}.log"

    def tail(self) -> str:
        """The end of each worker's log."""
        return "\n".join(f"-- worker-{n}\n{self.worker_log(n).read_text()[-3000:]}" for n in range(1, self.workers + 1))


@dataclass
class PrefectServer:
    url: str
    env: dict
    tmp: Path


@contextmanager
def running_server(tmp: Path) -> Iterator[PrefectServer]:
    """`prefect server start` on a free port with its own PREFECT_HOME (and database) in `tmp`."""
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
    port = url.split(":")[-1].split("/")[0]
    log = tmp / "server.log"
    with _started(([*PREFECT, "server", "start", "--host", "127.0.0.1", "--port", port], log), env=env) as (server,):
        _wait_healthy(url, server, log)
        yield PrefectServer(url, env, tmp)


@contextmanager
def stack_on(
    server: PrefectServer,
    deployments: tuple[str, ...],
    workers: int = 1,
    limit: int | None = None,
    deploy_from: Path = ROOT,
    before_workers: Callable[[PrefectStack], None] | None = None,
) -> Iterator[PrefectStack]:
    """On a running server: the pool, the deployments (`prefect deploy` run in `deploy_from`, a checkout with
    prefect.yaml) and `workers` process workers named worker-1.., started in this repository (logs worker-N.log in
    the server's folder; `limit`: flow runs each worker runs at once; `before_workers(stack)` runs after the deploy,
    before any worker starts)."""
    stack = PrefectStack(server.url, server.env, server.tmp, workers, deploy_from)
    # --overwrite: an earlier deploy may have made the pool
    stack.cli("work-pool", "create", "graphlemon", "--type", "process", "--overwrite")
    stack.cli("--no-prompt", "deploy", *(arg for name in deployments for arg in ("-n", name)), cwd=deploy_from)
    if before_workers is not None:
        before_workers(stack)
    pool = [*PREFECT, "worker", "start", "--pool", "graphlemon", "--type", "process"]
    commands = [
        ([*pool, "--name", f"worker-{n}", *(["--limit", str(limit)] if limit else [])], stack.worker_log(n))
        for n in range(1, workers + 1)
    ]
    with _started(*commands, env=server.env):
        yield stack


@contextmanager
def deployed_from_a_deleted_copy(server: PrefectServer, tmp: Path) -> Iterator[PrefectStack]:
    """The session's stack: the devloop, unit-loop and reports deployments made with `prefect deploy` from a copy of
    this repository that is deleted before the workers start (nothing of the deploying folder is needed at run time:
    the pull step runs the worker's own GraphLemon), and two process workers running at most three flow runs each."""
    copy = tmp / "elsewhere" / "graphlemon-copy"
    shutil.copytree(ROOT, copy, ignore=COPY_IGNORE)
    with stack_on(
        server, DEPLOYMENTS, workers=2, limit=3, deploy_from=copy, before_workers=lambda _: shutil.rmtree(copy.parent)
    ) as stack:
        yield stack


@contextmanager
def running_stack(tmp: Path, deployments: tuple[str, ...], **options) -> Iterator[PrefectStack]:
    """A stack with a server of its own in `tmp` (`options` as for `stack_on`): only for a test the session's stack
    cannot serve (one that needs a pool with no worker, say); it costs a server start."""
    with running_server(tmp) as server, stack_on(server, deployments, **options) as stack:
        yield stack


@contextmanager
def current_api(server: PrefectServer) -> Iterator[None]:
    """`server` as this process's Prefect API (what `prefect_test_harness` does with a server of its own): flows run
    in this process report to it; on exit the log and event workers are drained before anything stops."""
    import prefect.context
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def drain() -> None:
        try:
            drained = APILogWorker.instance().drain()
            if inspect.isawaitable(drained):
                await drained
        except RuntimeError:  # no log was ever sent
            pass
        drained = EventsWorker.drain_all()
        if inspect.isawaitable(drained):
            await drained

    with temporary_settings(updates={PREFECT_API_URL: server.url}):
        with prefect.context._temporary_global_settings_context(prefect.context.get_settings_context()):
            yield
            run_coro_as_sync(drain())


def artifacts_keyed(*keys: str, prefix: str | None = None) -> list:
    """Artifacts with these keys (or keys starting with `prefix`) on the current API, filtered by the server:
    an unfiltered `read_artifacts()` returns only the first page (200), too few for a session-wide harness."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    by_key = ArtifactFilterKey(like_=f"{prefix}%") if prefix is not None else ArtifactFilterKey(any_=list(keys))
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=by_key))
    return [a for a in found if prefix is None or (a.key or "").startswith(prefix)]
