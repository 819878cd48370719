"""What the loop merges into the person's branch (merge_guard.py, `Worktrees.merge_into`; sbxred c39, c20, c17):
never over a file of the person's that git does not track, never a configuration that runs code on open or a file
the person's git config includes. Real git, real worktrees; nothing planted here is ever run."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from graphlemon import merge_guard
from graphlemon.worktrees import Worktrees


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# r\n")
    (root / ".gitignore").write_text(".env\ndata/\n.graphlemon/\n")
    (root / ".gitconfig-shared").write_text("[core]\n\tautocrlf = false\n")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=P", "-c", "user.email=p@x", "commit", "-qm", "init")
    _git(root, "config", "include.path", "../.gitconfig-shared")
    (root / ".env").write_text("DB_PASSWORD=person\n")
    (root / "data").mkdir()
    (root / "data" / "local.db").write_text("person's db\n")
    return root


def _integrate(root: Path, files: dict[str, str]) -> Worktrees:
    """A task whose integration branch holds `files` (what an agent's units committed)."""
    trees = Worktrees(root, "task-merge", root / ".graphlemon")
    wt = trees.integration()
    for rel, text in files.items():
        (wt.path / rel).parent.mkdir(parents=True, exist_ok=True)
        (wt.path / rel).write_text(text)
    _git(wt.path, "add", "-f", "-A")
    _git(wt.path, "-c", "user.name=A", "-c", "user.email=a@x", "commit", "-qm", "agent's work")
    return trees


def test_a_merge_that_would_replace_the_person_s_ignored_files_is_held_and_replaces_nothing(repo):
    before = _git(repo, "rev-parse", "HEAD")
    trees = _integrate(repo, {".gitignore": "build/\n", ".env": "DB_PASSWORD=agent\n", "data/local.db": "agent\n",
                              "calc.py": "x = 1\n"})  # fmt: skip
    result = trees.merge_into(repo)
    assert result.commit is None and result.held is not None and result.held.kind == "in_the_way"
    assert result.held.paths == (".env", "data/local.db")
    assert "replace files of yours that git does not track (.env, data/local.db)" in result.held.says()
    assert (repo / ".env").read_text() == "DB_PASSWORD=person\n" and (
        repo / "data/local.db"
    ).read_text() == "person's db\n"
    assert _git(repo, "rev-parse", "HEAD") == before and not (repo / "calc.py").exists()


@pytest.mark.parametrize(
    "path",
    [".claude/settings.json", ".mcp.json", "CLAUDE.md", "pkg/CLAUDE.md", ".envrc", "sub/.envrc", ".vscode/tasks.json",
     ".lfsconfig", ".pre-commit-config.yaml", ".devcontainer/devcontainer.json", ".gitconfig-shared", ".npmrc",
     "web/.claude/settings.json", "web/.vscode/tasks.json"],
)  # fmt: skip
def test_a_change_to_a_configuration_that_runs_code_on_open_holds_the_merge(repo, path):
    before = _git(repo, "rev-parse", "HEAD")
    trees = _integrate(repo, {path: "[core]\n\tfsmonitor = true\n", "calc.py": "x = 1\n"})
    result = trees.merge_into(repo)
    assert result.commit is None and result.held is not None and result.held.kind == "runs_on_open"
    assert result.held.paths == (path,)
    assert _git(repo, "rev-parse", "HEAD") == before
    assert _git(repo, "config", "--get", "core.autocrlf") == "false"  # the included file is the person's still


def test_plain_work_merges(repo):
    trees = _integrate(repo, {"calc.py": "x = 1\n", "docs/guide.md": "# g\n"})
    result = trees.merge_into(repo)
    assert result.commit is not None and result.held is None
    assert (repo / "calc.py").read_text() == "x = 1\n" and (repo / ".env").read_text() == "DB_PASSWORD=person\n"


def test_a_folder_git_would_discover_as_a_repository_holds_the_merge_even_built_in_two_halves(repo):
    """sbxred p43: two units each commit half of a bare repository (HEAD and config; objects/ and refs/); the merged
    tree makes a folder git obeys (its `core.fsmonitor` runs a program)."""
    before = _git(repo, "rev-parse", "HEAD")
    trees = _integrate(repo, {"vendor/cache/HEAD": "ref: refs/heads/main\n",
                              "vendor/cache/config": "[core]\n\tbare = true\n\tfsmonitor = echo\n",
                              "vendor/cache/objects/info/packs": "\n", "vendor/cache/refs/heads/main": "0" * 40 + "\n",
                              "calc.py": "x = 1\n"})  # fmt: skip
    result = trees.merge_into(repo)
    assert result.commit is None and result.held is not None and result.held.kind == "repository"
    assert result.held.paths == ("vendor/cache",) and "git treats as a repository (vendor/cache)" in result.held.says()
    assert _git(repo, "rev-parse", "HEAD") == before and not (repo / "vendor").exists()


def test_in_the_way_sees_a_file_or_link_where_a_folder_must_be_and_follows_no_link(tmp_path):
    (tmp_path / "build").write_text("a file of the person's\n")
    (tmp_path / "out").symlink_to("/etc")
    (tmp_path / "src").mkdir()
    added = ["build/x.o", "out/passwd", "src/new.py", "fresh/a.txt"]
    assert merge_guard.in_the_way(tmp_path, added) == ["build/x.o", "out/passwd"]


def test_a_commit_takes_in_at_most_the_work_tree_quota_counting_sparse_files_by_their_size(repo):
    """sbxred c10: two 200 MB sparse files (no disk blocks) are taken out of the commit, largest first, until what
    is left fits the quota; the rest is committed and each one taken out is a refusal."""
    trees = Worktrees(repo, "task-quota", repo / ".graphlemon")
    wt = trees.unit("u1")
    for name in ("a.bin", "b.bin"):
        with open(wt.path / name, "wb") as fh:
            fh.truncate(200 << 20)
    (wt.path / "README.md").write_text("# r, changed\n" + "x" * (2 << 20))
    (wt.path / "small.py").write_text("x = 1\n")
    commit = trees.commit_all(wt, "work", max_bytes=64 << 20)
    assert commit is not None
    files = _git(wt.path, "ls-tree", "-r", "--name-only", commit).split("\n")
    assert "small.py" in files and "README.md" in files and "a.bin" not in files and "b.bin" not in files
    assert sorted(r.path for r in trees.refused) == ["a.bin", "b.bin"]
    assert all("past the work-tree quota (worktree_mb 64)" in r.why for r in trees.refused)
    assert not (wt.path / "a.bin").exists() and not (wt.path / "b.bin").exists()
    trees.refused.clear()
    (wt.path / "README.md").write_text("y" * (80 << 20))  # a tracked file changed past the quota: put back
    assert trees.commit_all(wt, "more", max_bytes=64 << 20) is None
    assert [r.path for r in trees.refused] == ["README.md"] and (wt.path / "README.md").stat().st_size < (3 << 20)


def test_a_fifo_a_run_left_is_removed_before_git_reads_the_tree_and_the_commit_goes_on(repo):
    """A neighbour of sbxred c07 met by the commit step: FIFOs named `.gitignore` and `.gitattributes` (git would
    wait on them forever) are removed and refused, the rest is committed."""
    trees = Worktrees(repo, "task-fifo", repo / ".graphlemon")
    wt = trees.unit("u1")
    (wt.path / "calc").mkdir()
    os.mkfifo(wt.path / "calc" / ".gitignore")
    os.mkfifo(wt.path / ".gitattributes")
    (wt.path / "calc" / "core.py").write_text("x = 1\n")
    started = time.monotonic()
    commit = trees.commit_all(wt, "work", max_bytes=64 << 20)
    assert commit is not None and time.monotonic() - started < 60
    assert sorted(r.path for r in trees.refused) == [".gitattributes", "calc/.gitignore"]
    assert not os.path.lexists(wt.path / "calc" / ".gitignore") and (wt.path / "calc" / "core.py").is_file()
