"""Issue 20: the routes a hostile tester / coder took out of the sandbox, each closed.

Every test runs the real tool (`call_tool`, as every backend does) in a real git
repository and asserts: nothing outside changed, the forbidden change is not in
the work tree (nor, for the commit step, in the branch), the violation is recorded.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from graphlemon.agents import SandboxPolicy, ToolContext
from graphlemon.agents.effects import TreeGuard
from graphlemon.agents.sandbox import Sandbox
from graphlemon.agents.tools import call_tool
from graphlemon.models import NodeEvent


def git(cwd: Path, *args: str) -> str:
    """git in `cwd` (checked); its stdout."""
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()



@pytest.fixture
def repo(project):
    """The snake repo's shape: code in src/ and snake/, tests in tests/, all committed."""
    root = project.root
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "snake").mkdir()
    (root / "snake" / "__init__.py").write_text("SPEED = 1\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_app.py").write_text("def test_add():\n    assert 1 == 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "snake")
    return project


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def context(project, role: str, writable: list[str]) -> ToolContext:
    return ToolContext(
        project=project,
        sandbox=Sandbox(SandboxPolicy(root=project.root, writable=writable)),
        role=role,
        node_exec_id=f"ne-{role}",
        task_id="task-1",
        unit_id="u1",
        run_id="r1",
    )


@pytest.fixture
def tester(repo):
    return context(repo, "tester", ["tests/**"])


@pytest.fixture
def coder(repo):
    return context(repo, "coder", ["src/**", "snake/**"])


def refused(ctx: ToolContext, tool: str, **args) -> str:
    outcome = call_tool(ctx, tool, args)
    assert not outcome.ok, outcome.content
    assert "SANDBOX_VIOLATION" in outcome.content, outcome.content
    return outcome.content


def violations(project) -> list[NodeEvent]:
    return [e for e in project.ledger.read_as("node", NodeEvent) if e.event == "violation"]


def tree_status(root: Path) -> str:
    """What git would commit: status of the work tree (the ledger folder is excluded by the project)."""
    return git(root, "status", "--porcelain", "--untracked-files=all")


def listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


# -- 1. predictable temp-file name --------------------------------------------------------------------------


@pytest.mark.parametrize("committed", [False, True])
def test_a_planted_temp_name_symlink_is_never_written_through(tester, repo, outside, committed):
    planted = repo.root / "tests" / ".test_new.py.graphlemon-tmp"
    os.symlink(outside / "pwned.py", planted)
    if committed:  # the repository itself carries the trap
        git(repo.root, "add", "-A")
        git(repo.root, "commit", "-q", "-m", "trap")
    outcome = call_tool(tester, "write_file", {"path": "tests/test_new.py", "content": "def test_x():\n    pass\n"})
    assert outcome.ok, outcome.content
    assert listing(outside) == []
    assert (repo.root / "tests" / "test_new.py").read_text().startswith("def test_x")
    assert not (repo.root / "tests" / "test_new.py").is_symlink()
    assert planted.is_symlink()  # untouched, and never followed


def test_a_temp_name_symlink_into_the_ledger_is_never_written_through(tester, repo):
    timeline = repo.state_dir / "timeline.ndjson"
    timeline.touch()
    before = timeline.read_bytes()
    os.symlink("../.graphlemon/timeline.ndjson", repo.root / "tests" / ".test_led.py.graphlemon-tmp")
    outcome = call_tool(tester, "write_file", {"path": "tests/test_led.py", "content": '{"kind": "evil"}\n'})
    assert outcome.ok, outcome.content
    assert timeline.read_bytes() == before


def test_an_agent_may_not_plant_a_symlink_through_any_tool(tester, repo, outside):
    diff = (
        "diff --git a/tests/.test_x.py.graphlemon-tmp b/tests/.test_x.py.graphlemon-tmp\nnew file mode  120000\n"
        "--- /dev/null\n+++ b/tests/.test_x.py.graphlemon-tmp\n@@ -0,0 +1 @@\n+" + str(outside / "x") + "\n"
        "\\ No newline at end of file\n"
    )
    assert "symlink" in refused(tester, "apply_patch", diff=diff)
    assert not (repo.root / "tests" / ".test_x.py.graphlemon-tmp").is_symlink()
    assert violations(repo)


def test_writes_use_unpredictable_temporary_names_and_leave_none_behind(tester, repo):
    for n in range(3):
        assert call_tool(tester, "write_file", {"path": "tests/test_t.py", "content": f"X = {n}\n"}).ok
    assert listing(repo.root / "tests") == ["test_app.py", "test_t.py"]
    assert (repo.root / "tests" / "test_t.py").stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# -- 2. apply_patch: git decides the paths ------------------------------------------------------------------


def test_a_plain_diff_whose_header_git_strips_into_src_is_refused(tester, repo):
    diff = "--- tests/src/app.py\n+++ tests/src/app.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b\n+    return 42\n"
    outcome = call_tool(tester, "apply_patch", {"diff": diff})  # headers without a/ b/: a format error, said so
    assert not outcome.ok and "format error" in outcome.content and "INVALID_PARAM" in outcome.content
    assert "42" not in (repo.root / "src" / "app.py").read_text()
    assert tree_status(repo.root) == ""
    stripped = diff.replace("--- tests/", "--- a/").replace("+++ tests/", "+++ b/")  # the same target, well formed
    assert "'src/app.py'" in refused(tester, "apply_patch", diff=stripped)
    assert violations(repo)[-1].error.startswith("apply_patch: ")


def test_the_coder_cannot_land_a_test_file_through_a_stripped_header(coder, repo):
    diff = "--- src/tests/test_evil.py\n+++ src/tests/test_evil.py\n@@ -0,0 +1 @@\n+def test_evil(): pass\n"
    diff = diff.replace("--- src/tests/test_evil.py", "--- /dev/null")
    outcome = call_tool(coder, "apply_patch", {"diff": diff})
    assert not outcome.ok and "format error" in outcome.content
    assert not (repo.root / "tests" / "test_evil.py").exists()
    assert tree_status(repo.root) == ""


def _binary_diff(tmp_path: Path, rel: str) -> str:
    """A real `git diff --binary` creating `rel` with bytes git calls binary."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    git(scratch, "init", "-q")
    (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
    (scratch / rel).write_bytes(b"\x00\x01evil\x00" * 50)
    git(scratch, "add", "-A")
    return subprocess.run(
        ["git", "diff", "--cached", "--binary"], cwd=scratch, capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize("target", ["src/evil.bin", "tests/blob.bin"])
def test_a_hidden_binary_patch_is_refused(tester, repo, tmp_path, target):
    allowed = (
        "diff --git a/tests/test_app.py b/tests/test_app.py\n--- a/tests/test_app.py\n+++ b/tests/test_app.py\n"
        "@@ -1,2 +1,2 @@\n def test_add():\n-    assert 1 == 1\n+    assert 2 == 2\n"
    )
    refused(tester, "apply_patch", diff=allowed + _binary_diff(tmp_path, target))
    assert not (repo.root / target).exists()
    assert tree_status(repo.root) == ""  # all or nothing: the allowed hunk did not land either
    assert violations(repo)


def test_a_mode_change_is_refused(coder, tester, repo):
    diff = (
        "diff --git a/snake/__init__.py b/snake/__init__.py\nold mode 100644\nnew mode 100755\n"
        "--- a/snake/__init__.py\n+++ b/snake/__init__.py\n@@ -1 +1 @@\n-SPEED = 1\n+SPEED = 2\n"
    )
    assert "mode" in refused(coder, "apply_patch", diff=diff)
    diff = "diff --git a/tests/test_app.py b/tests/test_app.py\nold mode 100644\nnew mode 100755\n"
    assert "mode" in refused(tester, "apply_patch", diff=diff)
    new_exec = (
        "diff --git a/tests/run.sh b/tests/run.sh\nnew file mode 100755\n--- /dev/null\n+++ b/tests/run.sh\n"
        "@@ -0,0 +1 @@\n+echo hi\n"
    )
    assert "executable" in refused(tester, "apply_patch", diff=new_exec)
    assert not os.access(repo.root / "snake" / "__init__.py", os.X_OK)
    assert tree_status(repo.root) == ""
    assert len(violations(repo)) == 3


def test_a_role_whose_policy_allows_modes_may_change_them(repo):
    ctx = ToolContext(
        project=repo,
        sandbox=Sandbox(SandboxPolicy(root=repo.root, writable=["snake/**"], allow_mode_change=True)),
        role="coder",
        node_exec_id="ne-c",
    )
    diff = "diff --git a/snake/__init__.py b/snake/__init__.py\nold mode 100644\nnew mode 100755\n"
    assert call_tool(ctx, "apply_patch", {"diff": diff}).ok
    assert os.access(repo.root / "snake" / "__init__.py", os.X_OK)


# -- 3. symlinks through patches, in each syntax git accepts ------------------------------------------------

LINK_HEADERS = {
    "standard": "new file mode 120000\n",
    "two spaces": "new file mode  120000\n",
    "leading zero": "new file mode 0120000\n",
    "with index line": "new file mode 120000\nindex 0000000..1111111 120000\n",
}


@pytest.mark.parametrize("syntax", sorted(LINK_HEADERS))
def test_symlink_creation_is_refused_in_every_syntax(tester, repo, outside, syntax):
    diff = (
        f"diff --git a/tests/link_out b/tests/link_out\n{LINK_HEADERS[syntax]}--- /dev/null\n+++ b/tests/link_out\n"
        f"@@ -0,0 +1 @@\n+{outside}\n\\ No newline at end of file\n"
    )
    assert "symlink" in refused(tester, "apply_patch", diff=diff)
    assert not os.path.lexists(repo.root / "tests" / "link_out")
    assert violations(repo)


def test_symlink_creation_with_crlf_lines_is_refused(tester, repo, outside):
    diff = (
        "diff --git a/tests/evil_link b/tests/evil_link\r\nnew file mode 120000\r\n--- /dev/null\r\n"
        f"+++ b/tests/evil_link\r\n@@ -0,0 +1 @@\r\n+{outside}\r\n\\ No newline at end of file\r\n"
    )
    refused(tester, "apply_patch", diff=diff)
    assert not os.path.lexists(repo.root / "tests" / "evil_link")


def test_a_file_turned_into_a_symlink_is_refused(tester, repo, outside):
    diff = (
        "diff --git a/tests/test_app.py b/tests/test_app.py\ndeleted file mode 100644\n--- a/tests/test_app.py\n"
        "+++ /dev/null\n@@ -1,2 +0,0 @@\n-def test_add():\n-    assert 1 == 1\n"
        "diff --git a/tests/test_app.py b/tests/test_app.py\nnew file mode 120000\n--- /dev/null\n"
        f"+++ b/tests/test_app.py\n@@ -0,0 +1 @@\n+{outside}\n\\ No newline at end of file\n"
    )
    refused(tester, "apply_patch", diff=diff)
    assert not (repo.root / "tests" / "test_app.py").is_symlink()
    assert tree_status(repo.root) == ""


def test_an_existing_symlink_in_the_repository_is_a_path_that_leaves(tester, repo, outside):
    os.symlink(repo.state_dir, repo.root / "tests" / "ledger")
    os.symlink("test_app.py", repo.root / "tests" / "alias.py")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "links")
    refused(tester, "write_file", path="tests/ledger/timeline.ndjson", content="{}\n")
    refused(tester, "write_file", path="tests/alias.py", content="x = 1\n")
    diff = "--- a/tests/alias.py\n+++ b/tests/alias.py\n@@ -1,2 +1,2 @@\n def test_add():\n-    assert 1 == 1\n+    assert 0\n"
    refused(tester, "apply_patch", diff=diff)
    assert not (repo.state_dir / "timeline.ndjson").exists()
    assert (repo.root / "tests" / "test_app.py").read_text().endswith("1 == 1\n")


def test_the_commit_step_never_commits_a_symlink_that_leaves_the_repository(repo, outside):
    from graphlemon.worktrees import Worktrees

    trees = Worktrees(repo.root, "task-1")
    wt = trees.unit("u1")
    os.symlink(outside, wt.path / "tests" / "link_out")
    os.symlink("../.graphlemon/timeline.ndjson", wt.path / "tests" / "evil_link")
    os.symlink("test_app.py", wt.path / "tests" / "inside_link")
    (wt.path / "tests" / "test_more.py").write_text("def test_more():\n    pass\n")
    sha = trees.commit_all(wt, "unit work")
    committed = git(wt.path, "ls-tree", "-r", "--name-only", sha).splitlines()
    assert "tests/test_more.py" in committed and "tests/inside_link" in committed
    assert "tests/link_out" not in committed and "tests/evil_link" not in committed
    assert sorted(r.path for r in trees.refused) == ["tests/evil_link", "tests/link_out"]
    assert listing(outside) == []


# -- judging the effect: any backend's change, seen the way git sees it ------------------------------------


def test_the_effect_guard_reverts_what_a_backend_did_outside_the_rules(repo, outside):
    policy = SandboxPolicy(root=repo.root, writable=["tests/**"])
    (repo.root / "tests" / "wip.py").write_text("draft\n")  # dirty before the turn: restored byte for byte
    guard = TreeGuard(Sandbox(policy))
    (repo.root / "src" / "app.py").write_text("pwned\n")
    (repo.root / "src" / "new.py").write_text("pwned\n")
    (repo.root / "tests" / "wip.py").write_text("pwned\n")
    os.chmod(repo.root / "tests" / "test_app.py", 0o755)
    os.symlink(outside, repo.root / "tests" / "link_out")
    (repo.root / "tests" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    refusals = {r.path: r.why for r in guard.judge()}
    assert set(refusals) == {"src/app.py", "src/new.py", "tests/test_app.py", "tests/link_out"}
    assert "symlink" in refusals["tests/link_out"] and "mode" in refusals["tests/test_app.py"]
    assert (repo.root / "src" / "app.py").read_text().startswith("def add")
    assert not (repo.root / "src" / "new.py").exists() and not os.path.lexists(repo.root / "tests" / "link_out")
    assert not os.access(repo.root / "tests" / "test_app.py", os.X_OK)
    assert (repo.root / "tests" / "wip.py").read_text() == "pwned\n"  # inside the allow-list: kept
    assert tree_status(repo.root).splitlines() == ["?? tests/test_ok.py", "?? tests/wip.py"]


def test_direct_hostile_paths_are_still_refused_and_recorded(tester, repo, outside):
    for path in ("../outside/x.py", str(outside / "x.py"), ".git/hooks/pre-commit", ".graphlemon/timeline.ndjson"):
        refused(tester, "write_file", path=path, content="x\n")
    assert listing(outside) == []
    assert len(violations(repo)) == 4
