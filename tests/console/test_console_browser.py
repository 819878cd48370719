"""The console in real headless Chromium (Debian's `chromium`, driven by Playwright): REQ-09 / 11 / 12.

One browser and one console server (uvicorn in a thread, stopped and restarted for the reconnect
test) per module. Every test saves screenshots under its tmp dir and tests/.screenshots/.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from graphlemon import lease as leases
from graphlemon.models import EscalationRecord
from graphlemon.nodes import NodeTracker
from graphlemon.project import init_project
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]


def new_project(tmp_path_factory, registry, name="repo"):
    repo = tmp_path_factory.mktemp(name)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "start"], cwd=repo, check=True)
    handle = init_project(repo).project
    registry.register(handle)
    return handle


@pytest.fixture(scope="module")
def live_project(tmp_path_factory, registry):
    """A project with one running task whose planner node is running: a run (this process) holds the task's lease,
    as a `graphlemon run` does (with no holder the page shows the task's live nodes stopped)."""
    handle = new_project(tmp_path_factory, registry, "live")
    board = TaskBoard(handle.ledger)
    task = board.create("Implement a snake game")
    board.transition(task.task_id, "planning")
    NodeTracker(handle.ledger).transition(
        f"ne-{task.task_id}-planner-r0", "running", task_id=task.task_id, stage="planner"
    )
    with leases.held(handle.ledger, task.task_id, leases.Holder.here("graphlemon run")):
        yield handle, task.task_id


def node_status(page, node_id: str) -> str | None:
    return page.evaluate(
        "id => { const g = [...document.querySelectorAll('g.node')].find(e => e.getAttribute('data-node-id') === id);"
        " return g ? g.getAttribute('data-status') : null; }",
        node_id,
    )


def wait_status(page, node_id: str, status: str, timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if node_status(page, node_id) == status:
            return time.monotonic() - started
        time.sleep(0.01)
    raise AssertionError(f"{node_id} is {node_status(page, node_id)!r}, not {status!r}, after {timeout} s")


# -- REQ-12 ---------------------------------------------------------------------------------------------


def test_req12_a_node_turns_from_running_to_done_without_a_reload(page, server, live_project):
    handle, tid = live_project
    planner = f"ne-{tid}-planner-r0"
    page.goto(f"{server.url}/#/p/{handle.project_id}/t/{tid}")
    page.wait_for_selector("g.node[data-status=running]")
    page.shot("running")
    page.evaluate("window.__marker = 'same page'")
    NodeTracker(handle.ledger).transition(planner, "verifying")
    NodeTracker(handle.ledger).transition(planner, "done")
    took = wait_status(page, planner, "done", timeout=2.0)
    assert page.evaluate("window.__marker") == "same page"  # no reload
    page.shot("done")
    print(f"recoloured {took * 1000:.0f} ms after the ledger line")


def test_req12_reconnect_shows_the_banner_and_catches_up_on_every_missed_event(page, server, live_project):
    handle, tid = live_project
    page.goto(f"{server.url}/#/p/{handle.project_id}/t/{tid}")
    page.wait_for_selector("body[data-live=open]")
    page.wait_for_selector("g.node")
    applied = page.evaluate("window.glStats.applied")
    server.stop()  # the socket drops
    page.wait_for_selector("#banner:has-text('Live connection lost — reconnecting…')", timeout=5000)
    page.shot("lost")
    nodes = NodeTracker(handle.ledger)
    coder = f"ne-{tid}-coder-snake-r0"
    nodes.transition(coder, "running", task_id=tid, stage="coder", unit_id="snake")  # missed while down
    nodes.transition(coder, "reflecting")
    nodes.transition(coder, "retrying", attempt=2)
    TaskBoard(handle.ledger).transition(tid, "coding")
    server.start()
    page.wait_for_selector("body[data-live=open]", timeout=15000)
    wait_status(page, coder, "retrying", timeout=5.0)
    assert page.is_hidden("#banner")
    stats = page.evaluate("window.glStats")
    assert stats["applied"] - applied == 4  # each missed event applied once: 3 node events + 1 task event
    assert stats["resumed"] >= 1 and stats["snapshots"] == 1  # caught up from its cursors, no second snapshot
    page.wait_for_selector("#task-head .pill[data-status=coding]")
    page.shot("caught-up")


def test_req12_an_unknown_project_is_refused_with_project_not_found(page, server):
    page.goto(f"{server.url}/#/p/p-doesnotexist")
    page.wait_for_selector("#banner[data-code=PROJECT_NOT_FOUND]")
    assert "PROJECT_NOT_FOUND" in page.inner_text("#banner")
    assert page.get_attribute("body", "data-live") == "refused"
    page.shot("refused")


# -- REQ-11 ---------------------------------------------------------------------------------------------


def test_req11_bug_form_refuses_an_empty_description_in_the_page_and_on_the_server(page, server, live_project):
    handle, _tid = live_project
    page.goto(f"{server.url}/#/p/{handle.project_id}/bug")
    page.fill("#bug-title", "snake <b>dies</b>")
    page.fill("#bug-description", "   ")
    page.click("#bug-form button[type=submit]")
    page.wait_for_selector("#bug-msg[data-code=INVALID_PARAM]")
    page.shot("empty-refused")
    assert not (handle.state_dir / "bugs.ndjson").exists()
    server_says = page.evaluate(  # the server refuses on its own, whatever the page does
        """async (url) => { const token = document.querySelector('meta[name="graphlemon-token"]').content;
           const r = await fetch(url, {method: 'POST', body: JSON.stringify({title: 'x', description: ''}),
             headers: {'Content-Type': 'application/json', 'X-GraphLemon-Token': token}});
           return [r.status, await r.json()]; }""",
        f"/api/projects/{handle.project_id}/bugs",
    )
    assert server_says[0] == 400 and server_says[1]["error"]["code"] == "INVALID_PARAM"
    assert not (handle.state_dir / "bugs.ndjson").exists()
    page.fill("#bug-description", "it walks through the bottom wall")
    page.click("#bug-form button[type=submit]")
    page.wait_for_selector("#bug-msg.ok")
    page.shot("reported")
    line = json.loads((handle.state_dir / "bugs.ndjson").read_text().splitlines()[0])
    assert line["title"] == "snake <b>dies</b>" and line["source"] == "human_reported"


def test_a_form_filled_while_the_page_still_loads_keeps_what_was_typed(browser, request, tmp_path, server, live_project):
    """The words load before the first page is drawn; a hash set meanwhile is drawn once, so what a person typed
    into it is not emptied by a second drawing (CI: the bug form was emptied and its submit blocked)."""
    from browser_kit import shooting_page

    handle, _tid = live_project
    for page in shooting_page(browser, request, tmp_path):
        page.add_init_script(  # the words come 1.5 s late
            """const f = window.fetch; window.fetch = (u, o) => String(u).endsWith('/api/words')
               ? new Promise((ok) => setTimeout(() => ok(f(u, o)), 1500)) : f(u, o);"""
        )
        page.goto(f"{server.url}/?token={server.settings.token}", wait_until="domcontentloaded")
        page.goto(f"{server.url}/#/p/{handle.project_id}/bug")  # the same page: only its hash changes
        page.fill("#bug-title", "typed")
        page.fill("#bug-description", "   ")
        page.wait_for_selector("body[data-ready]", state="attached")
        page.wait_for_timeout(300)
        page.click("#bug-form button[type=submit]")
        page.wait_for_selector("#bug-msg[data-code=INVALID_PARAM]", timeout=5000)
        assert page.input_value("#bug-title") == "typed"
        page.shot("typed-kept")


def test_project_setup_adds_a_repo_and_asks_before_git_init(page, server, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    page.goto(f"{server.url}/#/")
    page.once("dialog", lambda d: d.dismiss())  # declining writes nothing
    page.fill("#project-path", str(plain))
    page.click("#add-project button[type=submit]")
    page.wait_for_selector("#project-msg[data-code=ABORTED]")
    assert list(plain.iterdir()) == []
    page.once("dialog", lambda d: d.accept())
    page.click("#add-project button[type=submit]")
    page.wait_for_selector("#project-msg.ok")
    assert (plain / ".graphlemon" / "project.json").is_file()
    page.wait_for_selector(f"#projects tr[data-root='{plain}']")
    assert page.inner_text(f"#projects tr[data-root='{plain}'] td >> nth=0").startswith("plain")  # named by its folder
    page.shot("projects")


# -- REQ-09 ---------------------------------------------------------------------------------------------


def test_req09_manual_resume_from_the_task_page_and_a_clear_error_for_a_done_task(
    page, server, tmp_path_factory, registry
):
    handle = new_project(tmp_path_factory, registry, "blocked")
    board = TaskBoard(handle.ledger)
    tid = board.create("Implement a snake game").task_id
    board.transition(tid, "planning")
    board.transition(tid, "coding")
    wall = f"ne-{tid}-coder-wall-r0"
    NodeTracker(handle.ledger).transition(wall, "running", task_id=tid, stage="coder", unit_id="wall")
    NodeTracker(handle.ledger).transition(wall, "blocked")
    board.transition(tid, "blocked_pending_human", blocked_reason="not_converging")
    handle.ledger.append(EscalationRecord(task_id=tid, blocked_reason="not_converging",
                                          summary_md="# Evidence\n- <img src=x onerror=alert(1)> still red"))  # fmt: skip
    page.goto(f"{server.url}/#/p/{handle.project_id}/t/{tid}")
    page.wait_for_selector("#evidence")
    assert "<img src=x onerror=alert(1)> still red" in page.inner_text("#evidence")  # text, not HTML
    assert page.query_selector("#evidence img") is None
    page.shot("blocked")
    page.fill("#resume-note", "treat the wall as outside the board")
    page.click("#resume")
    page.wait_for_selector("#action-msg.ok")
    assert "Started graphlemon resume" in page.inner_text("#action-msg")
    task = board.get(tid)
    assert task.status == "coding" and task.note == "treat the wall as outside the board"
    # no executor was ever recorded for this hand-made task: the run the console started fails at once, and says why
    page.wait_for_selector("#launch-failed", timeout=60_000)
    assert "error[INVALID_PARAM]" in page.inner_text("#launch-failed")
    page.wait_for_selector("#task-head .pill[data-status=coding]")
    page.shot("resumed")

    done = board.create("finished").task_id
    for st in ("planning", "coding", "validating", "done"):
        board.transition(done, st)
    events = len(handle.ledger.read("task"))
    page.goto(f"{server.url}/#/p/{handle.project_id}/t/{done}")
    page.wait_for_selector("#no-actions")  # a done task offers nothing to do
    assert page.query_selector("#resume") is None and page.query_selector("#abandon") is None
    server_says = page.evaluate(  # and the server refuses on its own
        """async (url) => { const token = document.querySelector('meta[name="graphlemon-token"]').content;
           const r = await fetch(url, {method: 'POST', body: '{}',
             headers: {'Content-Type': 'application/json', 'X-GraphLemon-Token': token}});
           return [r.status, await r.json()]; }""",
        f"/api/projects/{handle.project_id}/tasks/{done}/resume",
    )
    assert server_says[0] == 409 and "nothing changed" in server_says[1]["error"]["message"]
    assert len(handle.ledger.read("task")) == events
    page.shot("done-refused")


# -- every page, and the goal composer running the scripted snake demo to done ---------------------------


@pytest.mark.slow
def test_goal_composer_runs_the_scripted_snake_demo_to_done(page, server, tmp_path_factory, registry):
    repo = tmp_path_factory.mktemp("snake") / "snake"
    shutil.copytree(ROOT / "examples" / "snake" / "repo", repo)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "empty snake package"], cwd=repo, check=True)
    handle = init_project(repo).project
    registry.register(handle)
    pid = handle.project_id
    page.goto(f"{server.url}/#/p/{pid}/goal")
    page.click("#goal-form button[type=submit]")  # an empty goal
    page.wait_for_selector("#goal-msg[data-code=INVALID_PARAM]")
    page.shot("empty-goal")
    page.fill("#goal-text", "Implement a snake game")
    page.fill("#goal-playbook", str(ROOT / "examples" / "snake" / "playbook.yaml"))
    page.select_option("#goal-engine", "direct")
    page.click("#goal-form button[type=submit]")
    page.wait_for_selector("#goal-msg.ok")
    page.shot("started")
    page.click("#to-dashboard")
    page.wait_for_selector("#tasks tr[data-task] a", timeout=60_000)
    page.shot("dashboard")
    page.click("#tasks tr[data-task] a")
    page.wait_for_selector("g.node", timeout=60_000)
    page.wait_for_selector("#task-head .pill[data-status=done]", timeout=420_000)
    page.wait_for_selector("g.node[data-stage=validator][data-status=done]")
    assert page.query_selector("g.node[data-status=running]") is None
    page.shot("done")
    page.click("#budget-link")
    page.wait_for_selector("#budget-info .kv")
    page.shot("budget")
    page.go_back()
    page.wait_for_selector("#artifacts a")
    page.click("#artifacts a >> nth=0")  # the artifact's own page (issue 47: a URL of its own)
    page.wait_for_selector("#artifact-page .artifact-body #artifact-md")
    assert "/artifacts/" in page.url
    page.shot("artifact")


# -- REQ-08 v_skill_audit_log --------------------------------------------------------------------------


def test_req08_the_skills_page_lists_iterations_and_shows_one_as_text(page, server, tmp_path_factory, registry):
    from graphlemon.bugs import BugTracker
    from graphlemon.models import SkillGateResult
    from graphlemon.skills.iteration import SkillIterations

    handle = new_project(tmp_path_factory, registry, "skills")
    tracker = BugTracker(handle.ledger)
    bug_id, _ = tracker.open(title="mul <b>failed</b>", source="unit_test", unit_id="mul", test_name="t", task_id="t1")
    tracker.update(bug_id, by="validator", root_cause_category="skill_defect", root_cause_detail="the skill is silent")
    its = SkillIterations(handle.state_dir, handle.ledger)
    it = its.propose("coder", bug_id, "You are the Coder agent.\nCheck operators.\n", author="skill-editor",
                     rationale="<img src=x onerror=alert(1)> ask for operator checks")  # fmt: skip
    its.start_gate(it.iteration_id)
    its.apply(it.iteration_id, SkillGateResult(ok=True, note="the gate passed"))
    page.goto(f"{server.url}/#/p/{handle.project_id}/skills")
    page.wait_for_selector(f"#skills-log tr[data-iteration='{it.iteration_id}']")
    assert "applied" in page.inner_text("#skills-log")
    page.shot("log")
    page.click(f"text={it.iteration_id}")
    page.wait_for_selector("#skill-diff")
    assert "<img src=x onerror=alert(1)>" in page.inner_text("#skill-rationale")  # shown as text, never as markup
    assert "Check operators." in page.inner_text("#skill-diff")
    page.shot("iteration")
