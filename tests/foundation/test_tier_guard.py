"""The unit tier's guard (tests/tier_guard.py): planted tests, run by a real pytest with the guard loaded, fail when
they start a process other than git or bind a socket without the `system` mark — from the test, a thread, a fixture
or asyncio, caught or not — and pass marked; git alone passes unmarked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.system  # it runs pytest, and the planted tests start processes

PLANTED = """
import asyncio, multiprocessing, os, socket, subprocess, threading
import pytest

def test_git_only(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)

def test_nothing():
    pass

def test_popen():
    subprocess.run(["true"])

def test_caught():
    try:
        subprocess.run(["true"])
        raise RuntimeError("swallowed")
    except Exception:
        pass

def test_thread():
    t = threading.Thread(target=lambda: subprocess.run(["true"]))
    t.start(); t.join()

def test_bind():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); s.close()

def test_asyncio():
    async def run():
        p = await asyncio.create_subprocess_exec("true"); await p.wait()
    asyncio.run(run())

def _child():
    pass

def test_multiprocessing_spawn():
    p = multiprocessing.get_context("spawn").Process(target=_child); p.start(); p.join()

def test_fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)

def test_posix_spawn():
    os.waitpid(os.posix_spawn("/bin/true", ["true"], os.environ), 0)

def test_os_system():
    os.system("true")

@pytest.fixture
def leaves_a_process():
    yield
    subprocess.run(["true"])

def test_fixture_teardown(leaves_a_process):
    pass

@pytest.fixture(scope="module")
def listening():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); yield s; s.close()

@pytest.mark.system
def test_a_marked_user_starts_the_server(listening):
    pass

def test_an_unmarked_user_of_a_started_server(listening):
    pass

@pytest.mark.system
def test_marked_popen():
    subprocess.run(["true"])

@pytest.mark.system
def test_a_system_test_leaves_a_thread():
    import time
    threading.Thread(target=lambda: (time.sleep(0.3), subprocess.run(["true"])), daemon=True).start()

def test_an_unmarked_test_while_that_thread_runs():
    import time
    time.sleep(1)

def _program(folder, name):
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("#!/bin/sh\\nexit 0\\n"); (folder / name).chmod(0o755)
    return folder / name

@pytest.mark.parametrize("listening", [1])
def test_a_parameter_named_like_a_started_fixture(listening):
    assert listening == 1

def test_a_program_named_git(tmp_path):
    subprocess.run([str(_program(tmp_path / "bin", "git")), "status"])

def test_a_file_program_first_on_path(tmp_path, monkeypatch):
    import platform
    _program(tmp_path / "bin", "file")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "target").write_text("x")
    platform.architecture(str(tmp_path / "target"))
"""

FAILS = [
    "test_popen", "test_caught", "test_thread", "test_bind", "test_asyncio", "test_multiprocessing_spawn",
    "test_fork", "test_posix_spawn", "test_os_system", "test_fixture_teardown",
    "test_an_unmarked_user_of_a_started_server", "test_a_program_named_git", "test_a_file_program_first_on_path",
]  # fmt: skip
PASSES = [
    "test_git_only",
    "test_nothing",
    "test_a_marked_user_starts_the_server",
    "test_marked_popen",
    "test_a_system_test_leaves_a_thread",
    "test_an_unmarked_test_while_that_thread_runs",
    "test_a_parameter_named_like_a_started_fixture[1]",  # its own definition of the name, not the started fixture
]


def test_the_guard_fails_every_unmarked_start_and_passes_git_and_marked_tests(tmp_path):
    (tmp_path / "test_planted.py").write_text(PLANTED)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    system: planted\n")
    tests = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tier_guard", "-p", "no:cacheprovider", "-n", "0", "-rA", "-q",
         str(tmp_path / "test_planted.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**_env(), "PYTHONPATH": str(tests)},
    )  # fmt: skip
    outcomes = {}
    for line in proc.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR") and "::" in rest:
            outcomes.setdefault(rest.split("::")[1].split(" ")[0], set()).add(word)
    assert {name for name, seen in outcomes.items() if seen != {"PASSED"}} == set(FAILS), proc.stdout[-3000:]
    assert all(outcomes.get(name) == {"PASSED"} for name in PASSES), proc.stdout[-3000:]
    assert "test_popen is not marked `system` but during call it started a process: true" in proc.stdout
    assert "Either mark it `@pytest.mark.system`" in proc.stdout
    assert "(thread " in proc.stdout and "called os.fork()" in proc.stdout and "bound a socket to" in proc.stdout
    assert "uses the fixture `listening`, whose set-up bound a socket" in proc.stdout


def test_a_process_a_test_module_starts_at_its_import_belongs_to_each_of_its_tests(tmp_path):
    (tmp_path / "test_at_import.py").write_text(
        "import subprocess\nimport pytest\n\nRESULT = subprocess.run(['true']).returncode\n\n"
        "def test_unmarked():\n    assert RESULT == 0\n\n@pytest.mark.system\ndef test_marked():\n    assert RESULT == 0\n"
    )  # fmt: skip
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    system: planted\n")
    tests = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tier_guard", "-p", "no:cacheprovider", "-n", "0", "-rA", "-q",
         str(tmp_path / "test_at_import.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**_env(), "PYTHONPATH": str(tests)},
    )  # fmt: skip
    assert "ERROR test_at_import.py::test_unmarked" in proc.stdout, proc.stdout[-3000:]  # failed at its set-up
    assert "PASSED test_at_import.py::test_marked" in proc.stdout, proc.stdout[-3000:]
    assert "is in a module whose import started a process: true" in proc.stdout


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
