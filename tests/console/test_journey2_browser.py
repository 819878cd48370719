"""Issue 47, the fresh-clone walk-through's console defects, in real headless Chromium on the console:

* a resume that took the task's lease is what the page says from that moment on (the lease journal is the one
  truth): no "needs you", no Resume, no evidence pack, no "blocked" node, no "stopped at", before the resumed run
  has written anything;
* a double-click on Stop is one "stop requested" on the timeline, as it is one request on the lease.

The holder here is this test's own process holding the task's lease (a live holder, as `graphlemon resume` is while
its flow run starts). Screenshots are saved under each test's tmp dir and tests/.screenshots/."""

from __future__ import annotations

import subprocess

import pytest
from browser_kit import console_page

from graphlemon import lease as leases
from graphlemon.models import EscalationRecord, LeaseEvent, TimelineEvent
from graphlemon.nodes import NodeTracker
from graphlemon.project import init_project
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system  # Chromium and a console server


@pytest.fixture
def project(tmp_path, registry):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    handle = init_project(repo).project
    registry.register(handle)
    return handle


@pytest.fixture
def page(browser, request, tmp_path, server):
    yield from console_page(browser, request, tmp_path, server, viewport=(1300, 900))


def stopped_task(project) -> str:
    """A task a person stopped while its coder ran: blocked `stopped_by_person`, its note, its evidence pack, and a
    coder node the stopped run left marked running."""
    board = TaskBoard(project.ledger)
    task = board.create("Implement a snake game")
    board.transition(task.task_id, "planning")
    nodes = NodeTracker(project.ledger)
    nodes.transition(f"ne-{task.task_id}-planner-r0", "running", task_id=task.task_id, stage="planner")
    nodes.transition(f"ne-{task.task_id}-planner-r0", "done")
    board.transition(task.task_id, "coding")
    nodes.transition(f"ne-{task.task_id}-coder-u1-r0", "running", task_id=task.task_id, stage="coder", unit_id="u1")
    board.transition(task.task_id, "blocked_pending_human", blocked_reason="stopped_by_person",
                     note="stopped by a person (console): the wall rule needs a second look")  # fmt: skip
    project.ledger.append(EscalationRecord(task_id=task.task_id, blocked_reason="stopped_by_person",
                                           summary_md="# Evidence\n- stopped while unit u1 was coded", open_bug_ids=[]))  # fmt: skip
    return task.task_id


def test_a_resume_that_took_the_lease_is_what_the_page_says_before_its_run_writes_anything(page, server, project):
    tid = stopped_task(project)
    page.goto(f"{server.url}/#/p/{project.project_id}/t/{tid}")
    page.wait_for_selector("#actions[data-main=resume] #resume")
    page.wait_for_selector("#evidence")
    page.wait_for_selector("g.node[data-status=blocked], [data-node-id][data-status=blocked]")
    assert "needs you" in page.inner_text("#task-head") and "stopped " in page.inner_text("#task-times")
    page.shot("stopped")
    with leases.held(project.ledger, tid, leases.Holder.here("graphlemon resume")):  # a live holder, this process
        page.wait_for_selector("#task-head .pill[data-status=resuming]", timeout=10_000)
        page.wait_for_selector("#run-state[data-state=running] #run-holder")
        page.wait_for_selector("#next-why:has-text('a run is working on it')")
        page.shot("resuming")
        head = page.inner_text("#task-head")
        assert "needs you" not in head and "stopped by a person" not in head
        assert "the wall rule needs a second look" not in head  # the stale stop note is not the current state
        assert "stopped " not in page.inner_text("#task-times") and "going on for" in page.inner_text("#task-times")
        assert page.query_selector("#evidence") is None and page.query_selector("#resume") is None
        assert page.query_selector("#budget-main") is None
        assert page.query_selector("[data-status=blocked]") is None  # no node, no Gantt bar says blocked
        assert page.get_attribute("#actions", "data-actions") == "stop budget abandon"
        # the ledger still says blocked: the page's state came from the lease alone
        assert TaskBoard(project.ledger).get(tid).status == "blocked_pending_human"
    # the lease let go, the task still blocked: the page asks the person again
    page.wait_for_selector("#task-head .pill[data-status=blocked_pending_human]", timeout=10_000)
    page.wait_for_selector("#actions[data-main=resume] #resume")
    page.wait_for_selector("#evidence")
    page.shot("let-go")


def test_a_double_clicked_stop_is_one_stop_requested_on_the_timeline(page, server, project):
    board = TaskBoard(project.ledger)
    tid = board.create("Implement a snake game").task_id
    board.transition(tid, "planning")
    with leases.held(project.ledger, tid, leases.Holder.here("graphlemon run")):  # a run holds it: Stop is offered
        page.goto(f"{server.url}/#/p/{project.project_id}/t/{tid}")
        page.wait_for_selector("#run-state[data-state=running]")
        page.wait_for_selector("#stop")
        page.dblclick("#stop")
        page.wait_for_selector("#run-state[data-state=stopping]", timeout=10_000)
        page.wait_for_selector("#action-msg.ok:has-text('stop requested')")
        page.wait_for_timeout(500)  # both requests answered
        page.reload()
        page.wait_for_selector("#timeline")
        page.shot("stopping")
        lease_events = [e.event for e in project.ledger.read_as("lease", LeaseEvent) if e.task_id == tid]
        assert lease_events.count("stop_requested") == 1
        said = [e.summary for e in project.ledger.read_as("timeline", TimelineEvent)
                if e.task_id == tid and e.event == "human_action"]  # fmt: skip
        assert len(said) == 1 and said[0].startswith("stop requested: "), said
        assert page.inner_text("#timeline").count("stop requested") == 1
