"""claude_code and git: Claude's Bash runs inside the sandbox, where git's own state is read-only.

The fake `claude` runs each scripted Bash command for real (`sh -c` in the work tree) inside the same
bubblewrap sandbox as test runs, so a commit, a tag, a reset or a hook written by Claude's Bash fails there:
the work tree's `.git` and git dirs are read-only. GraphLemon commits the turn's work afterwards through its
own git runner. `git_guard` stays the second line: files git ignores are judged in every turn, and with the
sandbox opted out (`GRAPHLEMON_TEST_CONFINEMENT=off`) every commit, ref, index, config and hook change is put
back and recorded as a violation, one per change.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from fakes.claude import bash

from graphlemon import gitrun
from graphlemon.agents import build_executor
from graphlemon.models import NodeEvent

pytestmark = pytest.mark.system

COMMIT = "git -c user.name=agent -c user.email=agent@example.invalid commit -q"


def _git(root, *args):
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def _violations(project) -> list[str]:
    return [e.error for e in project.ledger.read_as("node", NodeEvent) if e.event == "violation"]


def _tester_turn(turn, claude_settings, **kw):
    return turn(build_executor("claude_code", settings=claude_settings), "tester", node_exec_id="ne-guard", **kw)


def bash_results(result) -> list[tuple[bool, str]]:
    """(is_error, output) of each Bash command of the turn, from its transcript."""
    out = []
    for line in open(result.transcript_path, encoding="utf-8"):
        event = json.loads(line)
        data = event.get("data") or {}
        if event.get("event") == "claude" and data.get("type") == "user":
            out += [(b["is_error"], b["content"]) for b in data["message"]["content"] if b["type"] == "tool_result"]
    return out


@pytest.fixture
def unconfined(monkeypatch):
    """The person opted out of the sandbox: Claude's Bash can write git's state, and git_guard puts it back."""
    monkeypatch.setenv("GRAPHLEMON_TEST_CONFINEMENT", "off")


def test_inside_the_sandbox_claude_s_bash_cannot_commit_move_refs_or_plant_hooks(
    project, fake_claude, claude_settings, turn
):
    root = project.root
    head, refs = _git(root, "rev-parse", "HEAD"), _git(root, "for-each-ref")
    config = (root / ".git/config").read_bytes()
    attempts = (
        f"git add -A && {COMMIT} -m sneaky", "git tag evil", "git branch sneaky", "git reset -q --hard HEAD~1",
        "git config core.hooksPath /tmp/elsewhere", "printf '#!/bin/sh\\nexit 0\\n' > .git/hooks/pre-commit",
        "git update-index --assume-unchanged README.md", "git stash -q",
    )  # fmt: skip
    fake_claude.queue(
        bash("echo PWNED > README.md && mkdir -p tests && echo 'def test_c(): pass' > tests/test_c.py", *attempts)
    )
    result = _tester_turn(turn, claude_settings)

    outcomes = bash_results(result)
    assert outcomes[0][0] is False  # the work tree is writable
    for command, (failed, output) in zip(attempts, outcomes[1:], strict=True):
        assert failed, f"{command!r} succeeded inside the sandbox: {output}"
    assert any("Read-only file system" in output for _, output in outcomes[1:])
    assert _git(root, "rev-parse", "HEAD") == head and _git(root, "for-each-ref") == refs
    assert (root / ".git/config").read_bytes() == config and not (root / ".git/hooks/pre-commit").exists()
    assert not any(":" in p for p in result.reverted_paths)  # no git state to put back: none was changed
    assert result.reverted_paths == ["README.md"]  # outside tests/**: reverted by the effect check
    assert result.files_changed == ["tests/test_c.py"]

    gitrun.git(root, "add", "-A")  # the loop commits the turn's work through its own git runner
    who = ("-c", "user.name=loop", "-c", "user.email=loop@example.invalid")
    gitrun.git(root, *who, "commit", "-qm", "tester", "--no-verify")
    assert _git(root, "show", "--name-only", "--format=", "HEAD") == "tests/test_c.py"


def test_a_gitignore_with_a_star_no_longer_hides_the_files_of_the_turn(project, fake_claude, claude_settings, turn):
    root = project.root
    fake_claude.queue(
        bash(
            "printf '*\\n' > .gitignore",
            "mkdir -p src && echo PWNED > src/evil.py && echo note > notes.md",
            writes={"tests/test_ok.py": "def test_ok(): pass\n"},
        )
    )
    result = _tester_turn(turn, claude_settings)

    assert result.ok
    assert not (root / ".gitignore").exists() and not (root / "src").exists() and not (root / "notes.md").exists()
    assert (root / "tests/test_ok.py").read_text() == "def test_ok(): pass\n"  # writable: kept
    assert result.files_changed == ["tests/test_ok.py"]  # visible again once the rule is gone
    assert sorted(result.reverted_paths) == [".gitignore", "notes.md", "src/evil.py"]
    violations = _violations(project)
    assert len(violations) == 3 and all("ignored_file" in v for v in violations)
    assert any("'src/evil.py'" in v and "it was deleted" in v for v in violations)
    assert _git(root, "status", "--porcelain") == "?? tests/"


def test_a_commit_is_undone_and_its_changes_are_judged_path_by_path(
    project, fake_claude, claude_settings, turn, unconfined
):
    root = project.root
    head = _git(root, "rev-parse", "HEAD")
    fake_claude.queue(
        bash(
            "echo PWNED > README.md && mkdir -p tests && echo 'def test_c(): pass' > tests/test_c.py",
            f"git add -A && {COMMIT} -m sneaky",
        )
    )
    result = _tester_turn(turn, claude_settings)

    assert _git(root, "rev-parse", "HEAD") == head and _git(root, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert (root / "README.md").read_text() == "# target\n"  # outside tests/**: reverted
    assert (root / "tests/test_c.py").read_text() == "def test_c(): pass\n"  # allowed: kept, uncommitted
    assert _git(root, "status", "--porcelain") == "?? tests/"
    assert "git_commit:HEAD" in result.reverted_paths and "README.md" in result.reverted_paths
    assert result.files_changed == ["tests/test_c.py"]
    violations = _violations(project)
    assert any("git_commit" in v and "claude moved HEAD (main at" in v for v in violations)
    assert any("'README.md'" in v for v in violations)


def test_a_reset_and_a_checkout_of_another_branch_are_undone(project, fake_claude, claude_settings, turn, unconfined):
    root = project.root
    (root / "src.py").write_text("v2\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "second")
    head = _git(root, "rev-parse", "HEAD")
    fake_claude.queue(bash("git reset -q --hard HEAD~1"), bash("git checkout -q -b elsewhere HEAD~1"))
    executor = build_executor("claude_code", settings=claude_settings)
    for _ in range(2):
        result = turn(executor, "tester")
        assert _git(root, "rev-parse", "HEAD") == head and _git(root, "symbolic-ref", "HEAD") == "refs/heads/main"
        assert (root / "src.py").read_text() == "v2\n" and _git(root, "status", "--porcelain") == ""
        assert "git_commit:HEAD" in result.reverted_paths
    assert "refs/heads/elsewhere" not in _git(root, "for-each-ref", "--format=%(refname)")
    assert any("claude created refs/heads/elsewhere; it was deleted" in v for v in _violations(project))


def test_branches_tags_and_stashes_are_put_back_but_other_worktrees_branches_are_left(
    project, fake_claude, claude_settings, turn, tmp_path, unconfined
):
    root = project.root
    first = _git(root, "rev-parse", "HEAD")
    (root / "b.txt").write_text("b\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "second")
    _git(root, "branch", "parked", first)  # a branch no worktree has checked out
    _git(root, "tag", "v1", first)
    sibling = tmp_path / "sibling"
    _git(root, "worktree", "add", "-q", "-b", "graphlemon/t/sibling", str(sibling))
    fake_claude.queue(
        bash(
            "git tag evil && git branch sneaky && git branch -f parked HEAD && git tag -d v1",
            "echo dirty > b.txt && git stash -q",
            f"cd {sibling} && {COMMIT} --allow-empty -m 'the sibling unit commits meanwhile'",
        )
    )
    result = _tester_turn(turn, claude_settings)

    refs = dict(line.split() for line in _git(root, "for-each-ref", "--format=%(refname) %(objectname)").splitlines())
    assert "refs/tags/evil" not in refs and "refs/heads/sneaky" not in refs and "refs/stash" not in refs
    assert refs["refs/heads/parked"] == first and refs["refs/tags/v1"] == first
    assert _git(sibling, "log", "-1", "--format=%s") == "the sibling unit commits meanwhile"  # not this turn's to judge
    assert (root / "b.txt").read_text() == "b\n"
    expected = {f"git_ref:refs/{r}" for r in ("tags/evil", "heads/sneaky", "heads/parked", "tags/v1", "stash")}
    assert expected <= set(result.reverted_paths)
    assert not any("sibling" in p for p in result.reverted_paths)


def test_ignored_files_under_existing_rules_are_judged_too(project, fake_claude, claude_settings, turn):
    root = project.root
    (root / ".gitignore").write_text("*.log\nbuild/\n.env\n__pycache__/\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "ignores")
    (root / ".env").write_text("TOKEN=original\n")
    (root / "build").mkdir()
    (root / "build/keep.bin").write_bytes(b"\x00keep")
    fake_claude.queue(
        bash(
            "echo hacked > .env && rm build/keep.bin && echo evil > build/evil.py",
            "mkdir -p src/__pycache__ tests && echo pyc > src/__pycache__/m.cpython-311.pyc && echo log > tests/run.log",
        )
    )
    result = _tester_turn(turn, claude_settings)

    assert (root / ".env").read_text() == "TOKEN=original\n"
    assert (root / "build/keep.bin").read_bytes() == b"\x00keep" and not (root / "build/evil.py").exists()
    assert not (root / "src").exists()  # a cache: dropped without a finding
    assert (root / "tests/run.log").read_text() == "log\n"  # writable: kept
    assert sorted(result.reverted_paths) == [".env", "build/evil.py", "build/keep.bin"]
    violations = _violations(project)
    assert len(violations) == 3 and any("changed '.env'" in v and "it was put back" in v for v in violations)


def test_a_rule_removed_from_a_gitignore_does_not_cost_the_ignored_files(project, fake_claude, claude_settings, turn):
    root = project.root
    (root / ".gitignore").write_text(".env\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "ignores")
    (root / ".env").write_text("TOKEN=mine\n")
    fake_claude.queue(bash(": > .gitignore"), bash("rm .gitignore"))  # .env is no longer ignored: status shows it
    executor = build_executor("claude_code", settings=claude_settings)
    for role in ("tester", "coder"):  # the coder may write .gitignore, but not to show a secret to the next commit
        result = turn(executor, role, unit_id="u1")
        assert (root / ".env").read_text() == "TOKEN=mine\n" and (root / ".gitignore").read_text() == ".env\n"
        assert result.reverted_paths == ["ignore_rule:.gitignore"] and _git(root, "status", "--porcelain") == ""
    assert all("makes git see files it ignored before (.env)" in v for v in _violations(project))


def test_config_hooks_index_flags_and_merge_state_are_put_back(project, fake_claude, claude_settings, turn, unconfined):
    root = project.root
    _git(root, "checkout", "-qb", "feature")
    (root / "feature.py").write_text("feature\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "feature")
    _git(root, "checkout", "-q", "main")
    config = (root / ".git/config").read_bytes()
    fake_claude.queue(
        bash(
            "printf '#!/bin/sh\\nexit 0\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
            "git config core.hooksPath /tmp/elsewhere && echo '*.md' >> .git/info/exclude",
            "echo PWNED > README.md && git update-index --assume-unchanged README.md",
            "git merge -q --no-commit --no-ff feature",
        )
    )
    result = _tester_turn(turn, claude_settings)

    assert not (root / ".git/hooks/pre-commit").exists() and (root / ".git/config").read_bytes() == config
    assert "*.md" not in (root / ".git/info/exclude").read_text()
    assert not (root / ".git/MERGE_HEAD").exists() and not (root / "feature.py").exists()
    assert (root / "README.md").read_text() == "# target\n" and "h README.md" not in _git(root, "ls-files", "-v")
    assert _git(root, "status", "--porcelain") == ""
    kinds = {p.split(":", 1)[0] for p in result.reverted_paths if ":" in p}
    assert kinds == {"git_control", "git_index", "git_operation"}
    assert {"git_control:.git/hooks/pre-commit", "git_control:.git/config", "git_control:.git/info/exclude"} <= set(
        result.reverted_paths
    )
    assert "git_operation:MERGE_HEAD" in result.reverted_paths and "README.md" in result.reverted_paths


def test_claude_is_told_to_refuse_git_commands_that_move_head_or_refs(project, fake_claude, claude_settings, turn):
    from graphlemon.agents.claude_code import GIT_DENY_RULES

    fake_claude.queue(bash("true"))
    _tester_turn(turn, claude_settings)
    argv = fake_claude.calls[0]["argv"]
    deny = json.loads(argv[argv.index("--settings") + 1])["permissions"]["deny"]
    assert deny == list(GIT_DENY_RULES)
    assert {"Bash(git commit:*)", "Bash(git push:*)", "Bash(git reset:*)", "Bash(git update-ref:*)"} <= set(deny)


def test_a_quiet_turn_records_nothing(project, fake_claude, claude_settings, turn):
    root = project.root
    (root / ".gitignore").write_text("*.log\n")
    (root / "old.log").write_text("old\n")
    fake_claude.queue(bash("git status --short && git log --oneline", writes={"tests/test_q.py": "x = 1\n"}))
    result = _tester_turn(turn, claude_settings)
    assert result.reverted_paths == [] and _violations(project) == []
    assert (root / "old.log").read_text() == "old\n" and (root / ".gitignore").exists()


def test_a_coder_may_write_anywhere_but_not_hide_its_own_work_from_the_commit(
    project, fake_claude, claude_settings, turn
):
    root = project.root
    (root / "build").mkdir()
    (root / ".gitignore").write_text("build/\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "ignores")
    fake_claude.queue(
        bash(
            "mkdir -p src && echo 'x = 1' > src/app.py && printf '*.py\\n' > src/.gitignore",
            "printf 'build/\\nnotes.md\\n' > .gitignore && echo n > notes.md && echo out > build/out.txt",
        )
    )
    result = turn(build_executor("claude_code", settings=claude_settings), "coder", unit_id="u1", node_exec_id="ne-c")

    assert not (root / "src/.gitignore").exists() and (root / ".gitignore").read_text() == "build/\n"
    assert (root / "src/app.py").read_text() == "x = 1\n" and (root / "notes.md").exists()
    assert (root / "build/out.txt").exists()  # ignored by the project's own rule: kept, not a finding
    assert _git(root, "status", "--porcelain", "--untracked-files=all").splitlines() == ["?? notes.md", "?? src/app.py"]
    assert sorted(p for p in result.reverted_paths) == ["ignore_rule:.gitignore", "ignore_rule:src/.gitignore"]
    assert result.files_changed == ["notes.md", "src/app.py"]
    assert any("makes git ignore what the turn wrote (src/app.py)" in v for v in _violations(project))


def test_a_ref_made_by_a_turn_running_alongside_is_undone_and_names_that_turn(
    project, fake_claude, claude_settings, turn, tmp_path, unconfined
):
    """Refs are shared by every worktree: the first turn to finish undoes a tag made by a turn still running
    and names it. Each turn's Bash waits for a file the test creates, so the order is fixed."""
    import threading

    from fakes.claude import when

    root = project.root
    other = tmp_path / "other-unit"
    _git(root, "worktree", "add", "-q", "-b", "graphlemon/t/other", str(other))
    go_a, go_b = tmp_path / "go-a", tmp_path / "go-b"
    wait = "while [ ! -f {} ]; do sleep 0.05; done"
    fake_claude.queue(
        when(bash(wait.format(go_b)), cwd=str(other)),  # B: started first, waits
        when(bash("git tag made-by-a", wait.format(go_a)), cwd=str(root)),  # A: tags, then waits
    )
    executor = build_executor("claude_code", settings=claude_settings)
    results: dict[str, object] = {}

    def run(name, workdir, node):
        results[name] = turn(executor, "tester", workdir=workdir, node_exec_id=node)

    b = threading.Thread(target=run, args=("b", other, "ne-b"))
    b.start()
    try:
        _wait_for(lambda: len(fake_claude.calls) == 1)
        a = threading.Thread(target=run, args=("a", root, "ne-a"))
        a.start()
        _wait_for(lambda: "made-by-a" in _git(root, "tag", "--list"))
    finally:
        go_b.touch()
        b.join(60)
        go_a.touch()
        a.join(60)
    assert "made-by-a" not in _git(root, "tag", "--list")
    assert results["b"].reverted_paths == ["git_ref:refs/tags/made-by-a"] and results["a"].reverted_paths == []
    [violation] = [e for e in project.ledger.read_as("node", NodeEvent) if e.event == "violation"]
    assert (
        violation.node_exec_id == "ne-b" and "by this turn or by one running at the same time: ne-a" in violation.error
    )


def _wait_for(condition, timeout: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
