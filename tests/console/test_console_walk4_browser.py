"""What the fresh-clone walk (walk4) found in the console, fixed. A goal started from New goal is started once per
click: the Start button sends one request from the first click until the answer (a double-click too), and the server
starts one run per action id, whatever reaches it twice (two requests racing with the same id: one launch, the other
answered `repeated`); real `graphlemon run` processes on the scripted snake demo (labelled scripted), killed once
counted. The Runs page says no run holds a task nothing runs. A browser without the console's token is told it can
neither read nor act, with the API's code. Real headless Chromium; screenshots under the test's tmp dir and
tests/.screenshots/."""

from __future__ import annotations

import os
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from browser_kit import console_page, shooting_page

from graphlemon.console.launch import launches
from graphlemon.project import init_project

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]
SNAKE = ROOT / "examples" / "snake"


def snake_project(tmp_path: Path, registry):
    import shutil

    repo = tmp_path / "snake"
    shutil.copytree(SNAKE / "repo", repo)
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"],
                ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "empty snake package"]):  # fmt: skip
        subprocess.run(["git", *cmd], cwd=repo, check=True)
    handle = init_project(repo).project
    registry.register(handle)
    return handle


def end_launches(handle) -> None:
    """The runs these tests started, ended (each is its own process group)."""
    for launch in launches(handle):
        try:
            os.killpg(launch.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


GOAL = {"goal": "Implement a snake game", "executor": "scripted", "playbook": str(SNAKE / "playbook.yaml"),
        "engine": "direct", "budget_tokens": 6000}  # fmt: skip


def test_two_requests_of_one_goal_action_start_one_run(tmp_path):
    from starlette.testclient import TestClient

    from graphlemon.console.app import TOKEN_HEADER, ConsoleSettings, create_app
    from graphlemon.console.project_registry import ProjectRegistry

    registry = ProjectRegistry(tmp_path / "config")
    handle = snake_project(tmp_path, registry)
    token = "g" * 32
    app = create_app(ConsoleSettings(token=token, registry=registry))
    url = f"/api/projects/{handle.project_id}/goals"
    try:
        with TestClient(app, base_url="http://127.0.0.1:8766", cookies={"graphlemon_console": token}) as client:
            def send(body):
                return client.post(url, json=body, headers={TOKEN_HEADER: token}).json()

            with ThreadPoolExecutor(2) as pool:  # a double-click's two requests, at once
                answers = list(pool.map(send, [{**GOAL, "action_id": "goal-1"}] * 2))
            assert len({a["launch_id"] for a in answers}) == 1, answers
            assert sorted(bool(a.get("repeated")) for a in answers) == [False, True]
            assert len(launches(handle)) == 1
            other = send({**GOAL, "action_id": "goal-2"})  # another action is another goal
            assert "repeated" not in other and len(launches(handle)) == 2
    finally:
        end_launches(handle)


@pytest.fixture
def page(browser, request, tmp_path, server):
    yield from console_page(browser, request, tmp_path, server, viewport=(1300, 900))


def test_a_double_clicked_start_sends_one_request(page, server, registry, tmp_path):
    handle = snake_project(tmp_path, registry)
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" and r.url.endswith("/goals") else None)
    try:
        page.goto(f"{server.url}/#/p/{handle.project_id}/goal")
        page.fill("#goal-text", GOAL["goal"])
        page.fill("#goal-playbook", GOAL["playbook"])
        page.select_option("#goal-engine", "direct")
        page.fill("#goal-budget", "6000")
        page.dblclick("#goal-start")
        page.wait_for_selector("#goal-msg.ok")
        page.wait_for_selector("#goal-start:not([disabled])")
        page.shot("started-once")
        assert len(posts) == 1, posts
        assert len(launches(handle)) == 1
    finally:
        end_launches(handle)


def test_the_runs_page_says_no_run_holds_a_task_nothing_runs(page, server, registry, tmp_path):
    """A queued task (after `budget set`) and an interrupted one (its run killed): neither is "going on"."""
    from graphlemon.taskboard import TaskBoard

    handle = snake_project(tmp_path, registry)
    board = TaskBoard(handle.ledger)
    queued = board.create("queued, nothing picks it up").task_id
    interrupted = board.create("its run was killed").task_id
    board.transition(interrupted, "planning")
    page.goto(f"{server.url}/#/runs")
    for tid in (queued, interrupted):
        row = page.wait_for_selector(f"#runs-table tr[data-task='{tid}']")
        assert "no run holds it" in row.inner_text() and "going on" not in row.inner_text(), row.inner_text()
    page.shot("runs-nothing-runs")


def test_without_the_token_the_page_says_it_can_neither_read_nor_act_with_the_apis_code(browser, request, server,
                                                                                        registry, tmp_path):
    handle = snake_project(tmp_path, registry)
    for pg in shooting_page(browser, request, tmp_path):  # a bookmark of the bare address: no cookie
        pg.goto(f"{server.url}/#/p/{handle.project_id}")
        pg.wait_for_selector("body[data-ready]", state="attached")
        pg.wait_for_selector("#token-notice:not([hidden])")
        notice = pg.inner_text("#token-notice")
        assert "neither read" in notice and "can read" not in notice, notice
        pg.wait_for_selector("#banner[data-code=PERMISSION_DENIED]")  # the API's code, as the API says it
        pg.shot("no-token")
    import json
    import urllib.error
    import urllib.request

    for cookie, said in ((None, "missing"), ("graphlemon_console=" + "x" * 32, "stale")):
        req = urllib.request.Request(f"{server.url}/api/projects", headers={"Cookie": cookie} if cookie else {})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(req, timeout=10)
        body = json.loads(refused.value.read())
        assert refused.value.code == 401 and body["error"]["code"] == "PERMISSION_DENIED" and body["error"]["token"] == said


def test_a_bugs_title_keeps_a_readable_width_beside_a_long_root_cause(page, server, registry, tmp_path):
    from graphlemon.bugs import BugTracker
    from graphlemon.taskboard import TaskBoard

    handle = snake_project(tmp_path, registry)
    tid = TaskBoard(handle.ledger).create("Implement a snake game").task_id
    bugs = BugTracker(handle.ledger)
    bug_id, _ = bugs.open(title="the snake grows twice when it eats on the wall", source="unit_test", unit_id="snake",
                          test_name="tests/test_snake.py::test_eat_on_wall", task_id=tid)  # fmt: skip
    bugs.update(bug_id, root_cause_category="coder", suggested_route="fast_lane",
                root_cause_detail="snake/board.py::Board.step_and_grow_when_the_head_reaches_food_at_the_edge_" * 6)
    page.set_viewport_size({"width": 1280, "height": 900})  # walk5: at 1280 px the task page clipped the title
    for url, table in ((f"#/p/{handle.project_id}/t/{tid}", "#bugs"), (f"#/p/{handle.project_id}/bugs", "#bugs-table")):
        page.goto(f"{server.url}/{url}")
        cell = page.wait_for_selector(f"{table} tr[data-bug='{bug_id}'] td:has-text('grows twice')")
        lines = cell.evaluate("el => { const r = document.createRange(); r.selectNodeContents(el); "
                              "return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size; }")
        assert cell.bounding_box()["width"] > 120 and lines <= 4, (table, lines)  # words on a line, not a letter
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # nothing sideways
        box = page.eval_on_selector(table, "t => { const w = t.parentElement; return [w.scrollWidth, w.clientWidth]; }")
        assert box[0] <= box[1], (table, box)  # nor the table in its column: the title is not behind a scroll
        page.shot(table.strip("#"))


def test_the_evidence_pack_shows_its_last_line_the_next_step_without_scrolling(page, server, registry, tmp_path):
    from graphlemon.devloop.stopping import stop_task
    from graphlemon.taskboard import TaskBoard

    handle = snake_project(tmp_path, registry)
    tid = TaskBoard(handle.ledger).create("Implement a snake game " + "with walls " * 40).task_id
    stop_task(handle, tid, by="a person (this test)", note="wrong goal " * 60)  # a long pack: nothing runs the task
    page.goto(f"{server.url}/#/p/{handle.project_id}/t/{tid}")
    pack = page.wait_for_selector("#evidence .md")
    assert pack.evaluate("el => el.scrollHeight <= el.clientHeight + 1"), "the pack scrolls: its last line is hidden"
    page.shot("evidence-whole")


def test_a_blocked_tasks_next_step_is_above_the_fold_before_the_graph(page, server, registry, tmp_path):
    """walk5: at 1280x900 the graph pushed a blocked task's next step to y~1100."""
    from graphlemon.devloop.stopping import stop_task
    from graphlemon.taskboard import TaskBoard

    handle = snake_project(tmp_path, registry)
    tid = TaskBoard(handle.ledger).create("Implement a snake game " + "with walls " * 40).task_id
    stop_task(handle, tid, by="a person (this test)", note="wrong goal " * 60)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{server.url}/#/p/{handle.project_id}/t/{tid}")
    page.wait_for_selector("#evidence .md")
    for sel in ("#next-why", "#resume", "#next-command"):
        box = page.eval_on_selector(sel, "el => el.getBoundingClientRect().bottom")
        assert box <= 900, (sel, box)  # seen without scrolling
    page.shot("blocked-next-step")


def test_a_resume_note_is_on_the_task_page(page, server, registry, tmp_path):
    """walk5: after a resume with a note, the note showed nowhere (only "human resume -> round 1")."""
    from graphlemon.taskboard import TaskBoard

    handle = snake_project(tmp_path, registry)
    board = TaskBoard(handle.ledger)
    tid = board.create("Implement a snake game").task_id
    board.transition(tid, "planning")
    board.transition(tid, "blocked_pending_human", blocked_reason="not_converging")
    board.manual_resume(tid, note="the wall is at <b>y >= height</b>")
    board.transition(tid, "coding", note="round 1: coding")  # the run's later note replaces the task's note
    from graphlemon.models import TaskSettingsRecord

    handle.ledger.append(TaskSettingsRecord(task_id=tid, settings={"executor": "anthropic"}))  # no call recorded
    page.goto(f"{server.url}/#/p/{handle.project_id}/t/{tid}")
    said = page.wait_for_selector("#resume-note-said")
    assert said.inner_text() == "your resume note: the wall is at <b>y >= height</b>"  # as text, not markup
    assert page.inner_text("#usage-executor") == "executor: anthropic (no model call recorded)"  # walk5: not "none"
    page.shot("resume-note")


def test_the_node_strip_counts_a_wait_for_a_person_apart_from_running_time(page, server, registry, tmp_path):
    from datetime import timedelta

    from graphlemon.models import NodeEvent, TaskEvent, utcnow

    handle = snake_project(tmp_path, registry)
    t0 = utcnow() - timedelta(minutes=10)
    at = lambda s: t0 + timedelta(seconds=s)  # noqa: E731
    tid = "task-20261206-190000-abcd"
    for status, s in (("queued", 0), ("coding", 1), ("blocked_pending_human", 20), ("coding", 140), ("done", 160)):
        handle.ledger.append(TaskEvent(task_id=tid, status=status, ts=at(s), goal_text="Implement a snake game",
                                       blocked_reason="stopped_by_person" if status.startswith("blocked") else None))
    for status, s in (("running", 5), ("running", 141), ("done", 149)):  # stopped at 20, resumed in the same node
        handle.ledger.append(NodeEvent(node_exec_id="ne-coder-snake", task_id=tid, stage="coder", unit_id="snake",
                                       status=status, ts=at(s)))  # fmt: skip
    page.goto(f"{server.url}/#/p/{handle.project_id}/t/{tid}")
    bar = page.wait_for_selector("#gantt g.bar[data-node-id=ne-coder-snake]")
    dur, title = bar.evaluate("g => [g.querySelector('text.dur').textContent, g.querySelector('title').textContent]")
    assert dur == "24 s" and "24 s running, 2 min 0 s waiting for a person" in title, (dur, title)
    page.shot("strip")
