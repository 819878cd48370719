"""Issue 43: Ctrl-C while an agent's test run goes ends that run and everything it started, within seconds.

The unit loops run in threads; before, Ctrl-C reached the main thread, which then waited for every unit loop to
finish (its test run until the run's own timeout, then the loop's next steps), while the confined run and the
daemons its test started lived on. Now the runs end at once, the loops start no further step, and the task is left
for `resume`. A real `graphlemon run` (direct and Prefect engines), real bwrap, a real pytest run that ignores
SIGINT/SIGTERM. The run GraphLemon ended is no test result (no failure recorded, no bug opened), and the terminal
shows GraphLemon's words only (no Prefect crash line, no log-handler traceback).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from conftest import CALC, playbook_variant, turn
from process_kit import marked, wait_until

from graphlemon.bugs import BugTracker
from graphlemon.models import TimelineEvent
from graphlemon.testrun.confine import bwrap_available  # noqa: F401 - read by the skipif string condition

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif("bwrap_available()[0] is None", reason="no working bwrap (`graphlemon doctor sandbox`)"),
]

MARK = "graphlemon-issue43-interrupted-probe"
STUBBORN_TEST = f"""
import pathlib, signal, subprocess, sys, time

def test_stays():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    daemon = "import os, time\\nif os.fork(): os._exit(0)\\nos.setsid()\\ntime.sleep(300)"
    subprocess.Popen([sys.executable, "-c", daemon, "{MARK}"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    pathlib.Path(__file__).with_name("started_{MARK}").write_text("yes")
    time.sleep(300)
"""


def _a_terminal() -> None:
    """As in a person's terminal: Ctrl-C is not ignored (a process started in the background inherits SIG_IGN)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("engine", ["direct", "prefect"])
def test_ctrl_c_ends_the_agents_test_run_and_its_daemons_and_leaves_the_task_to_resume(calc, tmp_path, cli, engine):
    def stubborn(data: dict) -> None:  # the add unit's tester writes a test that stays, the tester stage runs it
        tester = turn(data, role="tester", unit="add")
        tester["actions"].append({"write_file": {"path": "tests/add/test_stays.py", "content": STUBBORN_TEST}})
        tester["output"]["tests"].append("tests/add/test_stays.py")

    playbook = playbook_variant(tmp_path, CALC, stubborn)
    env = {**os.environ, "GRAPHLEMON_TEST_CONFINEMENT": "required"}
    run = subprocess.Popen(
        [sys.executable, "-m", "graphlemon", "run", "Build calc", "--project", str(calc.root), "--playbook",
         str(playbook), "--engine", engine, "--quiet"],  # fmt: skip
        env=env, start_new_session=True, preexec_fn=_a_terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        started = lambda: list(calc.root.glob(f".graphlemon/worktrees/*/*/tests/add/started_{MARK}")) and marked(MARK)  # noqa: E731
        assert wait_until(started, 120), "the stubborn test never started"
        os.killpg(run.pid, signal.SIGINT)  # Ctrl-C: the terminal's whole foreground group
        assert wait_until(lambda: run.poll() is not None, 30), "graphlemon waited for the run instead of ending it"
        assert wait_until(lambda: not marked(MARK), 10), f"still running after Ctrl-C: {marked(MARK)}"
    finally:
        os.killpg(run.pid, signal.SIGKILL) if run.poll() is None else None
        run.wait()
        for pid in marked(MARK):  # a failing case's leftovers (confined processes)
            os.kill(pid, signal.SIGKILL)
    said, errors = run.stdout.read().decode(), run.stderr.read().decode()  # type: ignore[union-attr]
    assert run.returncode == 130 and "Traceback" not in errors, errors  # an expected stop: words, no traceback
    # only GraphLemon's own words: not Prefect's crash line, nor its API log handler's errors once its client closed
    assert "Crash detected" not in said + errors and "Logging error" not in said + errors, said + errors
    tasks = json.loads(cli("status", "--json", "--project", str(calc.root)).stdout)["tasks"]
    assert [t["run"] for t in tasks] == ["interrupted"]  # nobody runs it now: `resume` takes it on
    assert "interrupted (Ctrl-C)" in said and f"resume {tasks[0]['task_id']}" in said, said  # and it says so
    # the test run GraphLemon ended is no test result: no failure recorded of it, no bug opened for it
    rows = [(e.event, e.summary) for e in calc.ledger.read_as("timeline", TimelineEvent)]
    assert not [r for r in rows if r[0] == "test_failed"], rows
    assert BugTracker(calc.ledger).all() == {}
