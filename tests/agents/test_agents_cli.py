"""`graphlemon agent run|tools` as a real subprocess."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.system

PLAYBOOK = """
version: 1
turns:
  - match: {role: tester, unit: snake, attempt: 1}
    usage: {input_tokens: 10, output_tokens: 5}
    actions:
      - write_file: {path: tests/test_snake.py, content: "def test_moves():\\n    assert True\\n"}
      - write_file: {path: snake.py, content: "hacked"}
    output: {total: 1, passed: 1, failed: 0, skipped: 0}
  - match: {role: tester, unit: snake, attempt: 2}
    output: {total: "lots"}
"""


def test_agent_run_scripted_end_to_end(project, write_playbook, cli):
    book = write_playbook(PLAYBOOK)
    args = [
        "agent",
        "run",
        "--role",
        "tester",
        "--executor",
        "scripted",
        "--playbook",
        str(book),
        "--project",
        str(project.root),
        "--unit",
        "snake",
    ]
    proc = cli(*args, "--json", "--output-model", "graphlemon.models:TestSummary", "--task", "task-1")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["executor"] == "scripted" and result["stop_reason"] == "completed"
    assert result["output"] == {"total": 1, "passed": 1, "failed": 0, "skipped": 0}
    assert (
        result["files_changed"] == ["tests/test_snake.py"] and result["tool_errors"][0]["code"] == "SANDBOX_VIOLATION"
    )
    assert result["usage"]["calls"] == 1 and result["task_id"] == "task-1"
    assert (project.root / "tests/test_snake.py").exists() and not (project.root / "snake.py").exists()

    human = cli(*args, "--attempt", "2", "--output-model", "graphlemon.models:TestSummary")
    assert human.returncode == 1 and "output_invalid" in human.stdout and "total" in human.stdout


def test_agent_run_bad_input_is_exit_2_with_a_clear_message(project, write_playbook, cli, tmp_path):
    book = str(write_playbook(PLAYBOOK))
    base = ["agent", "run", "--project", str(project.root), "--playbook", book]
    cases = [
        (["--role", "hacker"], "unknown role 'hacker'"),
        (["--role", "coder"], "no turn for role coder"),
        (["--role", "tester", "--unit", "snake", "--attempt", "3"], "no turn matches role=tester unit=snake attempt=3"),
        (["--role", "tester", "--executor", "gpt"], "unknown executor 'gpt'"),
        (["--role", "tester", "--unit", "../etc"], "unit_id '../etc'"),
        (["--role", "tester", "--output-model", "nope"], "expected module:Class"),
        (["--role", "tester", "--output-model", "graphlemon.models:utcnow"], "not a pydantic model"),
        (["--role", "tester", "--prompt", ""], "context (prompt) is empty"),
        (["--role", "tester", "--prompt-file", str(tmp_path / "missing.md")], "does not exist"),
    ]
    for extra, message in cases:
        proc = cli(*base, *extra)
        assert proc.returncode == 2, (extra, proc.stdout, proc.stderr)
        assert proc.stderr.startswith("error[INVALID_PARAM]") and message in proc.stderr, (extra, proc.stderr)
    missing = cli(
        "agent", "run", "--role", "tester", "--playbook", str(tmp_path / "none.yaml"), "--project", str(project.root)
    )
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    no_project = cli("agent", "run", "--role", "tester", "--playbook", book, "--project", str(tmp_path))
    assert no_project.returncode == 2 and "PROJECT_NOT_FOUND" in no_project.stderr


def test_agent_tools_lists_schemas(cli):
    proc = cli("agent", "tools", "--role", "bug-triager", "--json")
    assert proc.returncode == 0, proc.stderr
    names = [t["name"] for t in json.loads(proc.stdout)]
    assert "extract_evidence" in names and "bug_open" not in names
    assert "run_tests" in cli("agent", "tools").stdout
    assert cli("agent", "run", "--help").returncode == 0
