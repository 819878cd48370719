"""Steps a resumed run replays after a kill: their events written once, their commits found again."""

from __future__ import annotations

import subprocess

from graphlemon.devloop.loop import _route_once
from graphlemon.models import TimelineEvent
from graphlemon.nodes import node_exec_id
from graphlemon.stages.outcomes import Noted


def _routed(session) -> list[tuple[str, str]]:
    return [(e.ref, e.summary) for e in session.ledger.read_as("timeline", TimelineEvent) if e.event == "routed"]


def test_a_routed_event_is_written_once_per_round_and_after_a_kill_that_followed_the_old_record(session):
    _route_once(session, 1, "round 1: fast lane for mul")
    _route_once(session, 1, "round 1: fast lane for mul (replayed)")
    assert _routed(session) == [("route-r1", "round 1: fast lane for mul")]
    # a run killed between the older step record and its event: the record alone, no event; the replay writes it
    session.save_outcome(node_exec_id(session.task_id, "validator", loop_round=2), Noted(summary="x"), "routed")
    _route_once(session, 2, "round 2: full replan")
    assert _routed(session)[-1] == ("route-r2", "round 2: full replan")


def test_a_commit_replayed_after_a_kill_returns_the_commit_it_made(session):
    root = session.project.root
    (root / "README.md").write_text("repo\n", encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"], cwd=root, check=True)
    worktree = session.worktrees.integration()
    (worktree.path / "a.py").write_text("A = 1\n", encoding="utf-8")
    message = "coder: a attempt 1: add A"
    made = session.worktrees.commit_all(worktree, message)
    assert made and session.worktrees.commit_files(worktree, made) == ["a.py"]
    assert session.worktrees.commit_all(worktree, message) == made  # the replay finds its commit
    assert session.worktrees.commit_all(worktree, "coder: a attempt 2: nothing") is None  # nothing new: no commit
