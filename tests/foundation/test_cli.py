"""The CLI as a real process: init, bugs, status, error format and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.system
def test_help_lists_commands(cli):
    out = cli("--help")
    assert out.returncode == 0
    for command in ("init", "bugs", "status"):
        assert command in out.stdout


@pytest.mark.system
def test_init_bugs_and_status_do_not_import_prefect(git_repo: Path):
    code = (
        "import sys\n"
        "from graphlemon.cli import main\n"
        "for argv in (['--help'], ['init', sys.argv[1]], ['bugs', 'list', '--project', sys.argv[1]], ['status', '--project', sys.argv[1]]):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as e:\n"
        "        assert e.code in (0, None), (argv, e.code)\n"
        "assert 'prefect' not in sys.modules, 'a fast command imported prefect'\n"
        "print('clean')\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(git_repo)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("clean")


@pytest.mark.system
def test_init_json_and_idempotent(cli, git_repo: Path):
    first = json.loads(cli("init", str(git_repo), "--json").stdout)
    second = json.loads(cli("init", str(git_repo), "--json").stdout)
    assert first["created"] and not second["created"]
    assert first["project_id"] == second["project_id"]


@pytest.mark.system
def test_init_non_git_prompt_declined_and_accepted(cli, tmp_path: Path):
    folder = tmp_path / "plain"
    folder.mkdir()
    declined = cli("init", str(folder), input="n\n")
    assert declined.returncode == 1
    assert declined.stderr.strip().splitlines()[-1].startswith("error[ABORTED]:")
    assert list(folder.iterdir()) == []
    no_tty = cli("init", str(folder), input="")
    assert no_tty.returncode == 1 and list(folder.iterdir()) == []
    accepted = cli("init", str(folder), input="y\n")
    assert accepted.returncode == 0 and (folder / ".git").is_dir()
    yes = cli("init", str(folder), "--yes")
    assert "already initialised" in yes.stdout


@pytest.mark.system
def test_missing_project_is_exit_2_with_error_code(cli, tmp_path: Path):
    out = cli("init", str(tmp_path / "nope"))
    assert out.returncode == 2 and out.stderr.startswith("error[PROJECT_NOT_FOUND]:")
    out = cli("bugs", "list", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.startswith("error[PROJECT_NOT_FOUND]:")


@pytest.mark.system
def test_bugs_report_list_show_transition(cli, project):
    root = str(project.root)
    empty = cli("bugs", "report", "--title", "wall", "--description", "", "--project", root)
    assert empty.returncode == 2 and empty.stderr.startswith("error[INVALID_PARAM]:")
    made = cli("bugs", "report", "--title", "wall", "--description", "snake wraps at x=9", "--json", cwd=project.root)
    bug_id = json.loads(made.stdout)["bug_id"]
    listed = json.loads(cli("bugs", "list", "--status", "open", "--json", "--project", root).stdout)
    assert [b["bug_id"] for b in listed] == [bug_id]
    moved = cli("bugs", "transition", bug_id, "fixing", "--project", root)
    assert moved.returncode == 0 and "open -> fixing" in moved.stdout
    bad = cli("bugs", "transition", bug_id, "verified", "--project", root)
    assert bad.returncode == 1 and bad.stderr.startswith("error[INVALID_TRANSITION]:")
    shown = json.loads(cli("bugs", "show", bug_id, "--json", "--project", root).stdout)
    assert shown["status"] == "fixing" and len(shown["history"]) == 2
    assert "snake wraps at x=9" in cli("bugs", "show", bug_id, "--project", root).stdout
    unknown = cli("bugs", "show", "bug-nope", "--project", root)
    assert unknown.returncode == 2 and unknown.stderr.startswith("error[BUG_NOT_FOUND]:")
    bad_status = cli("bugs", "list", "--status", "closed", "--project", root)
    assert bad_status.returncode == 2 and "error[INVALID_PARAM]" in bad_status.stderr


@pytest.mark.system
def test_status_json(cli, project):
    data = json.loads(cli("status", "--json", "--project", str(project.root)).stdout)
    assert data["project_id"] == project.project_id and data["records"]["bug"] == 0


@pytest.mark.system
def test_corrupt_ledger_is_reported_not_skipped(cli, project):
    (project.state_dir / "bugs.ndjson").write_text("{oops\n")
    out = cli("bugs", "list", "--project", str(project.root))
    assert out.returncode == 1 and out.stderr.startswith("error[LEDGER_CORRUPT]:") and "bugs.ndjson:1" in out.stderr


@pytest.mark.system
def test_usage_errors_use_the_error_format_without_a_traceback(cli, project):
    root = str(project.root)
    cases = [
        (("budget", "set", "t-1", "--limit", "abc", "--project", root), "Invalid value for '--limit'"),
        (("bugs", "list", "--project", root, "--status"), "'--status' requires an argument"),
        (("nosuch",), "No such command 'nosuch'"),
        (("test", "--timeout", "soon", "--project", root), "Invalid value for '--timeout'"),
    ]
    for argv, says in cases:
        out = cli(*argv)
        assert out.returncode == 2, (argv, out.stderr)
        last = out.stderr.strip().splitlines()[-1]
        assert last.startswith("error[INVALID_PARAM]:") and says in last, (argv, out.stderr)
        assert "Traceback" not in out.stderr


@pytest.mark.system
def test_a_group_alone_prints_its_help(cli):
    out = cli("bugs")
    assert out.returncode == 2 and "Usage: graphlemon bugs" in out.stderr and "Traceback" not in out.stderr


def test_init_takes_a_path_relative_to_the_current_folder_and_defaults_to_it(cli_in_process, git_repo: Path,
                                                                            monkeypatch):  # fmt: skip
    """The README's bare `graphlemon init` and `graphlemon init .` (the CLI knows where it runs; only the console
    asks for absolute paths)."""
    monkeypatch.chdir(git_repo)
    first = json.loads(cli_in_process("init", ".", "--json").stdout)
    assert first["root"] == str(git_repo.resolve()) and first["created"]
    again = cli_in_process("init", "--json")
    assert json.loads(again.stdout)["project_id"] == first["project_id"]
    monkeypatch.chdir(git_repo.parent)
    assert json.loads(cli_in_process("init", git_repo.name, "--json").stdout)["project_id"] == first["project_id"]


def test_a_run_without_a_key_or_a_playbook_names_every_way_to_run(cli_in_process, git_repo: Path, monkeypatch):
    """Not "the scripted executor needs --playbook" to someone who never asked for it (walk6)."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    cli_in_process("init", str(git_repo))
    plain = cli_in_process("run", "a goal", "-p", str(git_repo))
    assert plain.returncode == 2 and "INVALID_PARAM" in plain.stderr
    for way in ("ANTHROPIC_API_KEY", "--executor claude_code", "--playbook FILE"):
        assert way in plain.stderr, plain.stderr
    scripted = cli_in_process("run", "a goal", "-p", str(git_repo), "--executor", "scripted")
    assert scripted.returncode == 2 and "replays a playbook: give --playbook FILE" in scripted.stderr
