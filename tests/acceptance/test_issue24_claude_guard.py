"""Issue 24 item 3 through the whole loop: a claude_code coder that commits, tags and hides its work.

The fake `claude` really runs the coder's Bash commands in the unit's worktree, inside the sandbox: its commit
under its own name and its tag fail there (git's state is read-only to it), and it writes a `.gitignore` with
`*` (and a file it hides). The run must still end `done` with the code merged by GraphLemon's own commits,
nothing authored by the agent reachable from any ref, no tag left, and each escape that got into the work tree
recorded as a violation.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from _loop_helpers import CALC, claude_behaviour, claude_calc, script_turn
from conftest import make_repo
from fakes.claude import FakeClaude

from graphlemon.models import NodeEvent

pytestmark = pytest.mark.system

SNEAKY = (
    "git add -A; git -c user.name=agent -c user.email=agent@example.invalid commit -qm 'agent: sneaky'; "
    "git tag agent-was-here; printf '*\\n' > .gitignore; echo 'x' > hidden_note.md"
)


def _git(root, *args):
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def test_a_coder_that_commits_tags_and_hides_its_work_is_undone_and_recorded(tmp_path, cli):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    sneaky_add = claude_behaviour(script_turn("coder", "add"))
    sneaky_add["steps"][-1:-1] = [{"bash": SNEAKY}]
    fake = FakeClaude(tmp_path)
    fake.queue(sneaky_add, *claude_calc())
    env = {**fake.env(), "GRAPHLEMON_CLAUDE_BIN": str(fake.bin)}
    run = cli("run", "Build calc", "--project", str(project.root), "--executor", "claude_code", "--engine", "direct",
              "--json", env=env)  # fmt: skip
    assert run.returncode == 0, run.stderr + run.stdout
    assert json.loads(run.stdout)["status"] == "done"

    root = project.root
    subjects = _git(root, "log", "--all", "--format=%s").splitlines()
    assert "agent: sneaky" not in subjects, subjects  # the agent's commit is on no ref
    assert "agent-was-here" not in _git(root, "tag", "--list")
    assert "a + b" in (root / "calc" / "add.py").read_text()  # the work itself was committed by the loop and merged
    files = _git(root, "ls-files").splitlines()
    assert ".gitignore" not in files and "hidden_note.md" not in files  # outside the unit's paths: deleted

    violations = [e for e in project.ledger.read_as("node", NodeEvent) if e.event == "violation"]
    assert {v.error_code for v in violations} == {"SANDBOX_VIOLATION"}
    add = "\n".join(v.error or "" for v in violations if v.unit_id == "add" and v.stage == "coder")
    assert "ignored_file: claude created '.gitignore'" in add and "created 'hidden_note.md'" in add
    # the commit and the tag failed inside the sandbox: there was no git state to put back
    assert not [v for v in violations if "git_commit" in (v.error or "") or "git_ref" in (v.error or "")]
