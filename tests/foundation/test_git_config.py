"""The loop's git sees only config GraphLemon controls (git_config.py, gitrun.py), and never commits a folder git
would take for a repository (staged_links.py). Real git, real worktrees; the programs the planted config names are
canaries that touch a marker file (none may ever run), planted by the test itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from graphlemon import git_config, gitrun
from graphlemon.staged_links import REPOSITORY_WHY
from graphlemon.worktrees import Worktrees


@pytest.mark.parametrize(
    "key,kept",
    [("core.filemode", True), ("core.repositoryformatversion", True), ("user.name", True), ("extensions.objectformat", True),
     ("remote.origin.url", True), ("remote.origin.fetch", True), ("branch.main.merge", True),
     ("merge.conflictstyle", True), ("diff.algorithm", True), ("include.path", True), ("includeIf.gitdir:/x/.path", True),
     ("core.fsmonitor", False), ("core.hooksPath", False), ("core.pager", False), ("core.sshCommand", False),
     ("core.editor", False), ("core.askPass", False), ("core.excludesFile", False), ("filter.evil.clean", False),
     ("filter.evil.process", False), ("filter.evil.required", False), ("diff.evil.textconv", False),
     ("diff.external", False), ("merge.evil.driver", False), ("remote.origin.uploadpack", False),
     ("remote.origin.receivepack", False), ("remote.origin.vcs", False), ("alias.st", False), ("pager.log", False),
     ("credential.helper", False), ("credential.https://x.helper", False), ("gpg.program", False),
     ("sequence.editor", False), ("submodule.recurse", False), ("trailer.sign.command", False),
     ("a.key.git.adds.tomorrow", False), ("newsection.newkey", False)],
)  # fmt: skip
def test_only_keys_on_the_allow_list_keep_their_value(key, kept):
    assert git_config.inert(key) is kept


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# r\n")
    (root / "tests").mkdir()
    (root / "tests" / "keep.txt").write_text("k\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    return root


def _include_graph(repo: Path, tmp_path: Path, marker: Path) -> None:
    """The person's config reaches drivers only through includes: a tracked file in the repository, an includeIf
    whose condition does not hold yet (a branch the loop will check out), a nested include under `~`."""
    run = f"sh -c 'echo $0 >> {marker}; cat'"
    (repo / ".gitconfig-shared").write_text(f"[filter \"evil\"]\n\tclean = {run} clean\n\tsmudge = {run} smudge\n"
                                            f"\tprocess = {run} process\n\trequired = true\n")  # fmt: skip
    later = tmp_path / "later.cfg"
    later.write_text(f"[diff \"evil\"]\n\ttextconv = {run} textconv\n[merge \"evil\"]\n\tdriver = {run} merge\n"
                     f"[core]\n\tfsmonitor = {run} fsmonitor\n\tpager = {run} pager\n[include]\n\tpath = ~/nested.cfg\n")  # fmt: skip
    home = tmp_path / "home"
    home.mkdir()
    (home / "nested.cfg").write_text(f"[alias]\n\tst = !{run} alias\n[remote \"origin\"]\n\tuploadpack = {run} up\n")
    with open(repo / ".git" / "config", "a") as fh:
        fh.write(f"[include]\n\tpath = ../.gitconfig-shared\n[includeIf \"onbranch:graphlemon/**\"]\n\tpath = {later}\n")


def test_drivers_reached_only_through_include_and_include_if_are_emptied(repo, tmp_path, monkeypatch):
    marker = tmp_path / "RAN"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _include_graph(repo, tmp_path, marker)
    for key in ("filter.evil.clean", "filter.evil.smudge", "filter.evil.process", "diff.evil.textconv",
                "merge.evil.driver", "core.fsmonitor", "alias.st", "remote.origin.uploadpack"):  # fmt: skip
        assert gitrun.out(repo, "config", "--get", key) in ("", "false"), key  # command scope: ours wins
    assert gitrun.out(repo, "config", "--get", "filter.evil.required") == ""  # false: a missing filter is no error
    trees = Worktrees(repo, "task-inc")
    wt = trees.unit("u1")  # on branch graphlemon/task-inc/u1: the onbranch include applies here
    assert gitrun.out(wt.path, "config", "--get", "merge.evil.driver") == ""
    assert gitrun.out(wt.path, "config", "--get", "diff.evil.textconv") == ""
    (wt.path / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")  # an agent's attributes
    (wt.path / "tests" / "test_x.py").write_text("def test_x():\n    assert True\n")
    sha = trees.commit_all(wt, "unit work")
    assert sha and trees.diff(wt, "HEAD~1")
    trees.merge_into_integration("u1")
    gitrun.git(wt.path, "status")
    gitrun.git(wt.path, "log", "-p", "-1")
    assert not marker.exists(), marker.read_text()
    assert _git(wt.path, "show", f"{sha}:tests/test_x.py") == "def test_x():\n    assert True"  # no clean filter ran


def test_an_included_file_that_appears_later_is_read_at_the_next_call(repo, tmp_path):
    later = tmp_path / "appears.cfg"
    with open(repo / ".git" / "config", "a") as fh:
        fh.write(f"[include]\n\tpath = {later}\n")
    assert "filter.late.clean" not in git_config.keys(repo / ".git", repo / ".git", {})
    gitrun.git(repo, "status")  # the listing is cached now
    later.write_text("[filter \"late\"]\n\tclean = touch /nonexistent/never\n")
    assert gitrun.out(repo, "config", "--get", "filter.late.clean") == ""


def test_a_config_file_git_cannot_parse_is_git_error_naming_it(repo):
    with open(repo / ".git" / "config", "a") as fh:
        fh.write("[broken\n")
    with pytest.raises(Exception) as err:
        gitrun.git(repo, "status")
    assert "config" in str(err.value)


@pytest.mark.parametrize(
    "layout",
    [
        {"HEAD": "ref: refs/heads/main\n", "objects/info/packs": "", "refs/heads/main": "0" * 40 + "\n"},
        {"head": "ref: refs/heads/main\n", "Objects/x": "", "REFS/heads/x": ""},  # a case-insensitive checkout
        {"HEAD": "ref: refs/heads/main\n", "commondir": "../elsewhere\n"},
    ],
    ids=["bare", "case", "commondir"],
)
def test_a_bare_repository_laid_out_as_plain_files_is_never_committed(repo, tmp_path, layout):
    """HEAD beside objects/ and refs/ (or a commondir), with a config whose fsmonitor would run at the person's next
    `git status` there: nothing of that folder is committed, the files are deleted, each one refused."""
    trees = Worktrees(repo, "task-bare")
    wt = trees.unit("u1")
    evil = wt.path / "tests" / "fixtures" / "evil"
    for rel, text in {**layout, "config": "[core]\n\tfsmonitor = touch /tmp/never\n\tbare = true\n"}.items():
        (evil / rel).parent.mkdir(parents=True, exist_ok=True)
        (evil / rel).write_text(text)
    (wt.path / "tests" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    sha = trees.commit_all(wt, "unit work")
    committed = _git(wt.path, "ls-tree", "-r", "--name-only", sha).splitlines()
    assert "tests/test_ok.py" in committed
    assert not [p for p in committed if p.startswith("tests/fixtures/")], committed
    assert not evil.exists()  # deleted: the next commit cannot stage it again
    refused = [r for r in trees.refused if r.why.startswith(REPOSITORY_WHY)]
    assert sorted(r.path.split("/", 3)[3] for r in refused) == sorted([*layout, "config"])
