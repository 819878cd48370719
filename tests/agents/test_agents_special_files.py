"""The host never blocks on a FIFO a confined run left in the work tree (effects.clear_special_files).

git opens `.gitignore` / `.gitattributes` in every folder it walks and a nested repository's `.git/HEAD`; a FIFO
there blocks `git status` until its 120 s timeout. After every confined run (a `run_tests` call, a claude_code
turn) each FIFO, socket and device file is removed before git looks, and recorded as a violation. Each test plants
real FIFOs and bounds the time the host takes (far below git's 120 s timeout).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest
from fakes.claude import bash

from graphlemon.agents import SandboxPolicy, ToolContext, build_executor
from graphlemon.agents.effects import clear_special_files, guard_run
from graphlemon.agents.sandbox import Sandbox
from graphlemon.agents.tools import call_tool
from graphlemon.models import NodeEvent

BOUND_S = 60.0  # git's own timeout is 120 s: a host call that waited on a FIFO would take that long


def _status(root) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, timeout=10).stdout


@pytest.mark.system  # it binds a Unix socket (the socket file is one of the special files)
def test_every_special_file_is_removed_before_git_looks(git_repo, tmp_path):
    guard = guard_run(git_repo, ["sub/**"])  # made before the run, as the loop makes it
    (git_repo / "sub" / "nest" / ".git").mkdir(parents=True)
    for rel in (".gitignore", "sub/.gitattributes", "sub/nest/.git/HEAD"):
        os.mkfifo(git_repo / rel)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(git_repo / "sub" / "listening.sock"))
    (git_repo / "linked").symlink_to(tmp_path)  # a link is never entered (nor a FIFO behind it looked for)
    os.mkfifo(tmp_path / "outside.fifo")
    started = time.monotonic()
    refusals = clear_special_files(git_repo)
    refusals += guard.judge()
    assert time.monotonic() - started < BOUND_S
    sock.close()
    cleared = {r.path: r.why for r in refusals if "never opens" in r.why}
    assert sorted(cleared) == [".gitignore", "sub/.gitattributes", "sub/listening.sock", "sub/nest/.git/HEAD"]
    assert "is a FIFO" in cleared[".gitignore"] and "is a socket" in cleared["sub/listening.sock"]
    assert all(why.endswith("it was removed") for why in cleared.values())
    assert not any(os.path.lexists(git_repo / rel) for rel in cleared)
    assert (tmp_path / "outside.fifo").exists()  # behind a link: not the work tree's
    _status(git_repo)  # git answers again


@pytest.mark.system
def test_a_fifo_a_test_run_plants_does_not_stall_run_tests(project):
    (project.root / "tests").mkdir()
    (project.root / "tests" / "test_plant.py").write_text(
        "import os, pathlib\n\ndef test_plant():\n"
        "    here = pathlib.Path(__file__).parent\n"
        "    os.mkfifo(here / '.gitignore')\n    os.mkfifo(here / '.gitattributes')\n"
    )
    (project.root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    ctx = ToolContext(
        project=project, sandbox=Sandbox(SandboxPolicy(root=project.root, writable=["tests/**"])), role="tester",
        node_exec_id="ne-f", task_id="task-f", unit_id="u1", run_id="r1",
    )  # fmt: skip
    started = time.monotonic()
    outcome = call_tool(ctx, "run_tests", {"targets": ["tests"], "framework": "pytest", "timeout_s": 60})
    assert time.monotonic() - started < BOUND_S
    assert outcome.ok, outcome.content
    assert outcome.content["summary"]["passed"] == 1
    assert not os.path.lexists(project.root / "tests" / ".gitignore")
    errors = [e.message for e in ctx.tool_errors]
    assert any("'tests/.gitignore' is a FIFO" in m for m in errors), errors
    assert any("'tests/.gitattributes' is a FIFO" in m for m in errors), errors


@pytest.mark.system
def test_a_fifo_a_claude_turn_plants_is_removed_and_recorded(project, fake_claude, claude_settings, turn):
    fake_claude.queue(bash("mkfifo .gitignore && mkdir -p tests && mkfifo tests/.gitattributes"))
    started = time.monotonic()
    result = turn(build_executor("claude_code", settings=claude_settings), "tester", node_exec_id="ne-fifo")
    assert time.monotonic() - started < BOUND_S
    assert fake_claude.bash_outputs == ["exit 0"]  # the FIFOs were made inside the sandbox
    assert not os.path.lexists(project.root / ".gitignore")
    assert not os.path.lexists(project.root / "tests" / ".gitattributes")
    assert {".gitignore", "tests/.gitattributes"} <= set(result.reverted_paths)
    violations = [e.error for e in project.ledger.read_as("node", NodeEvent) if e.event == "violation"]
    assert any("'.gitignore' is a FIFO" in v for v in violations), violations
