"""Cancel and Delete of a remote unit run (in the Prefect UI, or the same request through the API) read as what
they mean (docs/scale.md, "A worker that dies"): Cancel is a person's stop of the task, recorded on its lease and
served at the next safe point; Delete ends the wait, and a unit whose runs were deleted stops with words naming
them — never `ObjectNotFound: None`.

A real Prefect server, the remote-unit-loop deployment on a pool no worker polls (remote_stack.py with no
workers): every unit run stays Scheduled until the test acts on it, as a person would in the UI."""

from __future__ import annotations

import threading
import time

import pytest
from prefect_stack import ROOT, PrefectStack
from remote_stack import remote_workers
from scale_kit import CALC, git, make_project

from graphlemon.project import update_settings
from graphlemon.taskboard import TaskBoard

pytestmark = [pytest.mark.system, pytest.mark.slow]

POOL = "graphlemon-nobody-polls"


@pytest.fixture(scope="module")
def idle(prefect_server, tmp_path_factory):
    stack = PrefectStack(prefect_server.url, prefect_server.env, tmp_path_factory.mktemp("idle-logs"), 0, ROOT)
    with remote_workers(stack, tmp_path_factory.mktemp("shared"), workers=0, pool=POOL) as running:
        yield running


def _started(idle, tmp_path, monkeypatch):
    """A devloop with remote units, run in a thread; -> (its project, the thread, what it returned)."""
    from prefect.settings import PREFECT_DEFAULT_RESULT_STORAGE_BLOCK, temporary_settings

    from graphlemon.flows.devloop import devloop

    monkeypatch.setenv("GRAPHLEMON_REMOTE_STALE_S", "3")  # a Cancelling run no worker holds is closed after 3 s
    handle = make_project(tmp_path / "calc", remote=False)
    bare = idle.remotes / f"{tmp_path.name}.git"
    git(idle.remotes, "init", "-q", "--bare", str(bare))
    update_settings(handle, git_remote=bare.as_uri())
    ended: dict = {}

    def run() -> None:
        with temporary_settings(updates={PREFECT_DEFAULT_RESULT_STORAGE_BLOCK: idle.block_slug}):
            state = devloop(goal="goal of calc", project=str(handle.root), executor="scripted",
                            playbook=str(CALC / "playbook.yaml"), return_state=True,
                            config={"max_unit_attempts": 2, "unit_runner": "remote_pool"})  # fmt: skip
        ended["summary"] = state.result(raise_on_failure=False)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return handle, thread, ended


def _scheduled(client, bare_uri: str, seen: set, timeout: float = 240) -> list:
    """The unit runs of this project's goal that are Scheduled and not acted on yet (waits for at least one)."""
    from prefect.client.schemas.filters import WorkPoolFilter, WorkPoolFilterName

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = client.read_flow_runs(work_pool_filter=WorkPoolFilter(name=WorkPoolFilterName(any_=[POOL])))
        fresh = [r for r in runs if r.parameters["job"]["remote"] == bare_uri and r.id not in seen
                 and r.state.type.value == "SCHEDULED"]  # fmt: skip
        if fresh:
            return fresh
        time.sleep(0.5)
    raise AssertionError("no unit run was scheduled")


def test_delete_of_a_unit_run_ends_its_wait_and_the_unit_stops_naming_the_deleted_runs(
    idle, prefect_harness, tmp_path, monkeypatch
):
    handle, thread, ended = _started(idle, tmp_path, monkeypatch)
    bare_uri = (idle.remotes / f"{tmp_path.name}.git").as_uri()
    deleted: set = set()
    with idle.stack.client() as client:
        while thread.is_alive() and len(deleted) < 4:  # two units, two runs each
            for run in _scheduled(client, bare_uri, deleted):
                client.delete_flow_run(run.id)  # what Delete in the UI sends
                deleted.add(run.id)
    thread.join(timeout=120)
    assert not thread.is_alive() and ended["summary"]["status"] == "blocked_pending_human", ended
    (task,) = TaskBoard(handle.ledger).all().values()
    assert "ObjectNotFound" not in task.note, task.note
    assert "2 times without a result" in task.note, task.note
    assert task.note.count("ended Deleted: it was deleted (in the Prefect UI or through its API)") == 2, task.note
    assert sum(str(run_id) in task.note for run_id in deleted) == 2, task.note  # the unit's two runs, by id


def test_cancel_of_a_unit_run_is_a_persons_stop_recorded_on_the_lease_and_served(
    idle, prefect_harness, tmp_path, monkeypatch
):
    from prefect.client.schemas.objects import StateType
    from prefect.states import State

    from graphlemon.models import LeaseEvent

    handle, thread, ended = _started(idle, tmp_path, monkeypatch)
    bare_uri = (idle.remotes / f"{tmp_path.name}.git").as_uri()
    with idle.stack.client() as client:
        (first, *_) = _scheduled(client, bare_uri, set())
        client.set_flow_run_state(first.id, State(type=StateType.CANCELLING))  # Cancel in the UI
    thread.join(timeout=180)
    assert not thread.is_alive(), "the devloop still waits after the Cancel"
    (task,) = TaskBoard(handle.ledger).all().values()
    assert (task.status, task.blocked_reason) == ("blocked_pending_human", "stopped_by_person"), task
    stops = [e for e in handle.ledger.read_as("lease", LeaseEvent) if e.event == "stop_requested"]
    assert [s.by for s in stops] == ["a person (Cancel in the Prefect UI)"], stops
    assert str(first.id) in stops[0].note
    with idle.stack.client() as client:
        assert client.read_flow_run(first.id).state.type.value == "CANCELLED"  # not left Cancelling
