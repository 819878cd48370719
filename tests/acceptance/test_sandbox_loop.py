"""The loop's own git never runs what a repository (or an agent writing in it) chose, and what the loop commits
never carries a nested repository. Real git, real worktrees, the real loop with the scripted calc playbook
(`Stages` with plain calls: no Prefect server), real confined pytest runs — as root in CI."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from _loop_helpers import CALC
from conftest import make_repo, playbook_variant, turn

from graphlemon import gitrun
from graphlemon.devloop.loop import run_devloop
from graphlemon.devloop.stages import Stages
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.models import NodeEvent
from graphlemon.nodes import NodeTracker
from graphlemon.stages.session import LoopConfig, LoopSession
from graphlemon.taskboard import TaskBoard
from graphlemon.worktrees import Worktrees

# a tester's conftest, as root, trying to leave the sandbox and plant a hook the loop's next commit would run
CONFTEST = '''
import pathlib, subprocess
here = pathlib.Path(__file__).resolve()
repo = here.parents[6]
subprocess.run(["sh", "-c", "umount -l /tmp; mount -o remount,bind,rw /"], capture_output=True)
for target, text in [
    (repo / ".git" / "hooks" / "post-commit", "#!/bin/sh\\ntouch " + str(repo.parent / "HOOK_RAN") + "\\n"),
    (here.parents[2] / ".git", "gitdir: tests/evil\\n"),
    (repo.parent / "outside.txt", "pwned"),
]:
    try:
        target.write_text(text)
        target.chmod(0o755)
    except OSError:
        pass
'''


def _run(project, playbook: Path, goal: str = "Build calc"):
    task = TaskBoard(project.ledger).create(goal)
    session = LoopSession(project, task.task_id, LoopConfig(playbook=playbook))
    return run_devloop(session, Stages(session.run))


def _tree(root: Path, rev: str = "HEAD") -> list[tuple[str, str]]:
    out = subprocess.run(["git", "ls-tree", "-r", rev], cwd=root, capture_output=True, text=True, check=True).stdout
    return [(line.split()[0], line.split("\t", 1)[1]) for line in out.splitlines()]


@pytest.mark.system
def test_the_loop_commits_no_gitlink_runs_no_planted_hook_and_records_the_refusal(tmp_path):
    project = make_repo(tmp_path / "calc", CALC / "repo")

    def attack(data):
        actions = turn(data, role="tester", unit="add")["actions"]
        actions.append({"write_file": {"path": "tests/add/sub/.git", "content": f"gitdir: {project.root}/.git\n"}})
        actions.append({"write_file": {"path": "tests/add/conftest.py", "content": CONFTEST}})

    final = _run(project, playbook_variant(tmp_path, CALC, attack))
    assert final.status == "done", final
    assert not (tmp_path / "HOOK_RAN").exists() and not (tmp_path / "outside.txt").exists()
    assert not (project.root / ".git" / "hooks" / "post-commit").exists()
    tree = _tree(project.root)
    assert not [path for mode, path in tree if mode == "160000" or "/sub" in path]
    assert ("100644", "tests/add/test_add.py") in tree  # the tester's tests reached the person's branch
    violations = [e for e in project.ledger.read_as("node", NodeEvent) if e.event == "violation"]
    assert any("tests/add/sub" in (v.error or "") and "gitlink" in (v.error or "") for v in violations)


@pytest.mark.system
def test_a_green_run_of_tests_the_branch_does_not_hold_does_not_count(tmp_path):
    """The tester hides its own tests from git (an ignore rule): they ran green but were never committed, so the
    unit is blocked with the evidence (not the whole stage failed), the task waits for a person, nothing is merged."""
    project = make_repo(tmp_path / "calc", CALC / "repo")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project.root, capture_output=True, text=True).stdout

    def hide(data):
        turn(data, role="tester", unit="add")["actions"].append(
            {"write_file": {"path": "tests/add/.gitignore", "content": "*\n"}}
        )

    final = _run(project, playbook_variant(tmp_path, CALC, hide))
    assert final.status == "blocked_pending_human"
    nodes = NodeTracker(project.ledger).for_task(final.task_id)
    [add] = [n for n in nodes if n.stage == "coder" and n.unit_id == "add" and n.status == "blocked"]
    assert add.error_code == "WORKTREE_TAMPERED" and "tests/add/test_add.py" in add.error
    assert not [n for n in nodes if n.status == "failed"]  # the unit is blocked, no stage failed
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=project.root, capture_output=True, text=True).stdout == head


# -- the git runner, call by call -----------------------------------------------------------------------


@pytest.fixture
def unit_tree(tmp_path):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    trees = Worktrees(project.root, "task-git", project.state_dir)
    wt = trees.unit("u1")
    (wt.path / "tests").mkdir(exist_ok=True)
    return project, trees, wt, tmp_path / "RAN"


def _evil_gitdir(where: Path, marker: Path) -> None:
    """A git dir of an agent's making whose config runs a program at the next `git status`."""
    subprocess.run(["git", "init", "-q", "--bare", str(where)], check=True)
    script = where / "fsmonitor.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    with open(where / "config", "a") as fh:
        fh.write(f"[core]\n\tfsmonitor = {script}\n\tbare = false\n\tworktree = {where.parent}\n")


@pytest.mark.parametrize("pointer", ["absolute", "relative", "symlink", "folder", "gone", "other_worktree"])
def test_a_replaced_git_pointer_is_worktree_tampered_and_git_runs_nothing(unit_tree, tmp_path, pointer):
    project, trees, wt, marker = unit_tree
    evil = wt.path / "tests" / "evil_gitdir"
    _evil_gitdir(evil, marker)
    dot_git = wt.path / ".git"
    dot_git.unlink()
    if pointer == "absolute":
        dot_git.write_text(f"gitdir: {evil}\n")
    elif pointer == "relative":
        dot_git.write_text("gitdir: tests/evil_gitdir\n")
    elif pointer == "symlink":
        dot_git.symlink_to(evil)
    elif pointer == "folder":
        os.rename(evil, dot_git)
    elif pointer == "other_worktree":
        other = trees.unit("u2")
        dot_git.write_text((other.path / ".git").read_text())
    with pytest.raises(GraphLemonError) as err:
        trees.commit_all(wt, "after tampering")
    assert err.value.code == ErrorCode.WORKTREE_TAMPERED and err.value.context["evidence"]
    with pytest.raises(GraphLemonError):
        gitrun.git(wt.path, "status")
    assert not marker.exists()


def test_repository_config_programs_never_run_in_the_loops_git(unit_tree):
    """Hooks, fsmonitor, a pager, an external diff, filter and textconv drivers named in the repository's own
    config, and a `.gitattributes` an agent wrote naming them: the loop's commit, diff and merge run none."""
    project, trees, wt, marker = unit_tree
    run = f"sh -c 'echo $0 >> {marker}; cat'"
    subprocess.run(["git", "config", "core.fsmonitor", f"{run} fsmonitor"], cwd=project.root, check=True)
    settings = {
        "core.pager": f"{run} pager", "diff.external": f"{run} external", "filter.evil.clean": f"{run} clean",
        "filter.evil.smudge": f"{run} smudge", "filter.evil.process": f"{run} process",
        "filter.evil.required": "true", "diff.evil.textconv": f"{run} textconv", "merge.evil.driver": f"{run} merge",
        "core.sshCommand": f"{run} ssh", "credential.helper": f"!{run} credential", "core.editor": f"{run} editor",
    }  # fmt: skip
    for key, value in settings.items():
        subprocess.run(["git", "config", key, value], cwd=project.root, check=True)
    hooks = project.root / ".git" / "hooks"
    for name in ("pre-commit", "commit-msg", "post-commit", "reference-transaction", "post-index-change", "post-merge"):
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        (hooks / name).chmod(0o755)
    (wt.path / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    (wt.path / "tests" / "test_x.py").write_text("def test_x():\n    assert True\n")
    sha = trees.commit_all(wt, "tests")
    assert sha and trees.diff(wt, "HEAD~1")
    trees.merge_into_integration("u1")
    assert not marker.exists(), marker.read_text()
    blob = subprocess.run(["git", "show", f"{sha}:tests/test_x.py"], cwd=wt.path, capture_output=True, text=True)
    assert blob.stdout == "def test_x():\n    assert True\n"  # no clean filter rewrote it


def test_a_commit_never_carries_gitmodules_git_entries_or_links_that_leave(unit_tree):
    project, trees, wt, _marker = unit_tree
    (wt.path / ".gitmodules").write_text('[submodule "x"]\n\tpath = x\n\turl = ../elsewhere\n')
    os.symlink("/etc/passwd", wt.path / "tests" / "passwd")
    os.symlink("../../.git/config", wt.path / "tests" / "cfg")
    nested = wt.path / "tests" / "nested"
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "--allow-empty", "-m", "x"],
                   cwd=nested, check=True)  # fmt: skip
    (wt.path / "tests" / "test_y.py").write_text("def test_y():\n    pass\n")
    sha = trees.commit_all(wt, "unit work")
    committed = dict((path, mode) for mode, path in _tree(wt.path, sha))
    assert committed.get("tests/test_y.py") == "100644"
    assert not {".gitmodules", "tests/passwd", "tests/cfg", "tests/nested"} & set(committed)
    assert sorted(r.path for r in trees.refused) == [".gitmodules", "tests/cfg", "tests/nested", "tests/passwd"]


@pytest.mark.system
def test_a_file_name_with_a_lone_surrogate_does_not_crash_the_run(tmp_path):
    """An agent's file name that is not valid UTF-8 (a lone surrogate) is logged escaped; the run goes on."""
    project = make_repo(tmp_path / "calc", CALC / "repo")

    def odd_name(data):
        turn(data, role="tester", unit="add")["actions"].append(
            {"write_file": {"path": "tests/add/bad_\udcff.py", "content": "X = 1\n"}}
        )

    final = _run(project, playbook_variant(tmp_path, CALC, odd_name))
    assert final.status == "done", final
    logs = "".join(p.read_text(encoding="utf-8") for p in project.state_dir.rglob("*.log") if p.is_file())
    assert "bad_\\udcff.py" in logs  # escaped, whole
