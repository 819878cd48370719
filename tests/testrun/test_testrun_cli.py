"""`graphlemon test` as a real process: one JSON object, exit codes, signal forwarding."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from .helpers import alive

CONTRACT = [
    "ok",
    "framework",
    "command",
    "exit_code",
    "duration_ms",
    "timed_out",
    "crashed",
    "summary",
    "failures",
    "output_tail",
    "counts_source",
    "unparsed",
    "warnings",
    "subtests",
    "complete",
]


@pytest.mark.system
def test_json_output_is_one_object_with_the_contract_keys(cli, fixture_project):
    project = fixture_project("pytest_mixed")
    proc = cli("test", "--project", str(project), "--json", "tests/test_mixed.py::test_status_code")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)  # exactly one JSON document on stdout
    assert list(data) == CONTRACT
    assert data["summary"] == {"total": 1, "passed": 0, "failed": 1, "skipped": 0}
    assert data["failures"][0]["name"] == "tests/test_mixed.py::test_status_code"


@pytest.mark.system
def test_the_lean_entry_and_the_full_app_print_the_same_result(cli, fixture_project):
    """`graphlemon test … --json` runs on its lean path (no typer); the full app's `test` prints the same object."""
    project = fixture_project("pytest_mixed")
    args = ["test", "--project", str(project), "--json", "tests/test_mixed.py::test_status_code", "--timeout", "60"]
    lean = cli(*args)
    full = subprocess.run([sys.executable, "-c", "import sys; from graphlemon.cli import main; main(sys.argv[1:])", *args],
                          capture_output=True, text=True)  # fmt: skip
    assert (lean.returncode, full.returncode) == (1, 1), (lean.stderr, full.stderr)
    a, b = json.loads(lean.stdout), json.loads(full.stdout)
    for data in (a, b):
        data.pop("duration_ms")
    assert a == b and a["failures"][0]["hint_confidence"] == "specific"
    bad = cli("test", "--project", str(project), "--json", "--timeout", "nan")
    assert bad.returncode == 2 and "INVALID_PARAM" in bad.stderr and bad.stdout == ""


@pytest.mark.system
def test_exit_zero_when_ok_and_a_table_without_json(cli, fixture_project):
    project = fixture_project("pytest_mixed")
    ok = cli("test", "-p", str(project), "tests/test_mixed.py::test_add_passes")
    assert ok.returncode == 0 and "1 passed" in ok.stdout
    failing = cli("test", "-p", str(project), "--framework", "pytest", "test_status_code")
    assert failing.returncode == 1 and "HTTP exchange" in failing.stdout.replace("\n", " ").replace("│", "")


@pytest.mark.system
def test_usage_errors_exit_2(cli, fixture_project, tmp_path):
    project = fixture_project("pytest_empty")
    missing = cli("test", "--project", str(tmp_path / "nope"), "--json")
    assert missing.returncode == 2 and "PROJECT_NOT_FOUND" in missing.stderr and missing.stdout == ""
    unknown = cli("test", "--project", str(project), "--framework", "tape")
    assert unknown.returncode == 2 and "UNKNOWN_FRAMEWORK" in unknown.stderr
    bad_timeout = cli("test", "--project", str(project), "--timeout", "-1")
    assert bad_timeout.returncode == 2 and "INVALID_PARAM" in bad_timeout.stderr


@pytest.mark.system
def test_sigterm_is_forwarded_to_the_whole_test_process_group(fixture_project, tmp_path):
    project = fixture_project("pytest_hang")
    pid_file = tmp_path / "pids"
    proc = subprocess.Popen(
        [sys.executable, "-m", "graphlemon", "test", "--project", str(project), "--json", "--timeout", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "HANG_PID_FILE": str(pid_file)},
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pid_file.exists(), "the hanging test never started"
    pytest_pid, child_pid = map(int, pid_file.read_text().split())
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 1, stderr
    assert not alive(pytest_pid) and not alive(child_pid)
    data = json.loads(stdout)
    assert data["summary"]["passed"] == 1 and "cancelled" in data["output_tail"] and not data["timed_out"]
