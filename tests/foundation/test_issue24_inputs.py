"""Issue 24 (items 2, 5, 7): a playbook means scripted even with a key set, bare and commit-less repositories
are refused up front, and nested YAML aliases cannot blow a tiny playbook up into a huge transcript or output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from graphlemon.errors import ErrorCode, GraphLemonError

ROOT = Path(__file__).resolve().parents[2]
FAILING_PLANNER = (
    "version: 1\nturns:\n  - match: {role: planner}\n    raise: {error: executor_error, message: stop here}\n"
)


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


# -- item 2: the demo never spends money -------------------------------------------------------


@pytest.mark.system
def test_a_playbook_means_the_scripted_executor_even_with_an_api_key_set(cli, project, tmp_path):
    from graphlemon.stages.session import LoopConfig
    from graphlemon.taskboard import TaskBoard

    book = tmp_path / "pb.yaml"
    book.write_text(FAILING_PLANNER)
    env = {"ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    out = cli("run", "a goal", "--engine", "direct", "--playbook", str(book), "--quiet",
              "--project", str(project.root), env=env, timeout=60)  # fmt: skip
    assert "executor: scripted" in out.stdout, out.stdout + out.stderr
    [task] = TaskBoard(project.ledger).all().values()
    assert LoopConfig.load(project.state_dir, task.task_id).executor == "scripted"
    assert (task.blocked_reason, "stop here" in (task.note or "")) == ("stage_failed", True)  # the playbook ran

    both = cli("run", "a goal", "--executor", "anthropic", "--playbook", str(book), "--project", str(project.root),
               env=env)  # fmt: skip
    assert both.returncode == 2 and both.stderr.startswith("error[INVALID_PARAM]: --playbook is for the scripted")
    switched = cli("resume", task.task_id, "--executor", "anthropic", "--engine", "direct", "--project",
                   str(project.root), env={"ANTHROPIC_API_KEY": ""})  # fmt: skip
    assert switched.returncode == 2 and "--playbook" not in switched.stderr  # the saved playbook is not inherited


def test_the_demo_names_the_scripted_executor():
    from graphlemon.cli.demo_cmd import run_command

    argv = run_command(Path("/tmp/x"), Path("/tmp/pb.yaml"), "prefect")
    assert argv[argv.index("--executor") + 1] == "scripted" and argv[argv.index("--playbook") + 1] == "/tmp/pb.yaml"


# -- item 5: repositories the loop cannot work in ----------------------------------------------


@pytest.mark.system
def test_init_refuses_a_bare_repository_and_writes_nothing(cli, tmp_path):
    bare = tmp_path / "bare.git"
    _git(tmp_path, "init", "-q", "--bare", str(bare))
    before = sorted(p.name for p in bare.iterdir())
    out = cli("init", str(bare), "--yes")
    assert out.returncode == 2 and out.stderr.startswith("error[INVALID_PARAM]:") and "bare" in out.stderr
    assert sorted(p.name for p in bare.iterdir()) == before  # no .git, no .graphlemon
    inside = cli("init", str(bare / "hooks"), "--yes")
    assert inside.returncode == 2 and not (bare / "hooks" / ".git").exists()


@pytest.mark.system
def test_run_refuses_a_repository_without_commits_before_creating_a_task(cli, tmp_path):
    repo = tmp_path / "unborn"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    assert cli("init", str(repo)).returncode == 0
    book = tmp_path / "pb.yaml"
    book.write_text(FAILING_PLANNER)
    out = cli("run", "a goal", "--engine", "direct", "--playbook", str(book), "--project", str(repo))
    assert out.returncode == 2 and out.stderr.startswith("error[INVALID_PARAM]:") and "no commits" in out.stderr
    tasks = repo / ".graphlemon" / "tasks.ndjson"
    assert not tasks.exists() or not tasks.read_text()


# -- item 7: bounded amplification --------------------------------------------------------------


def _alias_bomb(levels: int = 7) -> str:
    """A few hundred bytes of YAML whose aliases expand to 8**levels strings (about 30 MB at 7)."""
    lines = ["version: 1", "turns:", "  - match: {role: coder}", "    output:", "      summary: boom",
             '      l0: &l0 ["xxxxxxxxxx", "xxxxxxxxxx", "xxxxxxxxxx", "xxxxxxxxxx", "xxxxxxxxxx", "xxxxxxxxxx", '
             '"xxxxxxxxxx", "xxxxxxxxxx"]']  # fmt: skip
    lines += [f"      l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 8)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.system
def test_nested_aliases_are_refused_before_they_expand(cli, project, tmp_path):
    book = tmp_path / "bomb.yaml"
    book.write_text(_alias_bomb())
    assert book.stat().st_size < 800
    out = cli("agent", "run", "--role", "coder", "--playbook", str(book), "--project", str(project.root), timeout=60)
    assert out.returncode == 2 and out.stderr.startswith("error[INVALID_PARAM]:") and "aliases" in out.stderr
    assert len(out.stdout) + len(out.stderr) < 10_000
    assert not list((project.state_dir / "logs").glob("**/*.ndjson"))  # no transcript was started


def test_a_recursive_alias_and_modest_reuse(tmp_path):
    from graphlemon.agents.playbook import Playbook

    loop = tmp_path / "loop.yaml"
    loop.write_text("version: 1\nturns:\n  - match: {role: coder}\n    output: &o {summary: x, again: *o}\n")
    with pytest.raises(GraphLemonError) as err:
        Playbook.load(loop)
    assert err.value.code == ErrorCode.INVALID_PARAM and "refers to itself" in err.value.message
    fine = tmp_path / "fine.yaml"
    fine.write_text(_alias_bomb(levels=3))  # 512 strings: aliases used as intended still load
    assert Playbook.load(fine).turns[0].output["summary"] == "boom"


@pytest.mark.system
def test_transcripts_and_printed_output_are_bounded(cli, project, tmp_path, monkeypatch):
    from graphlemon.agents import turn as turn_module

    big = "y" * 1_500_000
    book = tmp_path / "big.yaml"
    book.write_text(json.dumps({"version": 1, "turns": [{"match": {"role": "coder"}, "output": {"summary": big}}]}))
    out = cli("agent", "run", "--role", "coder", "--playbook", str(book), "--project", str(project.root), timeout=60)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout) < 150_000 and "output cut at" in out.stdout
    [transcript] = (project.state_dir / "logs").glob("**/*.ndjson")
    assert transcript.stat().st_size < turn_module.EVENT_MAX_CHARS + 100_000
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert any("truncated_chars" in line for line in lines)
