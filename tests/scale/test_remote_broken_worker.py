"""A worker missing a dependency (docs/scale.md, "Workers are checked before they get work"): its unit runs cannot
even import the flow and end Crashed ("Process exited with status code: 1"); the import error the child run
logged — not only "Crashed" — reaches the blocked task's note, which is what the person reads.

Two process workers, each in its bubblewrap sandbox (remote_stack.py), on a pool of their own, GitPython's package
folder an empty folder there: the engine's `load_flow` fails importing `graphlemon.worktrees` (`from git import Repo`).
Two workers, so that the two units' runs crash side by side (one worker ran the four one after the other)."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest
from prefect_stack import ROOT, PrefectStack
from remote_stack import remote_workers
from scale_kit import CALC, git, make_project

from graphlemon.project import update_settings
from graphlemon.taskboard import TaskBoard

pytestmark = [pytest.mark.system, pytest.mark.slow]

POOL = "graphlemon-no-gitpython"


@pytest.fixture(scope="module")
def broken(prefect_server, tmp_path_factory):
    (gitpython,) = importlib.util.find_spec("git").submodule_search_locations
    stack = PrefectStack(prefect_server.url, prefect_server.env, tmp_path_factory.mktemp("broken-logs"), 0, ROOT)
    with remote_workers(stack, tmp_path_factory.mktemp("shared"), pool=POOL,
                        hidden=(Path(gitpython),)) as running:  # fmt: skip
        yield running


def test_the_import_error_of_a_worker_missing_a_dependency_reaches_the_blocked_tasks_note(
    broken, prefect_harness, tmp_path
):
    from prefect.client.schemas.filters import WorkPoolFilter, WorkPoolFilterName
    from prefect.settings import PREFECT_DEFAULT_RESULT_STORAGE_BLOCK, temporary_settings

    from graphlemon.flows.devloop import devloop

    handle = make_project(tmp_path / "calc", remote=False)
    bare = broken.remotes / "calc.git"
    git(broken.remotes, "init", "-q", "--bare", str(bare))
    update_settings(handle, git_remote=bare.as_uri())
    with temporary_settings(updates={PREFECT_DEFAULT_RESULT_STORAGE_BLOCK: broken.block_slug}):
        state = devloop(goal="goal of calc", project=str(handle.root), executor="scripted",
                        playbook=str(CALC / "playbook.yaml"), return_state=True,
                        config={"max_unit_attempts": 2, "unit_runner": "remote_pool"})  # fmt: skip
    assert state.result(raise_on_failure=False)["status"] == "blocked_pending_human"
    with broken.stack.client() as client:
        runs = client.read_flow_runs(work_pool_filter=WorkPoolFilter(name=WorkPoolFilterName(any_=[POOL])))
    assert Counter(r.state.type.value for r in runs) == {"CRASHED": 2 * 2}, [  # two units, two runs each
        (r.name, r.state) for r in runs
    ]
    assert all(r.state.message.startswith("Process exited with status code: 1") for r in runs)
    (task,) = TaskBoard(handle.ledger).all().values()
    assert "2 times without a result" in task.note, task.note
    said = "ended Crashed: Unexpected exception encountered when trying to load flow: ImportError: cannot import name"
    assert task.note.count(said) == 2 and "from 'git'" in task.note, task.note
