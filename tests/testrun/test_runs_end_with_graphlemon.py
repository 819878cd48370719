"""Issue 43: a confined test run never outlives the GraphLemon that started it.

However GraphLemon ends while a run goes (Ctrl-C, SIGTERM, SIGKILL), the run and whatever it started (a test that
ignores SIGINT and SIGTERM, a daemon that left its session) end within seconds, and an interrupted GraphLemon does
not wait for the run's own timeout. The GraphLemon here is a process that waits on the run from a thread, as the
loop's stages do. Real bwrap, real pytest.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from process_kit import marked, wait_until

from graphlemon.testrun.confine import bwrap_available  # noqa: F401 - read by the skipif string condition

needs_bwrap = pytest.mark.skipif(
    "bwrap_available()[0] is None", reason="no working bwrap (`graphlemon doctor sandbox`)"
)

MARK = "graphlemon-issue43-outlives-probe"
STUBBORN_TEST = f"""
import pathlib, signal, subprocess, sys, time

def test_stays():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    daemon = "import os, signal, time\\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\\nif os.fork(): os._exit(0)\\nos.setsid()\\ntime.sleep(300)"
    subprocess.Popen([sys.executable, "-c", daemon, "{MARK}"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    pathlib.Path("started").write_text("yes")
    time.sleep(300)
"""
GRAPHLEMON = """
import sys, threading
from pathlib import Path
from graphlemon.testrun import run_tests
from graphlemon.testrun.confine import for_workdir

work, state = Path(sys.argv[1]), Path(sys.argv[2])
stage = threading.Thread(target=lambda: run_tests(work, ["tests"], framework="pytest", timeout=600,
                                                   confinement=for_workdir(work, state)))
stage.start()
stage.join()
"""


def _a_terminal() -> None:
    """As in a person's terminal: Ctrl-C is not ignored (pytest-xdist's workers, and any background start, pass
    SIGINT on as ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.system
@needs_bwrap
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_a_run_ends_within_seconds_however_graphlemon_ends(tmp_path, sig):
    state = tmp_path / "repo" / ".graphlemon"
    work = state / "worktrees" / "task-1" / "u1"
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "test_stays.py").write_text(STUBBORN_TEST)
    graphlemon = subprocess.Popen(
        [sys.executable, "-c", GRAPHLEMON, str(work), str(state)], stderr=subprocess.PIPE, preexec_fn=_a_terminal
    )
    try:
        assert wait_until(lambda: (work / "started").exists() and marked(MARK), 60), graphlemon.stderr.read1().decode()  # type: ignore[union-attr]
        os.kill(graphlemon.pid, sig)
        assert wait_until(lambda: graphlemon.poll() is not None, 20), (
            "GraphLemon waited for the run instead of ending it"
        )
        assert wait_until(lambda: not marked(MARK), 10), f"still running after {sig.name}: {marked(MARK)}"
    finally:
        graphlemon.kill()
        graphlemon.wait()
        for pid in marked(MARK):  # a failing case's leftovers (confined processes)
            os.kill(pid, signal.SIGKILL)
