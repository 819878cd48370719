"""Issue 47 in real headless Chromium (Debian's `chromium`, Playwright): code people can read (an artifact diff and a
test report at their own URL), a log line's permalink, coming back after closing the browser, a second console on a
busy port, a task page that says its times, its words and its next step without overflowing; and the fresh-clone
walk-through's defects: a resume that took the task's lease is what the page says from that moment on (no "needs you",
Resume, evidence pack, "blocked" node or "stopped at" before its run writes anything; the holder is this test's own
process holding the lease, a live holder as `graphlemon resume` is while its flow run starts), and a double-clicked
Stop is one "stop requested" on the timeline. Each test saves screenshots under its tmp dir and tests/.screenshots/."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from browser_kit import chromium_path, console_page, shooting_page
from logview_kit import RunningNode

from graphlemon import lease as leases
from graphlemon.artifacts import ArtifactStore
from graphlemon.bugs import BugTracker
from graphlemon.models import EscalationRecord, LeaseEvent, TimelineEvent
from graphlemon.nodes import NodeTracker
from graphlemon.project import init_project
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system  # Chromium and a console server

DIFF = """diff --git a/snake/collision.py b/snake/collision.py
index 193ffb2..4c1d2aa 100644
--- a/snake/collision.py
+++ b/snake/collision.py
@@ -5,7 +5,7 @@ from snake.board import Board, Point
 def hits_wall(head: Point, board: Board) -> bool:
     \"\"\"True when the head is outside the board.\"\"\"
     x, y = head
-    return x < 0 or y < 0 or x >= board.width or y > board.height
+    return x < 0 or y < 0 or x >= board.width or y >= board.height
<SP>
<SP>
 def hits_self(body: list[Point]) -> bool:
""".replace("<SP>", " ")  # context lines that are blank hold one space
REPORT = """# Test report: collision (run-1)

red: 10/11 passed, 1 failed, 0 skipped (executor: scripted)

| test | result | hint |
|---|---|---|
| test_ac1_right_wall_is_hit | passed | |
| test_ac1_bottom_wall_is_hit | **failed** | `hits_wall((3, 10), Board(10, 10))` returned False <script>alert(1)</script> |

Bug bug-20261206-0656-d51f tracks it; see [the SDD](javascript:alert(1)) or [Python](https://www.python.org/).
"""


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


def test_an_artifact_diff_and_a_test_report_at_their_own_urls(page, server, project):
    task = TaskBoard(project.ledger).create("Implement a snake game")
    store = ArtifactStore(project.ledger)
    diff = store.write("code_diff", DIFF, unit_id="collision", task_id=task.task_id)
    report = store.write("test_report", REPORT, unit_id="collision", task_id=task.task_id)
    pid = project.project_id
    page.goto(f"{server.url}/#/p/{pid}/t/{task.task_id}")
    page.wait_for_selector(f"#artifacts a[data-artifact='{diff.artifact_id}']")
    href = page.get_attribute(f"#artifacts a[data-artifact='{diff.artifact_id}']", "href")
    assert href == f"#/p/{pid}/artifacts/{diff.artifact_id}"  # a URL of its own, not javascript:void 0
    page.click(f"#artifacts a[data-artifact='{diff.artifact_id}']")
    page.wait_for_selector("#artifact-diff tr.d-add")
    page.shot("diff")
    added = page.query_selector("#artifact-diff tr.d-add")
    assert [td.inner_text() for td in added.query_selector_all("td.ln")] == ["", "8"]  # old side empty, new line 8
    removed = page.query_selector("#artifact-diff tr.d-del")
    assert removed.query_selector_all("td.ln")[0].inner_text() == "8"
    code = page.query_selector("#artifact-diff tr.d-ctx td.code")
    style = page.evaluate("(el) => [getComputedStyle(el).fontFamily, getComputedStyle(el).whiteSpace]", code)
    assert "monospace" in style[0] and style[1] == "pre-wrap"
    assert page.evaluate("(el) => getComputedStyle(el).backgroundColor", added) == "rgb(230, 255, 236)"
    assert page.evaluate("(el) => getComputedStyle(el).backgroundColor", removed) == "rgb(255, 235, 233)"
    assert page.query_selector("#artifact-diff tr.d-ctx td.code").inner_text().startswith("def hits_wall")
    # the test report: markdown rendered, its table a table, raw HTML as text, only the http(s) link live
    page.goto(f"{server.url}/#/p/{pid}/artifacts/{report.artifact_id}")
    page.wait_for_selector("#artifact-md table")
    page.shot("test-report")
    md = page.query_selector("#artifact-md")
    assert md.query_selector("script") is None and "<script>alert(1)</script>" in md.inner_text()
    assert [a.get_attribute("href") for a in md.query_selector_all("a:not(.bug-link)")] == ["https://www.python.org/"]
    assert md.query_selector("a.bug-link[data-bug='bug-20261206-0656-d51f']") is not None
    assert len(md.query_selector_all("table tr")) == 3 and "|" not in md.query_selector("table").inner_text()


def test_a_log_lines_permalink_opens_the_log_on_that_line(page, server, project):
    node = RunningNode(project).start()
    for i in range(1, 61):
        node.line(f"step {i}: checked the board{' bug-20261206-0656-d51f' if i == 7 else ''}")
    node.finish()
    pid = project.project_id
    page.goto(f"{server.url}/#/p/{pid}/logs/{node.nid}")
    page.wait_for_selector("#log-text .entry a.permalink")
    entry = page.locator("#log-text .entry", has_text="step 40: checked the board").first
    link = entry.locator("a.permalink")
    href = link.get_attribute("href")
    assert re.fullmatch(rf"#/p/{pid}/logs/{node.nid}\?at=\d+", href), href
    offset = int(href.rsplit("=", 1)[1])
    raw = (project.state_dir / "logs").rglob("*.log")
    text = next(p for p in raw if node.nid in str(p)).read_bytes()
    assert text[offset:].startswith(b"20") and b"step 40: checked the board" in text[offset:].split(b"\n", 1)[0]
    assert page.locator("#log-text .entry", has_text="step 7:").locator("a.bug-link").count() == 1
    # the permalink in a fresh page (as a person pasting it): the log opens on that line, marked, in view
    fresh = page.context.new_page()
    fresh.goto(f"{server.url}/{href}")
    fresh.wait_for_selector("#log-text .entry.linked")
    marked = fresh.query_selector("#log-text .entry.linked")
    assert "step 40: checked the board" in marked.inner_text()
    box = fresh.query_selector("#log-text")
    assert fresh.evaluate("([b, e]) => { const r = b.getBoundingClientRect(), q = e.getBoundingClientRect();"
                          " return q.top >= r.top && q.bottom <= r.bottom; }", [box, marked])  # fmt: skip
    fresh.screenshot(path=str(Path(__file__).resolve().parents[1] / ".screenshots" / "permalink-opened.png"), full_page=True)
    fresh.close()
    page.shot("log")


def test_closing_and_reopening_the_browser_keeps_the_right_to_act(browser, server, tmp_path, request):
    """A persistent browser profile, as a person's: closed after opening the printed URL, opened again on the bare
    address, it still holds the token (the cookie lasts 30 days); a console restarted with a new token would not
    accept it (test_the_printed_url... in test_console_api.py)."""
    profile = tmp_path / "profile"
    shots = Path(__file__).resolve().parents[1] / ".screenshots"
    shots.mkdir(exist_ok=True)
    chromium = browser.browser_type  # the module's Playwright: a second one cannot run in this thread
    first = chromium.launch_persistent_context(str(profile), executable_path=chromium_path(), headless=True,
                                               args=["--no-sandbox", "--disable-gpu"])  # fmt: skip
    pg = first.new_page()
    pg.goto(f"{server.url}/?token={server.settings.token}")
    pg.wait_for_selector("#projects")
    assert pg.evaluate("document.querySelector('meta[name=graphlemon-token]').content") == server.settings.token
    first.close()  # the browser is closed: a session cookie would be gone now
    again = chromium.launch_persistent_context(str(profile), executable_path=chromium_path(), headless=True,
                                               args=["--no-sandbox", "--disable-gpu"])  # fmt: skip
    pg = again.new_page()
    pg.goto(f"{server.url}/")  # the bare address, as a bookmark
    pg.wait_for_selector("#projects")
    pg.screenshot(path=str(shots / f"{request.node.name}-reopened.png"), full_page=True)
    assert pg.evaluate("document.querySelector('meta[name=graphlemon-token]').content") == server.settings.token
    assert pg.is_hidden("#token-notice")
    cookie = next(c for c in again.cookies() if c["name"] == "graphlemon_console")
    assert cookie["httpOnly"] and cookie["expires"] > time.time() + 29 * 86400
    again.close()


@pytest.mark.slow
def test_a_second_console_on_a_busy_port_takes_the_next_one_and_console_list_prints_both(browser, request, tmp_path):
    env = {**os.environ, "GRAPHLEMON_CONFIG_DIR": str(tmp_path / "cfg")}
    from graphlemon.console.server import free_port

    port = free_port()
    started = []
    try:
        for _ in range(2):
            proc = subprocess.Popen([sys.executable, "-m", "graphlemon", "console", "--port", str(port)], cwd=tmp_path,
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
            started.append(proc)
            lines = [proc.stdout.readline().strip()]
            while not lines[-1].startswith("GraphLemon console:"):
                assert lines[-1] or proc.poll() is None, proc.stderr.read()
                lines.append(proc.stdout.readline().strip())
            proc.lines = lines
        first, second = started
        assert first.lines[-1].startswith(f"GraphLemon console: http://127.0.0.1:{port}/?token=")
        assert second.lines[0].startswith(f"port {port} is busy") and f"serving on port {port + 1}" in second.lines[0]
        url = second.lines[-1].split(": ", 1)[1]
        assert url.startswith(f"http://127.0.0.1:{port + 1}/?token=")
        listed = subprocess.run([sys.executable, "-m", "graphlemon", "console", "list"], env=env, capture_output=True,
                                text=True, timeout=60).stdout  # fmt: skip
        assert first.lines[-1].split(": ", 1)[1] in listed and url in listed
        records = list((tmp_path / "cfg" / "consoles").glob("*.json"))
        assert len(records) == 2 and all(oct(p.stat().st_mode & 0o777) == "0o600" for p in records)
        for pg in shooting_page(browser, request, tmp_path):
            pg.goto(url)
            pg.wait_for_selector("#projects")
            pg.shot("second-console")
            assert pg.evaluate("document.querySelector('meta[name=graphlemon-token]').content") != ""
    finally:
        for proc in started:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    assert not list((tmp_path / "cfg" / "consoles").glob("*.json"))  # each removed its record on the way out


def test_the_task_page_says_times_words_and_next_step_and_never_overflows(page, server, project):
    from graphlemon.models import BudgetConfig, UsageRecord
    from graphlemon.nodes import NodeTracker
    from graphlemon.stages.session import LoopConfig

    board = TaskBoard(project.ledger)
    task = board.create("Implement a snake game \u202egpj.exe with <script>alert(1)</script>")
    board.transition(task.task_id, "planning")
    LoopConfig.record(project.state_dir, task.task_id, executor="scripted", playbook="/demo/playbook.yaml",
                      max_unit_attempts=2)  # fmt: skip
    nodes = NodeTracker(project.ledger)
    nid = f"ne-{task.task_id}-planner-r0"
    nodes.transition(nid, "running", task_id=task.task_id, stage="planner")
    nodes.transition(nid, "done")
    project.ledger.append(UsageRecord(call_id="c1", task_id=task.task_id, role="planner", model="m",
                                      executor="scripted", input_tokens=5000))  # fmt: skip
    project.ledger.append(BudgetConfig(task_id=task.task_id, limit_type="token_count", limit_value=4000, by="test"))
    tracker = BugTracker(project.ledger)
    bug, _ = tracker.open(title="the wall check is off by one", source="unit_test", unit_id="collision",
                          test_name="t::x", task_id=task.task_id)  # fmt: skip
    long_cause = "the_comparison_" * 30 + " y > height should be y >= height"
    tracker.update(bug, root_cause_category="coder", root_cause_detail=long_cause, suggested_route="fast_lane")
    board.transition(task.task_id, "blocked_pending_human", blocked_reason="budget_exceeded")
    pid = project.project_id
    page.goto(f"{server.url}/#/p/{pid}/t/{task.task_id}")
    page.wait_for_selector("#actions[data-main=budget]")
    page.wait_for_selector("#gantt")
    page.shot("budget-blocked")
    head = page.inner_text("#task-head")
    assert "needs you: out of budget" in head and "blocked_pending_human" not in head
    assert "<U+202E>gpj.exe" in head and "<script>alert(1)</script>" in head
    assert page.get_attribute("#task-head .pill", "title") == "blocked_pending_human (budget_exceeded)"
    assert "started" in page.inner_text("#task-times") and "took" in page.inner_text("#task-times")
    assert page.get_attribute("#task-times time", "title")  # the full date on hover
    params = page.inner_text("#task-params")
    assert "executor scripted" in params and "2 attempts per unit" in params and "budget 4,000 tokens" in params
    assert page.is_visible("#budget-main") and page.inner_text("#budget-main") == "Raise the budget"
    assert "secondary" in (page.get_attribute("#resume", "class") or "")
    raised = re.search(rf"budget set {task.task_id} --limit (\d+) --project {re.escape(str(project.root))}",
                       page.inner_text("#next-command"))  # fmt: skip
    assert raised and int(raised[1]) >= 8000  # works as printed: twice the larger of the limit and the use
    assert "manual_resume" not in page.inner_text("#actions")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # nothing pushes it sideways
    # the budget page: a limit below what was used is accepted and said
    page.click("#budget-main")
    page.wait_for_selector("#budget-info .kv")
    page.fill("#budget-limit", "4500")
    page.click("#budget-form button[type=submit]")
    page.wait_for_selector("#budget-warning")
    assert "not above what the task already used (5,000 tokens)" in page.inner_text("#budget-warning")
    page.shot("budget-below-used")
    # an unknown task's budget page says so at once (it used to load forever)
    page.goto(f"{server.url}/#/p/{pid}/t/task-nope/budget")
    page.wait_for_selector("#budget-missing[data-code=TASK_NOT_FOUND]", timeout=10_000)
    page.shot("unknown-task-budget")
    # the runs page across projects, filtered by status: a link
    page.goto(f"{server.url}/#/runs?status=blocked_pending_human")
    page.wait_for_selector(f"#runs-table tr[data-task='{task.task_id}']")
    page.shot("runs")
    assert "needs you: out of budget" in page.inner_text("#runs-table")


# -- the fresh-clone walk-through: a resume that took the lease; a double-clicked Stop ----------------------------


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
    # a run that took the lease before the task changed, and blocked it, is letting go: not a resume
    board = TaskBoard(project.ledger)
    with leases.held(project.ledger, tid, leases.Holder.here("graphlemon resume")):
        page.wait_for_selector("#task-head .pill[data-status=resuming]", timeout=10_000)
        board.manual_resume(tid, note="go on")
        board.transition(tid, "blocked_pending_human", blocked_reason="not_converging")
        page.wait_for_selector("#task-head .pill[data-status=blocked_pending_human]", timeout=10_000)
        page.wait_for_selector("#run-state[data-state=running]")
        assert "needs you: not converging" in page.inner_text("#task-head")
        assert page.query_selector("#resume") is None  # the run still holds it: nothing to resume yet
        page.shot("blocking-run-letting-go")


def test_a_double_clicked_stop_is_one_stop_requested_on_the_timeline(page, server, project):
    board = TaskBoard(project.ledger)
    tid = board.create("Implement a snake game").task_id
    board.transition(tid, "planning")
    with leases.held(project.ledger, tid, leases.Holder.here("graphlemon run")):  # a run holds it: Stop is offered
        page.goto(f"{server.url}/#/p/{project.project_id}/t/{tid}")
        page.wait_for_selector("#run-state[data-state=running]")
        page.wait_for_selector("#stop")
        posts = []
        page.on("request", lambda r: posts.append(r.url) if r.method == "POST" and r.url.endswith("/stop") else None)
        page.dblclick("#stop")
        page.wait_for_selector("#run-state[data-state=stopping]", timeout=10_000)
        page.wait_for_selector("#action-msg.ok:has-text('stop requested')")
        page.wait_for_timeout(500)  # a second request, had one been sent, is answered
        assert len(posts) == 1, posts  # the button was disabled from the first click until the answer
        page.reload()
        page.wait_for_selector("#timeline")
        page.shot("stopping")
        lease_events = [e.event for e in project.ledger.read_as("lease", LeaseEvent) if e.task_id == tid]
        assert lease_events.count("stop_requested") == 1
        said = [e.summary for e in project.ledger.read_as("timeline", TimelineEvent)
                if e.task_id == tid and e.event == "human_action"]  # fmt: skip
        assert len(said) == 1 and said[0].startswith("stop requested: "), said
        assert page.inner_text("#timeline").count("stop requested") == 1


def test_the_stop_requested_message_gives_way_once_no_run_holds_the_task(page, server, project):
    tid = TaskBoard(project.ledger).create("Implement a snake game").task_id
    with leases.held(project.ledger, tid, leases.Holder.here("graphlemon run")):
        page.goto(f"{server.url}/#/p/{project.project_id}/t/{tid}")
        page.click("#stop")
        page.wait_for_selector("#action-msg.ok:has-text('stop requested')")
        page.wait_for_selector("#run-state[data-state=stopping]", timeout=10_000)
    # the run let go of the task (here: the lease released): the page no longer says a stop is on its way
    page.wait_for_selector("#action-msg.ok:has-text('The stop is done: no run holds this task any more')", timeout=10_000)
    assert "stops at its next safe point" not in page.inner_text("#action-msg")
    page.shot("stop-done")


def test_a_task_queued_again_by_a_cli_budget_raise_shows_nothing_running(page, server, project):
    from graphlemon.agents.budget import update_budget

    tid = stopped_task(project)  # its coder node was left marked running
    board = TaskBoard(project.ledger)
    board.manual_resume(tid)
    board.transition(tid, "blocked_pending_human", blocked_reason="budget_exceeded")
    assert update_budget(project.ledger, tid, 50_000, "token_count").requeued  # `graphlemon budget set`: queued
    assert board.get(tid).status == "queued"
    page.goto(f"{server.url}/#/p/{project.project_id}/t/{tid}")
    page.wait_for_selector("#run-state[data-state=idle]")
    bar = "#gantt g.bar[data-status=stopped] rect"
    page.wait_for_selector(bar)  # the coder node is not going on: no run holds the task
    assert page.query_selector("#gantt g.bar[data-status=running]") is None
    assert page.query_selector("g.node[data-status=stopped]") is not None
    width = page.get_attribute(bar, "width")
    page.wait_for_timeout(2500)
    page.reload()
    page.wait_for_selector(bar)
    assert page.get_attribute(bar, "width") == width  # the bar does not grow while nothing runs the task
    assert "no run picks it up" in page.inner_text("#run-state")
    assert "going on" not in page.inner_text("#task-times") and "no run yet" in page.inner_text("#task-times")  # none ever held it
    page.shot("queued-nothing-running")


def test_new_goal_refuses_a_playbook_written_for_another_repository_on_the_form(page, server, project):
    book = Path(__file__).resolve().parents[2] / "examples" / "snake" / "playbook.yaml"
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start"],
                   cwd=project.root, check=True)  # a goal needs a commit to branch from  # fmt: skip
    page.goto(f"{server.url}/#/p/{project.project_id}/goal")
    page.fill("#goal-text", "Implement a snake game")
    page.fill("#goal-playbook", str(book))
    page.select_option("#goal-engine", "direct")
    page.click("#goal-form button[type=submit]")
    page.wait_for_selector("#goal-msg[data-code=INVALID_PARAM]:has-text('written for another repository')")
    page.shot("refused")
    assert page.query_selector("#launch[data-state]") is None  # nothing was launched
    assert not (project.state_dir / "tasks.ndjson").exists()
