"""Issue 24.6: a killed run's test-runner scratch folder is swept at the next start-up (only folders whose
process has ended), and `graphlemon gc` removes the worktrees and merged branches of finished tasks —
with --dry-run, and never touching a blocked task or work that is not in HEAD."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _loop_helpers import CALC
from conftest import make_repo, playbook_variant, turn

from graphlemon.devloop.loop import run_devloop
from graphlemon.devloop.stages import Stages
from graphlemon.stages.session import LoopConfig, LoopSession
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system

GRAPHLEMON = str(Path(sys.executable).parent / "graphlemon")


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([GRAPHLEMON, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})  # fmt: skip


def _branches(root: Path, task_id: str) -> list[str]:
    out = subprocess.run(["git", "branch", "--list", f"graphlemon/{task_id}/*", "--format=%(refname:short)"],
                         cwd=root, capture_output=True, text=True, check=True)  # fmt: skip
    return out.stdout.split()


def test_a_killed_runs_scratch_folder_is_swept_at_the_next_start_but_a_live_ones_is_kept(tmp_path):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "ANTHROPIC_API_KEY": ""}
    killed = subprocess.Popen([GRAPHLEMON, "test", "--command", "sleep 60", "--timeout", "120", "-p", str(project.root)],
                              env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 60
    while not list(tmp.glob("graphlemon-testrun-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(killed.pid, signal.SIGKILL)  # the run and its `sleep`, as a kill -9 of the whole job would
    killed.wait()
    [left] = list(tmp.glob("graphlemon-testrun-*"))  # the folder a killed run cannot remove itself
    live = tmp / f"graphlemon-testrun-{os.getpid()}-live"  # a running process's folder (this test's)
    live.mkdir()
    other = tmp / "graphlemon-other-1"
    other.mkdir()

    book = tmp_path / "pb.yaml"
    book.write_text("version: 1\nturns:\n  - match: {role: planner}\n    raise: {error: executor_error}\n")
    _cli("run", "a goal", "--engine", "direct", "--playbook", str(book), "--quiet", "-p", str(project.root), env=env)
    assert not left.exists() and live.exists() and other.exists()


def test_gc_removes_finished_tasks_worktrees_and_merged_branches_and_keeps_everything_else(tmp_path):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    board = TaskBoard(project.ledger)
    done = board.create("Build calc")
    session = LoopSession(project, done.task_id, LoopConfig(playbook=CALC / "playbook.yaml"))
    assert run_devloop(session, Stages(session.run)).status == "done"

    def mul_down(data):
        turn(data, role="coder", unit="mul")["raise"] = {"error": "executor_error", "message": "down"}

    blocked = board.create("Build calc again")
    other = LoopSession(project, blocked.task_id, LoopConfig(playbook=playbook_variant(tmp_path, CALC, mul_down)))
    assert run_devloop(other, Stages(other.run)).status == "blocked_pending_human"
    blocked_worktrees = sorted(p.name for p in (project.state_dir / "worktrees" / blocked.task_id).glob("*"))
    blocked_branches = _branches(project.root, blocked.task_id)
    assert blocked_branches

    done_worktrees = project.state_dir / "worktrees" / done.task_id
    assert list(done_worktrees.glob("*/.git"))
    side = f"graphlemon/{done.task_id}/side"  # a branch of the done task whose commit is not in HEAD
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "side"],
                   cwd=done_worktrees / "add", check=True)  # fmt: skip
    subprocess.run(["git", "branch", side], cwd=done_worktrees / "add", check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "HEAD~1"], cwd=done_worktrees / "add", check=True)
    before = _branches(project.root, done.task_id)

    dry = _cli("gc", "--dry-run", "--json", "-p", str(project.root))
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)["items"]
    assert {i["target"] for i in plan if i["action"] == "delete_branch"} == set(before) - {side}
    assert {(i["target"], i["reason"]) for i in plan if i["action"] == "keep"} == {
        (side, "its commits are not in HEAD")
    }
    assert _branches(project.root, done.task_id) == before and list(done_worktrees.glob("*/.git"))  # nothing changed

    real = _cli("gc", "-p", str(project.root))
    assert real.returncode == 0, real.stderr
    assert "removed worktree" in real.stdout and f"kept {side} (its commits are not in HEAD)" in real.stdout
    assert _branches(project.root, done.task_id) == [side]
    assert not done_worktrees.exists()
    assert sorted(p.name for p in (project.state_dir / "worktrees" / blocked.task_id).glob("*")) == blocked_worktrees
    assert _branches(project.root, blocked.task_id) == blocked_branches
    tracked = subprocess.run(["git", "ls-files"], cwd=project.root, capture_output=True, text=True).stdout
    assert "calc/add.py" in tracked and "calc/mul.py" in tracked  # the work is in HEAD
    assert _cli("gc", "-p", str(project.root)).stdout.strip() == f"kept {side} (its commits are not in HEAD)"
