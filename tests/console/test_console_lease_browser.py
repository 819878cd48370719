"""Issue 44 in the browser: one run per task, whatever a person clicks. Real headless Chromium on the console, real
`graphlemon` processes on the scripted calc goal (labelled scripted: the loop's plumbing, not a model's work).

* a double-click on manual_resume is one action: one launch, one run; Stop on that running task stops it at its
  next safe point, blocked `stopped_by_person`, and manual_resume finishes it without redoing a finished stage;
* "Run it now" pressed in two tabs of a task nothing runs: one run, the other tab told who runs it;
* abandon on a running task: the run stops first, then the task is abandoned.

"Running / not running" comes from the task's lease alone: while a run holds it, the page names the holder and never
offers "Run it now". Screenshots are saved under each test's tmp dir and tests/.screenshots/."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from browser_kit import console_page

from graphlemon import lease as leases
from graphlemon.devloop.stopping import stop_task
from graphlemon.models import LaunchEvent, LeaseEvent, NodeEvent, TimelineEvent
from graphlemon.project import init_project
from graphlemon.taskboard import TaskBoard

ROOT = Path(__file__).resolve().parents[2]
CALC = ROOT / "tests" / "acceptance" / "fixtures" / "calc"
RUN_MS = 300_000
pytestmark = [pytest.mark.slow, pytest.mark.system]


@pytest.fixture
def page(browser, request, tmp_path, server):
    yield from console_page(browser, request, tmp_path, server, viewport=(1400, 1000))


def calc_at(tmp_path: Path, registry, point: str, *, then: str):
    """The calc goal run by `graphlemon run` until the timeline shows `point`, then stopped (a resumable block) or
    killed (an interrupted task nothing runs); its project registered with the console."""
    repo = tmp_path / "calc"
    shutil.copytree(CALC / "repo", repo)
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "starting code"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True)
    handle = init_project(repo).project
    registry.register(handle)
    proc = subprocess.Popen([sys.executable, "-m", "graphlemon", "run", "Build calc", "--project", str(repo),
                             "--playbook", str(CALC / "playbook.yaml"), "--engine", "direct", "--quiet"],
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 240
    while not any(e.event == point for e in handle.ledger.read_as("timeline", TimelineEvent)):
        assert proc.poll() is None and time.monotonic() < deadline, "the run never reached the point"
        time.sleep(0.05)
    (task,) = TaskBoard(handle.ledger).all().values()
    if then == "stop":
        stop_task(handle, task.task_id, by="a person (test set-up)")
        proc.wait(timeout=120)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return handle, TaskBoard(handle.ledger).get(task.task_id)


def open_task(page, server, handle, task_id: str) -> None:
    page.goto(f"{server.url}/#/p/{handle.project_id}/t/{task_id}")
    page.wait_for_selector("#actions")


def runs_of(handle, task_id: str) -> list[str]:
    """Every lease a run of the task took (a console's own short hold included), by how it was taken."""
    return [e.event for e in handle.ledger.read_as("lease", LeaseEvent)
            if e.task_id == task_id and e.event in ("taken", "taken_over", "adopted")]  # fmt: skip


def test_run_it_now_in_two_tabs_starts_one_run_and_tells_the_other_who_runs_it(page, browser, request, server,
                                                                               registry, tmp_path):  # fmt: skip
    handle, task = calc_at(tmp_path, registry, "unit_tested", then="kill")
    open_task(page, server, handle, task.task_id)
    page.wait_for_selector("#run-state[data-state=interrupted]")
    for other in console_page(browser, request, tmp_path / "second-tab", server, viewport=(1400, 1000)):
        open_task(other, server, handle, task.task_id)
        other.wait_for_selector("#run")  # both tabs offer "Run it now": nothing runs the task
        page.shot("interrupted")
        page.click("#run")
        other.click("#run")  # at once: its button was drawn before the first tab's run took the lease
        for tab in (page, other):
            tab.wait_for_selector("#action-msg:not([hidden])")
        said = {tab: (tab.get_attribute("#action-msg", "class"), tab.inner_text("#action-msg")) for tab in (page, other)}
        refused = [tab for tab, (cls, _) in said.items() if "error" in cls]
        assert len(refused) == 1, said  # one tab started the run, the other was told who runs it
        tab = refused[0]
        assert tab.get_attribute("#action-msg", "data-code") == "TASK_HELD"
        text = said[tab][1]
        assert "is run by console" in text and "this start was refused" in text and "since" in text
        tab.wait_for_selector("#run-state[data-state=running] #run-holder")  # and the tab names the holder now
        assert tab.query_selector("#run") is None
        tab.shot("refused-tab")
    page.wait_for_selector("#task-head .pill[data-status=done]", timeout=RUN_MS)
    page.shot("done")
    starts = [e for e in handle.ledger.read_as("launch", LaunchEvent) if e.event == "started"]
    assert len(starts) == 1
    refusals = [e for e in handle.ledger.read_as("lease", LeaseEvent) if e.event == "refused"]
    assert len(refusals) == 1 and refusals[0].holder == "console: run it now"


def test_a_double_clicked_resume_is_one_run_which_stop_stops_at_a_safe_point_and_resume_finishes(page, server,
                                                                                                 registry, tmp_path):  # fmt: skip
    handle, task = calc_at(tmp_path, registry, "planned", then="stop")
    assert (task.status, task.blocked_reason) == ("blocked_pending_human", "stopped_by_person")
    open_task(page, server, handle, task.task_id)
    page.wait_for_selector("#actions[data-actions='resume budget abandon']")
    page.shot("stopped-by-set-up")
    page.fill("#resume-note", "go on")
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" and r.url.endswith("/resume") else None)
    page.dblclick("#resume")  # one request: the button is disabled from the first click until the answer
    page.wait_for_selector("#action-msg.ok")
    assert len(posts) == 1, posts
    page.wait_for_selector("#run-state[data-state=running] #run-holder")
    # the console's action holds the lease from the click on, then hands it to the launch it started
    assert re.search(r"by console(: manual_resume| launch)", page.inner_text("#run-holder"))
    assert page.query_selector("#run") is None  # never "Run it now" while a run holds the task
    page.wait_for_selector("#stop")
    page.wait_for_selector("#next-why:has-text('a run is working on it')")  # not the stopped task's "Resume"
    page.shot("running")
    launches = [e for e in handle.ledger.read_as("launch", LaunchEvent) if e.event == "started"]
    assert len(launches) == 1, launches  # the second click started nothing
    clicks = {e.action_id for e in handle.ledger.read_as("lease", LeaseEvent) if e.task_id == task.task_id and e.action_id}
    assert len(clicks) == 1  # both requests carried one action id

    page.fill("#resume-note", "the wall rule needs a second look")
    page.click("#stop")
    page.wait_for_selector("#action-msg.ok:has-text('stop requested')")
    page.wait_for_selector("#task-head .pill[data-status=blocked_pending_human]", timeout=RUN_MS)
    page.wait_for_selector("#actions[data-actions='resume budget abandon']")
    assert "stopped by a person" in page.inner_text("#task-head")  # in words (the name is the tooltip)
    assert "the wall rule needs a second look" in page.inner_text("#evidence")
    page.shot("stopped")
    done_before = {e.node_exec_id for e in handle.ledger.read_as("node", NodeEvent) if e.status == "done"}
    seen = len(handle.ledger.read("node"))
    page.click("#resume")
    page.wait_for_selector("#task-head .pill[data-status=done]", timeout=RUN_MS)
    page.shot("done")
    again = [e for e in handle.ledger.read_as("node", NodeEvent)[seen:] if e.node_exec_id in done_before]
    assert not [e for e in again if e.status == "running"], "a finished stage ran again after the stop"
    actions = [e.summary for e in handle.ledger.read_as("timeline", TimelineEvent) if e.event == "human_action"]
    assert len(actions) == 3 and "resumed by a person with the note: go on" in actions[0]  # resume, stop, resume
    assert runs_of(handle, task.task_id).count("adopted") == 2  # one run per resume


def test_abandon_on_a_running_task_stops_it_first(page, server, registry, tmp_path):
    handle, task = calc_at(tmp_path, registry, "planned", then="stop")
    open_task(page, server, handle, task.task_id)
    page.click("#resume")
    page.wait_for_selector("#run-state[data-state=running] #run-holder")
    page.on("dialog", lambda d: d.accept())
    page.fill("#resume-note", "not needed after all")
    page.click("#abandon")
    page.wait_for_selector("#action-msg.ok:has-text('abandons the task')")
    page.shot("abandoning")
    page.wait_for_selector("#task-head .pill[data-status=abandoned]", timeout=RUN_MS)
    page.wait_for_selector("#no-actions")
    page.wait_for_selector("#action-msg.ok:has-text('The abandon is done')")  # no longer "abandons the task"
    page.shot("abandoned")
    if page.query_selector("g.node[data-status=cancelled]"):  # a node the abandon ended has its word in the legend
        assert "cancelled (task ended)" in page.inner_text(".legend")
    final = TaskBoard(handle.ledger).get(task.task_id)
    assert final.status == "abandoned" and "not needed after all" in final.note
    stopped = leases.history(handle.ledger, task.task_id)
    assert any(x.stop is not None and x.stop.then == "abandon" for x in stopped)  # the run itself abandoned it
