"""Scale-out with no shared filesystem (docs/scale.md): unit loops on Prefect process workers that see only the
git remote, the result store and Prefect.

Two workers, each inside bubblewrap without any project folder (`remote_stack.py`: the mounts are checked, and a
probe with the same mounts cannot see the projects); one bare repository per project as its remote; a local
filesystem block as the result storage. Two goals of two projects run as devloop flows in this process with
`unit_runner=remote_pool`: every unit loop ran on the workers, both workers took some, and each project's ledger
and merged tree are those of a run whose units ran in one process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from prefect_stack import ROOT, PrefectStack
from remote_stack import remote_workers
from scale_kit import CALC, git, ledger_view, make_project, run_goal, tree

from graphlemon.project import update_settings
from graphlemon.taskboard import TaskBoard

pytestmark = [pytest.mark.system, pytest.mark.slow]


@pytest.fixture(scope="module")
def remote(prefect_server, tmp_path_factory):
    stack = PrefectStack(prefect_server.url, prefect_server.env, tmp_path_factory.mktemp("remote-logs"), 0, ROOT)
    with remote_workers(stack, tmp_path_factory.mktemp("shared")) as running:
        yield running


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> Path:
    """The calc fixture's copy in the module's own folder, which no worker sees: its playbook travels with the job."""
    copy = tmp_path_factory.mktemp("shipped") / "calc"
    shutil.copytree(CALC, copy)
    return copy


@pytest.fixture(scope="module")
def reference(shipped, tmp_path_factory):
    """The calc goal run in this process with the same playbook and settings (units here): the project, its final
    state. Every test's goal must end as this one did; no test touches it."""
    handle = make_project(tmp_path_factory.mktemp("in-process") / "calc")
    return handle, run_goal(handle, shipped, unit_runner="remote_pool")


def _project(remote, tmp, name):
    handle = make_project(tmp / name / "calc", remote=False)
    bare = remote.remotes / f"{name}.git"
    git(remote.remotes, "init", "-q", "--bare", str(bare))
    update_settings(handle, git_remote=bare.as_uri())
    return handle


CONFIG = {"max_unit_attempts": 2, "unit_runner": "remote_pool"}


def _devloop(remote, handle, shipped: Path, task_id=None):
    from prefect.settings import PREFECT_DEFAULT_RESULT_STORAGE_BLOCK, temporary_settings

    from graphlemon.flows.devloop import devloop

    with temporary_settings(updates={PREFECT_DEFAULT_RESULT_STORAGE_BLOCK: remote.block_slug}):
        state = devloop(goal="goal of calc", project=str(handle.root), executor="scripted", task_id=task_id,
                        playbook=str(shipped / "playbook.yaml"), config=CONFIG, return_state=True)  # fmt: skip
    return state.result(raise_on_failure=False)  # the task's summary, a blocked one's too


def _unit_runs(remote, keep) -> list:
    """The runs of the remote-unit-loop deployment whose job `keep(job)` accepts."""
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterName

    with remote.stack.client() as client:
        runs = client.read_flow_runs(
            deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=["remote-unit-loop"]))
        )
    return [r for r in runs if keep(r.parameters["job"])]


def test_workers_without_the_project_run_every_unit_loop_like_one_process(
    remote, shipped, reference, prefect_harness, tmp_path
):
    projects = [_project(remote, tmp_path, name) for name in ("a", "b")]
    for mounts in remote.mounts:  # the sandbox mounts no project, nor any folder holding one
        bound = [mounts[i + 2] for i, a in enumerate(mounts) if a in ("--bind", "--ro-bind")]
        for handle in projects:
            assert not any(handle.root.is_relative_to(b) or Path(b).is_relative_to(handle.root) for b in bound), bound
        seen = subprocess.run([*mounts, "ls", str(projects[0].root)], capture_output=True, text=True)
        assert seen.returncode != 0 and "No such file" in seen.stderr  # proved by looking from inside
        here = f"/proc/{os.getpid()}/root{projects[0].root}"  # nor through this process's root
        seen = subprocess.run([*mounts, "ls", here], capture_output=True, text=True)
        assert seen.returncode != 0 and "Permission denied" in seen.stderr, seen.stderr
    finals = [_devloop(remote, handle, shipped) for handle in projects]
    reference, expected = reference  # the same playbook and settings; units in one process
    task_ids = set()
    for handle, final in zip(projects, finals, strict=True):
        assert (final["status"], final["loop_round"]) == (expected.status, expected.loop_round)
        assert ledger_view(handle.state_dir) == ledger_view(reference.state_dir)
        assert tree(handle) == tree(reference)
        (task,) = TaskBoard(handle.ledger).all().values()
        task_ids.add(task.task_id)
        worktrees = handle.state_dir / "worktrees" / task.task_id
        assert sorted(p.name for p in worktrees.iterdir() if p.is_dir()) == ["_integration"]  # no unit ran here
    units = _unit_runs(remote, lambda job: job["task_id"] in task_ids)
    assert len(units) == 2 * 2  # two units (add, mul) per goal, each once, and nothing ran twice
    assert Counter(r.state.type.value for r in units) == {"COMPLETED": 4}
    by_worker = [{str(r.id) for r in units if str(r.id) in log.read_text()} for log in remote.logs]
    assert all(by_worker), f"one worker ran every unit loop: {by_worker}"
    assert set().union(*by_worker) == {str(r.id) for r in units}


def _nodes(handle) -> list[tuple]:
    from graphlemon.nodes import NodeTracker

    (task,) = TaskBoard(handle.ledger).all().values()
    return sorted((n.stage, n.unit_id or "", n.loop_round, n.attempt, n.status)
                  for n in NodeTracker(handle.ledger).for_task(task.task_id))  # fmt: skip


def test_a_devloop_killed_while_remote_units_run_takes_their_results_in_on_resume(
    remote, shipped, reference, prefect_harness, tmp_path
):
    handle = _project(remote, tmp_path, "killed")
    mine = lambda job: job["remote"] == (remote.remotes / "killed.git").as_uri()  # noqa: E731
    script = ("import json, sys; from graphlemon.flows.devloop import devloop; devloop(goal='goal of calc', project=sys.argv[1], "
              "executor='scripted', playbook=sys.argv[2], config=json.loads(sys.argv[3]))")  # fmt: skip
    env = {**remote.stack.env, "PREFECT_DEFAULT_RESULT_STORAGE_BLOCK": remote.block_slug}
    proc = subprocess.Popen([sys.executable, "-c", script, str(handle.root), str(CALC / "playbook.yaml"),
                             json.dumps(CONFIG)], cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 180
    while len(_unit_runs(remote, mine)) < 2:  # both units of the wave were started on the pool
        assert proc.poll() is None and time.monotonic() < deadline, "the devloop never started its unit loops"
        time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    started = {r.id for r in _unit_runs(remote, mine)}
    (task,) = TaskBoard(handle.ledger).all().values()
    assert not task.terminal
    final = _devloop(remote, handle, shipped, task_id=task.task_id)
    assert final["status"] == "done"
    assert {r.id for r in _unit_runs(remote, mine)} == started  # their results were taken in, nothing ran again
    reference, _ = reference
    assert _nodes(handle) == _nodes(reference)
    assert tree(handle) == tree(reference)
    for path in handle.state_dir.glob("*.ndjson"):  # nothing taken in twice
        lines = path.read_text().splitlines()
        assert len(lines) == len(set(lines)), path.name


class _NoSnapshots:
    """A result store that loses every snapshot the devloop writes (as a misconfigured store would): each remote
    unit run fails reading its snapshot, without a result."""

    def __init__(self, store) -> None:
        self.store = store

    def read_path(self, path: str) -> bytes:
        return self.store.read_path(path)

    def write_path(self, path: str, content: bytes) -> None:
        return None


def test_a_unit_that_failed_twice_runs_again_on_resume_once_its_cause_is_fixed(
    remote, shipped, reference, prefect_harness, tmp_path, monkeypatch
):
    import graphlemon.flows.remote_units as remote_units

    handle = _project(remote, tmp_path, "fixed")
    mine = lambda job: job["remote"] == (remote.remotes / "fixed.git").as_uri()  # noqa: E731
    real = remote_units.result_store
    monkeypatch.setattr(remote_units, "result_store", lambda: _NoSnapshots(real()))
    blocked = _devloop(remote, handle, shipped)
    assert blocked["status"] == "blocked_pending_human", blocked
    failed = _unit_runs(remote, mine)
    assert Counter(r.state.type.value for r in failed) == {"FAILED": 2 * 2}, failed  # two units, two runs each
    (task,) = TaskBoard(handle.ledger).all().values()
    assert "2 times without a result" in task.note and "does not exist" in task.note, task.note  # the child's error
    not_resumed = _devloop(remote, handle, shipped, task_id=task.task_id)  # a run of a blocked task: no unit run
    assert not_resumed["status"] == "blocked_pending_human"
    assert len(_unit_runs(remote, mine)) == 4
    monkeypatch.setattr(remote_units, "result_store", real)  # the cause fixed
    TaskBoard(handle.ledger).manual_resume(task.task_id, note="the store is fixed")
    assert _devloop(remote, handle, shipped, task_id=task.task_id)["status"] == "done"
    runs = _unit_runs(remote, mine)
    fresh = [r for r in runs if r.id not in {f.id for f in failed}]
    assert Counter(r.state.type.value for r in fresh) == {"COMPLETED": 2}  # one new run per unit, each finished
    reference, _ = reference
    assert tree(handle) == tree(reference)
    for path in handle.state_dir.glob("*.ndjson"):  # nothing taken in twice
        lines = path.read_text().splitlines()
        assert len(lines) == len(set(lines)), path.name


STALE_S = 5  # the silence after which the devloop calls a run's worker gone (default 30 s; a beat every 1 s here)


def _flow_run_pids(flow_run_id: str) -> list[int]:
    """This user's processes whose environment names the flow run (Prefect sets PREFECT__FLOW_RUN_ID in it)."""
    mark = f"PREFECT__FLOW_RUN_ID={flow_run_id}".encode()
    pids = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if mark in environ.read_bytes().split(b"\0"):
                pids.append(int(environ.parent.name))
        except OSError:
            continue
    return pids


def _ancestors(pid: int) -> list[int]:
    chain = []
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state: the parent's pid
        chain.append(pid)
    return chain


def test_a_worker_killed_with_its_flow_run_mid_unit_is_noticed_and_the_unit_re_run_on_the_other(
    remote, shipped, reference, prefect_harness, tmp_path, monkeypatch
):
    """Last in this module: it kills one of the module's two workers."""
    import contextvars
    import threading
    from datetime import UTC, datetime

    monkeypatch.setenv("GRAPHLEMON_REMOTE_HEARTBEAT_S", "1")
    monkeypatch.setenv("GRAPHLEMON_REMOTE_STALE_S", str(STALE_S))
    handle = _project(remote, tmp_path, "lost")
    mine = lambda job: job["remote"] == (remote.remotes / "lost.git").as_uri()  # noqa: E731
    out: dict = {}
    goal = threading.Thread(target=contextvars.copy_context().run,
                            args=(lambda: out.update(final=_devloop(remote, handle, shipped)),))  # fmt: skip
    goal.start()
    deadline = time.monotonic() + 300
    while True:  # a unit run mid-unit: running, its heartbeat in the store
        running = [r for r in _unit_runs(remote, mine) if r.state.type.value == "RUNNING"
                   and (remote.results / "graphlemon-heartbeats" / str(r.id)).is_file()]  # fmt: skip
        if running:
            break
        assert goal.is_alive() and time.monotonic() < deadline, f"no unit run got going: {out}"
        time.sleep(0.2)
    victim = running[0]
    pids = _flow_run_pids(str(victim.id))
    assert pids, "the flow run's process was not found"
    (n,) = {n for pid in pids for n, proc in enumerate(remote.procs) if proc.pid in _ancestors(pid)}  # its worker
    killed_at = datetime.now(UTC)
    os.killpg(remote.procs[n].pid, signal.SIGKILL)  # the worker (its sandbox's whole process group) ...
    for pid in pids:  # ... and its flow run, which Prefect starts in a session of its own
        try:
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    remote.procs[n].wait(10)
    goal.join(600)
    assert not goal.is_alive() and out["final"]["status"] == "done", out
    runs = {str(r.id): r for r in _unit_runs(remote, mine)}
    lost = runs[str(victim.id)]
    assert lost.state.type.value == "CRASHED" and "its worker is gone" in lost.state.message, lost.state
    (rerun,) = [r for r in runs.values() if r.parameters["job"]["unit_id"] == victim.parameters["job"]["unit_id"]
                and str(r.id) != str(victim.id)]  # fmt: skip
    assert rerun.state.type.value == "COMPLETED"  # on the other worker: the killed one is gone
    assert remote.procs[n].poll() is not None
    seconds = (rerun.created - killed_at).total_seconds()
    print(f"\nfrom the worker's death to the re-run: {seconds:.1f} s (bound: {STALE_S} s of silence + 1 s poll)")
    assert seconds < STALE_S + 1 + 20, seconds  # the bound, and a loaded machine's margin for the API calls
    reference, _ = reference
    assert _nodes(handle) == _nodes(reference)
    assert tree(handle) == tree(reference)
    for path in handle.state_dir.glob("*.ndjson"):  # nothing lost (the same nodes), nothing taken in twice
        lines = path.read_text().splitlines()
        assert len(lines) == len(set(lines)), path.name


def test_a_remote_pool_run_without_a_result_store_is_refused_before_the_loop_and_the_task_stays(
    prefect_harness, tmp_path, monkeypatch
):
    """Without PREFECT_DEFAULT_RESULT_STORAGE_BLOCK a devloop run with `unit_runner: remote_pool` (a resume too) is
    refused at its start with words: the task is never turned into `stage_failed`."""
    from graphlemon.errors import ErrorCode, GraphLemonError
    from graphlemon.flows.devloop import devloop

    monkeypatch.delenv("PREFECT_DEFAULT_RESULT_STORAGE_BLOCK", raising=False)
    handle = make_project(tmp_path / "calc", remote=False)
    task = TaskBoard(handle.ledger).create("goal of calc")
    with pytest.raises(GraphLemonError) as err:
        devloop(project=str(handle.root), executor="scripted", task_id=task.task_id,
                playbook=str(CALC / "playbook.yaml"), config=CONFIG)  # fmt: skip
    assert err.value.code == ErrorCode.INVALID_PARAM and "PREFECT_DEFAULT_RESULT_STORAGE_BLOCK" in err.value.message
    assert TaskBoard(handle.ledger).get(task.task_id).status == task.status  # untouched
