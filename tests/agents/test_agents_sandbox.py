"""The sandbox: paths resolved, escapes refused, writes limited to the role's allow-list."""

from __future__ import annotations

import os

import pytest

from graphlemon.agents import SandboxPolicy, ToolContext
from graphlemon.agents.sandbox import Sandbox, glob_match
from graphlemon.agents.tools import call_tool
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.models import NodeEvent


@pytest.fixture
def sandbox(tmp_path):
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "app.py").write_text("x = 1\n")
    return Sandbox(SandboxPolicy(root=root, writable=["tests/**", ".graphlemon/units/u1/runs/r1/**"]))


@pytest.mark.parametrize(
    "path, why",
    [
        ("../../etc/passwd", "'..'"),
        ("tests/../../outside.txt", "'..'"),
        ("/etc/passwd", "absolute"),
        ("~/.ssh/id_rsa", "a home folder"),
        ("C:/Windows/x", "absolute"),
        ("", "empty"),
        ("   ", "empty"),
        ("tests/a\x00b.py", "NUL"),
    ],
)
def test_hostile_paths_are_refused_for_reads_and_writes(sandbox, path, why):
    for resolve in (sandbox.resolve_read, sandbox.resolve_write):
        with pytest.raises(GraphLemonError) as err:
            resolve(path)
        assert err.value.code == ErrorCode.SANDBOX_VIOLATION
        assert why in err.value.message


def test_write_outside_the_allow_list_is_refused_and_inside_is_resolved(sandbox):
    with pytest.raises(GraphLemonError, match="outside this role's writable paths"):
        sandbox.resolve_write("src/app.py")
    assert sandbox.resolve_write("tests/unit/test_app.py") == sandbox.root / "tests/unit/test_app.py"
    assert sandbox.resolve_write("./tests/x.py") == sandbox.root / "tests/x.py"
    assert sandbox.resolve_write(".graphlemon/units/u1/runs/r1/result.json").name == "result.json"
    with pytest.raises(GraphLemonError):
        sandbox.resolve_write(".graphlemon/units/u2/runs/r1/result.json")


def test_symlinks_leaving_the_root_are_refused(sandbox, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s3cret")
    os.symlink(outside, sandbox.root / "tests" / "link_dir")
    os.symlink(outside / "secret.txt", sandbox.root / "tests" / "link_file")
    for path in ("tests/link_dir/secret.txt", "tests/link_file", "tests/link_dir/new.txt"):
        with pytest.raises(GraphLemonError, match="outside the sandbox root"):
            sandbox.resolve_read(path)
        with pytest.raises(GraphLemonError, match="outside the sandbox root"):
            sandbox.resolve_write(path)


def test_a_symlink_inside_the_allow_list_pointing_at_code_is_refused_for_writes(sandbox):
    os.symlink(sandbox.root / "src" / "app.py", sandbox.root / "tests" / "app_alias.py")
    assert sandbox.resolve_read("tests/app_alias.py") == sandbox.root / "src" / "app.py"
    with pytest.raises(GraphLemonError, match="'src/app.py' is outside"):
        sandbox.resolve_write("tests/app_alias.py")


def test_git_internals_are_never_readable(sandbox):
    (sandbox.root / ".git").mkdir()
    with pytest.raises(GraphLemonError, match=".git"):
        sandbox.resolve_read(".git/config")


@pytest.mark.parametrize(
    "pattern, path, expected",
    [
        ("tests/**", "tests/a.py", True),
        ("tests/**", "tests/deep/er/a.py", True),
        ("tests/**", "src/tests/a.py", False),
        ("**/*.spec.ts", "web/a.spec.ts", True),
        ("**/*.spec.ts", "a.spec.ts", True),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/sub/a.py", False),
        ("**", "anything/at/all.txt", True),
        ("**", ".git/config", False),
        ("**", ".graphlemon/ledger.ndjson", False),
        ("*", ".graphlemon", False),
        (".graphlemon/units/u1/**", ".graphlemon/units/u1/runs/r/x.json", True),
        ("triage.json", "triage.json", True),
        ("a?.py", "ab.py", True),
        ("a?.py", "a/.py", False),
    ],
)
def test_glob_matching(pattern, path, expected):
    assert glob_match(pattern, path) is expected


def test_a_refused_tool_call_is_a_node_event_and_a_tool_error(project):
    policy = SandboxPolicy(root=project.root, writable=["tests/**"])
    ctx = ToolContext(
        project=project, sandbox=Sandbox(policy), role="tester", node_exec_id="ne-1", task_id="t-1", unit_id="u1"
    )
    outcome = call_tool(ctx, "write_file", {"path": "src/app.py", "content": "pwned"})
    assert not outcome.ok
    assert outcome.content.startswith("error[SANDBOX_VIOLATION]")
    assert not (project.root / "src" / "app.py").exists()
    [event] = project.ledger.read_as("node", NodeEvent)
    assert (event.event, event.node_exec_id, event.stage, event.error_code) == (
        "violation",
        "ne-1",
        "tester",
        "SANDBOX_VIOLATION",
    )
    assert "src/app.py" in event.error
    assert ctx.tool_errors[0].path == "src/app.py"
