"""A revert never deletes what it cannot restore byte for byte, and never follows a link a turn left.

The turn's effects are planted by the test itself (files written, a folder swapped for a link to a canary folder
the test made); then the same checks a real turn gets run: `TreeGuard.judge` (effects.py), `worktree.restore`
(claude_code's diff) and `git_ignored.judge_ignored`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from graphlemon.agents import git_guard, git_ignored, worktree
from graphlemon.agents.effects import NOT_PUT_BACK, TreeGuard
from graphlemon.agents.executor_seam import SandboxPolicy
from graphlemon.agents.kept_files import Keeper
from graphlemon.agents.sandbox import Sandbox

CANARY = "canary-bytes-5d0a"


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("APP\n")
    (root / ".gitignore").write_text("data/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    return root


def _sandbox(root: Path, writable=("tests/**",)) -> Sandbox:
    return Sandbox(SandboxPolicy(root=root, writable=list(writable)))


def test_an_untracked_file_whose_bytes_were_not_kept_is_left_not_deleted(repo):
    big = repo / "dataset.csv"  # the person's untracked file, larger than anything the guard keeps here
    big.write_bytes(b"x" * 5000)
    guard = TreeGuard(_sandbox(repo), keeper=Keeper(in_memory=100, spill=100))
    big.write_bytes(b"y" * 5000)  # the turn touched it
    [refusal] = guard.judge()
    assert not refusal.put_back and refusal.why.endswith(NOT_PUT_BACK)
    assert big.read_bytes() == b"y" * 5000  # left as the turn left it: never deleted


def test_a_large_file_kept_aside_is_put_back_byte_for_byte(repo):
    big = repo / "dataset.csv"
    original = os.urandom(300_000)
    big.write_bytes(original)
    guard = TreeGuard(_sandbox(repo), keeper=Keeper(in_memory=1000, spill=1_000_000))
    big.unlink()
    [refusal] = guard.judge()
    assert refusal.put_back and big.read_bytes() == original


def test_a_folder_swapped_for_a_link_is_never_written_or_deleted_through(repo, tmp_path):
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "app.py").write_text(CANARY)
    guard = TreeGuard(_sandbox(repo))
    snap = worktree.snapshot(repo)
    (repo / "src" / "app.py").unlink()
    (repo / "src").rmdir()
    os.symlink(canary, repo / "src")  # the turn replaced src/ by a link to a folder of the host
    for rel in worktree.changed_since(snap):
        worktree.restore(snap, rel)
    guard.judge()
    assert (canary / "app.py").read_text() == CANARY  # not overwritten, not deleted
    assert (repo / "src" / "app.py").read_text() == "APP\n" and not (repo / "src").is_symlink()


def test_an_ignored_file_too_large_to_keep_is_left_and_said_so(repo, monkeypatch):
    monkeypatch.setattr(git_guard, "MAX_KEPT_FILE", 100)
    (repo / "data").mkdir()
    db = repo / "data" / "app.db"  # an ignored 2 kB database
    db.write_bytes(b"d" * 2000)
    before = git_guard.capture(repo)
    db.write_bytes(b"e" * 2000)
    verdict = git_ignored.judge_ignored(before, _sandbox(repo))
    [finding] = verdict.findings
    assert finding.kind == "ignored_file" and "left as it is" in finding.why
    assert db.read_bytes() == b"e" * 2000  # never deleted


def test_an_ignored_folder_swapped_for_a_link_is_not_followed(repo, tmp_path):
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "app.db").write_text(CANARY)
    (repo / "data").mkdir()
    (repo / "data" / "app.db").write_text("small db\n")
    before = git_guard.capture(repo)
    (repo / "data" / "app.db").unlink()
    (repo / "data").rmdir()
    os.symlink(canary, repo / "data")
    git_ignored.judge_ignored(before, _sandbox(repo))
    assert (canary / "app.db").read_text() == CANARY
