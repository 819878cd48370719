"""The host never trusts what the sandbox wrote, no stage runs the project's code outside it, and a person is told
of every refused action (issue 43, classes 1, 2, 4 and 8) — through the real loop, as root in CI.

Every attack runs inside the sandbox (a tester's conftest in a confined test run, a fake `claude` planner whose Bash
runs in the confined process) or is a file the test plants itself; the secret is a canary file of root's (0600)
the test made. Nothing here runs attack code unconfined.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from _loop_helpers import CALC, claude_behaviour, claude_calc, script_turn
from conftest import make_repo, playbook_variant, turn

from graphlemon.devloop.loop import run_devloop
from graphlemon.devloop.stages import Stages
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.models import NodeEvent
from graphlemon.stages.session import LoopConfig, LoopSession
from graphlemon.stages.validator import Check, run_check
from graphlemon.taskboard import TaskBoard
from graphlemon.testrun import confine
from graphlemon.testrun.command_run import OUTPUT_LOG
from graphlemon.testrun.confine import Confinement
from graphlemon.testrun.frameworks.pytest import REPORT_ENV

pytestmark = pytest.mark.system  # the real loop, confined runs

CANARY = "canary-host-secret-41f7"  # never a real secret


@pytest.fixture
def canary(tmp_path) -> Path:
    folder = tmp_path / "host-only"
    folder.mkdir(mode=0o700)
    path = folder / "secret.txt"
    path.write_text(CANARY)
    path.chmod(0o600)
    return path


def _violations(project) -> list[NodeEvent]:
    return [e for e in project.ledger.read_as("node", NodeEvent) if e.event == "violation"]


def _nowhere(root: Path, text: str) -> None:
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert text not in path.read_text(errors="replace"), path


def _git(root, *args) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


# the tester's conftest, run confined: on its first run it swaps the run's captured output and its report (in the
# runner's scratch folder, which the run may write) for links to the canary and to /proc/self/environ
PLANT = '''
import os, pathlib
marker = pathlib.Path(__file__).with_name(".planted")
if not marker.exists():
    marker.write_text("1")
    report = os.environ["{report_env}"]
    folder = os.path.dirname(report)
    for name, target in (("output.log", "{canary}"), (os.path.basename(report), "/proc/self/environ")):
        path = os.path.join(folder, name)
        if os.path.lexists(path):
            os.remove(path)
        os.symlink(target, path)
'''


def test_links_planted_for_the_host_and_a_bare_repository_are_refused_recorded_and_named(tmp_path, canary, cli):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    conftest = PLANT.format(report_env=REPORT_ENV, canary=canary)
    bare = {"tests/add/fixture/HEAD": "ref: refs/heads/main\n", "tests/add/fixture/objects/info/packs": "\n",
            "tests/add/fixture/refs/heads/main": "0" * 40 + "\n",
            "tests/add/fixture/config": f"[core]\n\tfsmonitor = touch {tmp_path}/FSMONITOR_RAN\n"}  # fmt: skip

    def attack(data):
        actions = turn(data, role="tester", unit="add")["actions"]
        actions.append({"write_file": {"path": "tests/add/conftest.py", "content": conftest}})
        actions += [{"write_file": {"path": path, "content": text}} for path, text in bare.items()]

    task = TaskBoard(project.ledger).create("Build calc")
    session = LoopSession(project, task.task_id, LoopConfig(playbook=playbook_variant(tmp_path, CALC, attack)))
    final = run_devloop(session, Stages(session.run))
    assert final.status == "done", final

    refused = "\n".join(v.error or "" for v in _violations(project))
    assert "output.log" in refused and "goes through a symlink" in refused  # the host did not follow it
    assert "pytest-report.jsonl" in refused
    assert "inside a folder git would take for a repository" in refused
    _nowhere(project.state_dir, CANARY)  # neither the ledger nor a log holds the canary
    assert not [p for p in _git(project.root, "ls-files").splitlines() if "fixture" in p]
    _git(project.root, "status")
    assert not (tmp_path / "FSMONITOR_RAN").exists()

    status = cli("status", "--project", str(project.root))
    assert status.returncode == 0, status.stderr
    assert "refused action" in status.stdout and CANARY not in status.stdout
    detail = cli("status", final.task_id, "--project", str(project.root), "--wide")
    assert f"done — with {len(_violations(project))} refused actions" in detail.stdout, detail.stdout
    as_json = json.loads(cli("status", "--project", str(project.root), "--json").stdout)
    assert as_json["tasks"][0]["violations"]["count"] == len(_violations(project))


def test_a_benchmark_check_runs_confined_with_the_same_refusal(tmp_path, monkeypatch):
    """A check is the project's code: it runs as a test run does (uid 65534 as root, no secret of GraphLemon's in
    its environment, a private home holding only the toolchains), and is refused when confinement is required and cannot be had."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("SBX_CANARY_SETTING", CANARY)  # not secret-named: only the allow-list keeps it out
    probe = "import os, sys; print('uid', os.getuid(), 'env', os.environ.get('SBX_CANARY_SETTING'), 'home', " \
            "sorted(set(os.listdir(os.environ['HOME'])) - {'.cargo', '.rustup', '.pyenv', 'go'})); sys.exit(3)"  # fmt: skip
    check = run_check(Check(name="who", command=f"{{python}} -c \"{probe}\""), work,
                      Confinement(workdir=work, mode="required"))  # fmt: skip
    assert check.confinement == "bwrap" and check.exit_code == 3 and not check.ok
    assert "uid 65534 env None home []" in check.output_tail, check.output_tail
    monkeypatch.setattr(confine._probe, "result", (None, "bubblewrap (bwrap) is not installed"))
    with pytest.raises(GraphLemonError) as err:
        run_check(Check(name="who", command="true"), work, Confinement(workdir=work, mode="required"))
    assert err.value.code == ErrorCode.TEST_RUNNER_ERROR and "refusing" in err.value.message


def test_a_check_that_swaps_its_output_for_a_link_is_not_followed(tmp_path, canary):
    work = tmp_path / "work"
    work.mkdir()
    # its output is a pipe (as under its own runner), so the file GraphLemon copies it into is found by its folder,
    # the run's scratch that the sandbox can write: swapped for a link to a host file while the run goes on
    swap = f'for f in /tmp/graphlemon-*/{OUTPUT_LOG}; do rm -f "$f"; ln -s {canary} "$f"; echo swapped; done; exit 1'
    check = run_check(Check(name="swap", command=f"sh -c '{swap}'"), work, Confinement(workdir=work, mode="required"))
    assert check.refused_reads and "goes through a symlink" in check.refused_reads[0]
    assert CANARY not in check.output_tail and not check.ok


def test_a_claude_planner_works_in_a_scratch_tree_and_its_planted_drafts_are_refused(tmp_path, canary, cli):
    """The planner's turn never runs in the person's work tree: what its Bash does to `.venv`, an ignored database
    or pyproject.toml happens in a scratch work tree removed after the turn. Drafts it swapped for a link to the canary and
    a FIFO are not followed: recorded, the plan rejected, the next attempt plans; the task ends done, saying so."""
    project = make_repo(tmp_path / "calc", CALC / "repo")
    root = project.root
    (root / ".gitignore").write_text(".venv/\n*.db\n")
    _git(root, "add", ".gitignore")
    _git(root, "commit", "-qm", "ignore")
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "activate").write_text("# the person's venv\n")
    (root / "app.db").write_bytes(b"the person's data" * 1000)
    pyproject = (root / "pyproject.toml").read_text()
    planted = claude_behaviour(script_turn("planner"))
    drafts = ".graphlemon/plan/drafts"
    planted["steps"][-1:-1] = [{"bash": (
        f"ln -sf {canary} {drafts}/brd.md; rm -f {drafts}/sdd.md; mkfifo {drafts}/sdd.md; "
        "mkdir -p .venv/bin; echo pwned > .venv/bin/activate; rm -f app.db; echo pwned >> pyproject.toml"
    )}]  # fmt: skip
    from fakes.claude import FakeClaude

    fake = FakeClaude(tmp_path)
    fake.queue(planted, *claude_calc())
    env = {**fake.env(), "GRAPHLEMON_CLAUDE_BIN": str(fake.bin)}
    run = cli("run", "Build calc", "--project", str(root), "--executor", "claude_code", "--engine", "direct",
              "--json", env=env)  # fmt: skip
    assert run.returncode == 0, run.stderr + run.stdout
    result = json.loads(run.stdout)
    assert result["status"] == "done" and result["violations"]["count"] >= 2
    assert (root / ".venv" / "bin" / "activate").read_text() == "# the person's venv\n"
    assert (root / "app.db").read_bytes() == b"the person's data" * 1000
    assert (root / "pyproject.toml").read_text() == pyproject
    planner_cwds = {c["cwd"] for c in fake.calls if "You are the Planner agent" in json.dumps(c)}
    assert planner_cwds and all(os.path.realpath(c) != os.path.realpath(root) for c in planner_cwds)
    assert not [p for p in (project.state_dir / "worktrees").rglob("_scratch-*")]  # nothing outlived the turn
    refused = [v.error or "" for v in _violations(project) if v.stage == "planner"]
    assert any("brd.md" in r and "symlink" in r for r in refused) and any("sdd.md" in r and "FIFO" in r for r in refused)
    _nowhere(project.state_dir, CANARY)
