"""The bugs page and the log viewer in real headless Chromium (Debian's `chromium`, Playwright). The ledgers are
written by the domain's own calls (BugTracker, NodeLogs), the same records the loop leaves. Each test saves
screenshots under its tmp dir and tests/.screenshots/."""

from __future__ import annotations

import json
import subprocess

import pytest

from graphlemon.bugs import BugTracker
from graphlemon.console.app import ConsoleSettings
from graphlemon.console.server import BackgroundServer
from graphlemon.models import TimelineEvent
from graphlemon.project import init_project
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system

UNITS = {"units": [{"unit_id": u, "title": u, "code": [f"snake/{u}.py"], "tests": [f"tests/{u}"], "depends_on": []}
                   for u in ("board", "collision", "scoring")]}  # fmt: skip


@pytest.fixture
def project(tmp_path, registry):
    repo = tmp_path / "snake"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "s"],
                   cwd=repo, check=True)  # fmt: skip
    handle = init_project(repo).project
    (handle.state_dir / "units.json").write_text(json.dumps(UNITS))
    registry.register(handle)
    return handle


def test_a_reported_bug_is_found_on_the_bugs_page_and_bug_ids_are_links(page, server, project):
    pid = project.project_id
    tid = TaskBoard(project.ledger).create("Implement a snake game").task_id
    tracker = BugTracker(project.ledger)
    found, _ = tracker.open(title="right wall not hit", source="unit_test", unit_id="collision", task_id=tid,
                            test_name="test_right_wall")  # fmt: skip
    tracker.update(found, by="validator", root_cause_category="coder", root_cause_detail="x > width, not >=")
    project.ledger.append(TimelineEvent(event="test_failed", task_id=tid, unit_id="collision",
                                        summary=f"1 failed (bug {found}): expected True"))  # fmt: skip

    page.goto(f"{server.url}/#/p/{pid}/bug")
    page.wait_for_selector("#bug-unit option[value=collision]", state="attached")
    assert page.eval_on_selector_all("#bug-unit option", "os => os.map(o => o.value)") == [
        "",
        "board",
        "collision",
        "scoring",
    ]  # the plan's units, not a free-text box
    page.fill("#bug-title", "the score <b>resets</b>")
    page.fill("#bug-description", "eating food twice gives 1 point")
    page.select_option("#bug-unit", "scoring")
    page.click("#bug-form button[type=submit]")
    page.wait_for_selector("#bug-msg.ok a.bug-link")
    page.shot("reported")
    reported = page.get_attribute("#bug-msg a.bug-link", "data-bug")
    assert BugTracker(project.ledger).get(reported).unit_id == "scoring"
    page.click("#bug-msg a.bug-link")
    page.wait_for_selector("#bug-detail .kv")
    assert "the score <b>resets</b>" in page.inner_text("#bug-detail")  # text, never markup
    page.shot("detail")

    page.goto(f"{server.url}/#/p/{pid}/bugs")
    page.wait_for_selector("#bugs-table")
    assert page.inner_text("#bugs-count") == "2 of 2 bug(s)"
    shown = page.eval_on_selector_all("#filter-category option", "os => os.map((o) => o.textContent)")
    assert "unknown" not in shown and "not triaged yet" in shown, shown  # the words the rows use
    page.select_option("#filter-category", "coder")  # the validator's attribution, not "unknown"
    page.wait_for_selector("#bugs-count:has-text('1 of 2')")
    assert page.query_selector_all("#bugs-table tr[data-bug]")[0].get_attribute("data-bug") == found
    page.select_option("#filter-category", "")
    page.select_option("#filter-unit", "scoring")
    page.wait_for_selector(f"#bugs-table tr[data-bug='{reported}']")
    assert "unit=scoring" in page.evaluate("location.hash")  # a filtered list is a link
    page.shot("filtered")

    page.goto(f"{server.url}/#/p/{pid}/t/{tid}")
    page.wait_for_selector(f"#timeline a.bug-link[data-bug='{found}']")
    page.wait_for_selector(f"#bugs a.bug-link[data-bug='{found}']")
    page.click(f"#timeline a.bug-link[data-bug='{found}']")
    page.wait_for_selector("#bug-history li")
    assert "x > width, not >=" in page.inner_text("#bug-detail")


AGENT_LINES = [
    'coder scripted turn_start {"role": "coder", "unit_id": "collision", "attempt": 1, "tools": ["read_file", "write_file"]}',
    'coder scripted model=scripted usage {"input_tokens": 1800, "output_tokens": 450, "cost_usd": 0.0, "model": "scripted"}',
    'coder scripted model=scripted tool_call {"step": 1, "tool": "write_file", "args": {"path": "snake/collision.py", '
    '"content": "def hits_wall(head, board):\\n    x, y = head\\n    return x > board.width\\n"}}',
    'coder scripted model=scripted tool_result {"step": 1, "tool": "write_file", "ok": true, "content": {"bytes": 80}}',
    'coder scripted model=scripted turn_end {"stop_reason": "completed", "output": {"summary": "hits_wall <b>x</b>"}}',
]


def test_a_log_is_read_without_json_filtered_downloaded_and_not_live_once_its_task_blocked(page, server, project):
    from logview_kit import RunningNode

    from graphlemon.execlogs import log_path, write_line

    node = RunningNode(project, stage="coder", unit_id="collision").start()
    for text in AGENT_LINES:
        node.line(text)
    write_line(project.state_dir, node.nid, "tests", "unit tests: failed, exit 1, 9 passed, 2 failed\n"
               "    E       assert hits_wall((10, 3), BOARD)\n    FAILED tests/collision/test_collision.py")  # fmt: skip
    TaskBoard(project.ledger).transition(node.task_id, "blocked_pending_human", blocked_reason="budget_exceeded")
    page.goto(f"{server.url}/#/p/{project.project_id}/logs/{node.nid}")
    page.wait_for_selector("#log-text .entry[data-kind=tool_call]")
    page.wait_for_function("document.body.dataset.logMode === 'static'")  # open, but its task stopped: not live
    assert "ended: its task needs you" in page.inner_text("#log-state")
    shown = page.inner_text("#log-text")
    assert '{"' not in shown and "\\n" not in shown  # read without JSON
    assert 'coder calls write_file(path="snake/collision.py", content=<' in shown
    assert "coder used 1,800 in + 450 out tokens" in shown and "hits_wall <b>x</b>" in shown
    page.shot("people")
    page.click("#log-text .entry[data-kind=tool_call] summary")  # a tool call opens to its arguments
    assert "return x > board.width" in page.inner_text("#log-text .entry[data-kind=tool_call] details pre")
    page.fill("#log-filter", "assert hits_wall")
    page.wait_for_function("[...document.querySelectorAll('#log-text .entry')].filter(e => !e.hidden).length === 1")
    assert page.get_attribute("#log-text .entry:not([hidden])", "data-kind") == "tests"
    page.shot("filtered")
    page.fill("#log-filter", "")
    page.select_option("#log-kind", "tool_result")
    page.wait_for_function("[...document.querySelectorAll('#log-text .entry')].filter(e => !e.hidden).length === 1")
    page.check("#log-raw-toggle")  # the lines as written, one click away
    assert '"tool": "write_file"' in page.inner_text("#log-text")
    page.shot("raw")
    download = page.request.get(f"{server.url}/api/projects/{project.project_id}/logs/{node.nid}/download")
    assert download.ok and download.text() == log_path(project.state_dir, node.nid).read_text()
    assert "attachment" in download.headers["content-disposition"]


def test_a_page_older_than_a_console_restart_says_to_open_the_new_url_and_then_acts(page, registry, project):
    old = BackgroundServer(ConsoleSettings(token="o" * 32, registry=registry)).start()
    try:
        page.goto(f"{old.url}/?token={'o' * 32}")
        page.goto(f"{old.url}/#/p/{project.project_id}/bug")
        page.wait_for_selector("#bug-unit option[value=board]", state="attached")
    finally:
        old.stop()
    new = BackgroundServer(ConsoleSettings(token="n" * 32, registry=registry), port=old.port).start()
    try:
        page.fill("#bug-description", "the snake turns back on itself")
        page.click("#bug-form button[type=submit]")
        page.wait_for_selector("#bug-msg[data-code=PERMISSION_DENIED]")
        page.wait_for_selector("#token-notice:has-text('restarted with a new token')")
        assert not (project.state_dir / "bugs.ndjson").exists()
        page.shot("stale")
        page.goto(f"{new.url}/?token={'n' * 32}")  # the URL the restarted console printed
        page.goto(f"{new.url}/#/p/{project.project_id}/bug")
        page.wait_for_selector("#bug-unit option[value=board]", state="attached")
        assert page.is_hidden("#token-notice")
        page.fill("#bug-description", "the snake turns back on itself")
        page.click("#bug-form button[type=submit]")
        page.wait_for_selector("#bug-msg.ok")
    finally:
        new.stop()


def test_missing_projects_are_collapsed_and_removed_in_one_click(page, server, registry, project, tmp_path):
    import shutil

    for name in ("old-a", "old-b"):
        repo = tmp_path / name
        repo.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        registry.register(init_project(repo).project)
        shutil.rmtree(repo)
    page.goto(f"{server.url}/#/")
    page.wait_for_selector("#missing-projects summary:has-text('2 missing project(s)')")
    assert page.is_hidden("#forget-missing")  # collapsed: the projects that exist come first
    assert page.query_selector(f"#projects-table tr[data-project='{project.project_id}']") is not None
    page.click("#missing-projects summary")
    page.shot("missing")
    page.click("#forget-missing")  # their folders are gone already: no question asked
    page.wait_for_selector("#missing-projects", state="detached")
    assert all(p.available for p in registry.list())
    page.shot("cleaned")


def test_a_done_task_with_refused_actions_says_so_on_the_dashboard_and_lists_each_on_its_page(page, server, project):
    """A task the sandbox refused actions for never reads as a clean "done": the count beside its status on the
    dashboard and the task page, and a table of each refused action (an agent's path shown as text)."""
    from graphlemon.violations import violation_event

    pid = project.project_id
    board = TaskBoard(project.ledger)
    tid = board.create("Implement a snake game").task_id
    for status in ("planning", "coding", "validating", "done"):
        board.transition(tid, status)
    hostile = "tests/<b>x</b>\u202eyp.txt"
    for i, (stage, why) in enumerate([("tester", f"test run: sandbox: '{hostile}' goes through a symlink; GraphLemon "
                                                 "did not follow it"),
                                      ("coder", "commit: refused 'tests/fixture/HEAD': inside a folder git would take "
                                                "for a repository")]):  # fmt: skip
        project.ledger.append(violation_event(why, node_exec_id=f"ne-{i}", stage=stage, task_id=tid, unit_id="board"))
    page.goto(f"{server.url}/#/p/{pid}")
    page.wait_for_selector(f"tr[data-task='{tid}'] .refused-badge")
    assert "with 2 refused actions" in page.inner_text(f"tr[data-task='{tid}']")
    page.shot("dashboard")
    page.goto(f"{server.url}/#/p/{pid}/t/{tid}")
    page.wait_for_selector("#refused-actions tr[data-stage=coder]")
    assert "with 2 refused actions" in page.inner_text("h1")
    table = page.inner_text("#refused-actions")
    assert "<b>x</b>" in table and "\u202e" not in table and "\\u202e" in table  # text, never markup; bidi shown
    page.shot("task")
