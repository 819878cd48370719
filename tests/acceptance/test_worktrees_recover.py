"""A run killed inside `git worktree add` leaves a half-made worktree: the next run removes it and makes it again."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CALC, make_repo
from git import Repo

from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.worktrees import Worktrees


def half_made(wt_path: Path) -> Path:
    """What SIGKILL inside `git worktree add` leaves: the .git pointer written, the admin dir still locked as
    'initializing' and without HEAD / commondir."""
    admin = Path((wt_path / ".git").read_text().removeprefix("gitdir:").strip())
    for name in ("HEAD", "commondir", "ORIG_HEAD", "index"):
        (admin / name).unlink(missing_ok=True)
    (admin / "locked").write_text("initializing\n")
    return admin


@pytest.mark.parametrize("unit", ["add", "integration"])
def test_recover_removes_a_half_made_worktree_and_the_unit_gets_a_fresh_one(tmp_path, unit):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    trees = Worktrees(project.root, "task-1", project.state_dir)
    made = trees.integration() if unit == "integration" else trees.unit(unit)
    (made.path / "kept.txt").write_text("committed work\n")
    trees.commit_all(made, "work before the crash")
    admin = half_made(made.path)

    repaired = Worktrees(project.root, "task-1", project.state_dir).recover()
    assert repaired == [f"{made.path.name}: removed a worktree that `git worktree add` had not finished"]
    assert not made.path.exists() and not admin.exists()

    again = trees.integration() if unit == "integration" else trees.unit(unit)
    assert (again.path / "kept.txt").read_text() == "committed work\n"  # the branch and its commits survive
    assert again.repo.active_branch.name == trees.branch(unit) and not again.repo.is_dirty()
    assert Worktrees(project.root, "task-1", project.state_dir).recover() == []  # nothing left to repair
    assert "initializing" not in Repo(project.root).git.worktree("list", "--porcelain")


@pytest.mark.parametrize("merge_head", [False, True])
def test_a_merge_killed_before_its_commit_runs_again_whole(tmp_path, merge_head):
    """SIGKILL inside `git merge`, after it wrote the merge result and before the commit, leaves the result staged
    (with no MERGE_HEAD when the merge had no conflict): the next merge of the unit undoes it and merges again."""
    project = make_repo(tmp_path / "calc", CALC / "repo")
    trees = Worktrees(project.root, "task-1", project.state_dir)
    unit = trees.unit("add")
    (unit.path / "calc" / "add.py").write_text("def add(a, b):\n    return a + b\n")
    (unit.path / "green.txt").write_text("green\n")
    trees.commit_all(unit, "add: green")
    integration = trees.integration()
    before = integration.head()
    integration.repo.git.merge("--no-ff", "--no-commit", trees.branch("add"))  # the state the kill leaves
    if not merge_head:
        admin = Path((integration.path / ".git").read_text().removeprefix("gitdir:").strip())
        for name in ("MERGE_HEAD", "MERGE_MSG", "MERGE_MODE"):
            (admin / name).unlink(missing_ok=True)
    (integration.path / "notes.local").write_text("not staged: kept\n")

    head = Worktrees(project.root, "task-1", project.state_dir).merge_into_integration("add", "graphlemon: add green")
    merged = integration.repo.commit(head)
    assert head != before and [p.hexsha for p in merged.parents] == [before, unit.head()]
    assert (integration.path / "green.txt").read_text() == "green\n"
    assert (integration.path / "notes.local").read_text() == "not staged: kept\n"
    assert not integration.repo.is_dirty(untracked_files=False)


def test_a_damaged_worktree_that_git_did_finish_is_reported_not_deleted(tmp_path):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    trees = Worktrees(project.root, "task-1", project.state_dir)
    made = trees.unit("add")
    (made.path / "draft.py").write_text("uncommitted work\n")
    admin = Path((made.path / ".git").read_text().removeprefix("gitdir:").strip())
    (admin / "HEAD").write_text("garbage\n")  # damaged after the fact: not a half-made worktree
    with pytest.raises(GraphLemonError) as info:
        Worktrees(project.root, "task-1", project.state_dir).recover()
    assert info.value.code == ErrorCode.GIT_ERROR and str(made.path) in info.value.message
    assert (made.path / "draft.py").read_text() == "uncommitted work\n"  # nothing deleted


def test_recover_drops_the_locks_a_git_command_killed_mid_commit_left(tmp_path):
    """SIGKILL inside `git commit` in a worktree leaves HEAD.lock / index.lock in its git dir and the branch's ref
    lock: the next commit fails ("cannot lock ref 'HEAD'") until recover drops them."""
    project = make_repo(tmp_path / "calc", CALC / "repo")
    trees = Worktrees(project.root, "task-1", project.state_dir)
    made = trees.integration()
    admin = Path((made.path / ".git").read_text().removeprefix("gitdir:").strip())
    ref_lock = Path(Repo(project.root).git_dir) / "refs" / "heads" / f"{made.branch}.lock"
    for lock in (admin / "HEAD.lock", admin / "index.lock", ref_lock):
        lock.write_text("")
    (made.path / "new.txt").write_text("work\n")
    with pytest.raises(GraphLemonError):
        trees.commit_all(made, "blocked by the stale locks")

    repaired = Worktrees(project.root, "task-1", project.state_dir).recover()
    name = made.path.name
    assert repaired == [f"{name}: removed a stale HEAD.lock", f"{name}: removed a stale index.lock",
                        f"{name}: removed a stale lock on refs/heads/{made.branch}"]  # fmt: skip
    assert trees.commit_all(made, "after recover") and not made.repo.is_dirty()
    assert Worktrees(project.root, "task-1", project.state_dir).recover() == []
