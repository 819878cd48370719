"""REQ-13: raw execution logs viewed in the console and cleaned up on a schedule.

happy:    a running node's log scrolls live in v_log_viewer (headless Chromium) and through
          `graphlemon logs --follow` (a real subprocess); after the node ends the viewer is static and complete.
boundary: retention_days=1 and a closed log created more than a day ago: after the log_retention flow runs it is
          `purged`, its file is gone, and the viewer shows the purged notice instead of an error.
failure:  tailing an unknown node_exec_id is NODE_EXEC_NOT_FOUND (CLI, REST, WebSocket, page); one undeletable
          log among several is the only `purge_failed`, the rest are purged, and the next cycle retries it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from logview_kit import RunningNode

from graphlemon.console.app import ConsoleSettings
from graphlemon.execlogs import NodeLogs, log_path
from graphlemon.execlogs.retention import purge_expired, remove_log_folder, set_retention
from graphlemon.models import ExecutionLogEvent, utcnow
from graphlemon.project import init_project

pytestmark = pytest.mark.system

GRAPHLEMON = [sys.executable, "-m", "graphlemon"]


@pytest.fixture
def handle(tmp_path, registry):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "start"], cwd=repo, check=True)
    project = init_project(repo).project
    registry.register(project)
    return project


def until(page, js: str, timeout_ms: int) -> None:
    """Poll a page expression from Python (the console's CSP forbids the string eval of wait_for_function)."""
    deadline = time.monotonic() + timeout_ms / 1000
    while not page.evaluate(js):
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout_ms} ms: {js}")
        time.sleep(0.02)


def viewer_text(page) -> str:
    raw = "el => [...el.querySelectorAll('pre.raw')].map(r => r.textContent).join('')"  # the lines as written
    return page.eval_on_selector("#log-text", raw)


def old_closed_log(handle, name: str, days_ago: float, text: str = "old line\n") -> str:
    """A closed execution_log_file created `days_ago` days ago (its open and closed events dated back), with its
    file: what a node that ran then leaves behind."""
    nid = f"ne-task-old-{name}-r0"
    path = log_path(handle.state_dir, nid)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    (path.parent / "coder-a1-scripted.ndjson").write_text('{"event": "turn_start"}\n')  # a transcript beside it
    when = utcnow() - timedelta(days=days_ago)
    rel = path.relative_to(handle.state_dir).as_posix()
    handle.ledger.append(
        ExecutionLogEvent(node_exec_id=nid, status="open", path=rel, task_id="task-old", stage="coder", ts=when),
        ExecutionLogEvent(node_exec_id=nid, status="closed", from_status="open", path=rel, task_id="task-old",
                          stage="coder", size_bytes=len(text), line_count=text.count("\n"),
                          ts=when + timedelta(minutes=5)),
    )  # fmt: skip
    return nid


# -- happy ------------------------------------------------------------------------------------------------------


def test_happy_follow_streams_a_running_node_and_ends_by_itself_when_it_closes(handle):
    node = RunningNode(handle).start()
    proc = subprocess.Popen([*GRAPHLEMON, "logs", node.nid, "--follow", "--project", str(handle.root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        first = proc.stdout.readline()  # the node's `running` line, written before the writer starts
        assert f"{node.nid} attempt 1: running" in first
        writer = node.write(30, 0.05)
        seen: list[tuple[str, float]] = []
        for raw in proc.stdout:
            seen.append((raw.rstrip("\n"), time.monotonic()))
        rc = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    writer.join(timeout=10)
    assert rc == 0, proc.stderr.read()
    steps = [text.split("] ", 1)[1] for text, _ in seen if "[agent]" in text]
    assert steps == [f"step {i:04d} of 30" for i in range(30)]  # every line, once, in order
    assert seen[-1][0].endswith("attempt 1: done")
    # live: lines arrived while the node was still running, not all at the end
    assert sum(1 for _, t in seen if t < node.finished_at) >= 10
    assert node.log().status == "closed" and node.log().line_count == 32
    assert "log closed" in proc.stderr.read()


def test_happy_viewer_scrolls_live_then_turns_static_and_complete(page, server, handle):
    node = RunningNode(handle).start()
    node.write(60, 0.002, finish=False, prefix="before")
    node.thread.join()
    page.goto(f"{server.url}/#/p/{handle.project_id}/logs/{node.nid}")
    until(page, "document.body.dataset.logMode === 'live'", 10_000)
    assert "before 0059 of 60" in viewer_text(page)
    assert page.get_attribute("#log-state", "data-status") == "open"
    writer = node.write(40, 0.06, finish=False)
    until(page, "() => document.getElementById('log-text').textContent.includes('step 0010 of 40')", 10_000)  # fmt: skip
    page.shot("live")
    during = viewer_text(page)
    assert "step 0010 of 40" in during and "step 0039 of 40" not in during  # it arrived while being written
    assert page.get_attribute("#log-paused", "hidden") is not None  # following: auto-scroll on
    # the user scrolls up: auto-scroll pauses (the position stays where the user put it)
    page.eval_on_selector("#log-text", "el => { el.scrollTop = 0; el.dispatchEvent(new Event('scroll')); }")
    until(page, "() => !document.getElementById('log-paused').hidden", 5_000)
    time.sleep(0.3)
    assert page.eval_on_selector("#log-text", "el => el.scrollTop") == 0
    writer.join(timeout=10)
    node.finish()
    until(page, "document.body.dataset.logMode === 'static'", 10_000)
    page.wait_for_selector("#log-state[data-status=closed]", timeout=5_000)
    page.eval_on_selector("#log-text", "el => { el.scrollTop = el.scrollHeight; }")
    page.shot("static")
    text = viewer_text(page)
    assert text == log_path(handle.state_dir, node.nid).read_text()  # complete: every byte of the file, once
    assert [line.split("] ", 1)[1] for line in text.splitlines() if "] step" in line] == [
        f"step {i:04d} of 40" for i in range(40)
    ]
    assert "static" in page.inner_text("#log-state")
    # the graph's node opens the same viewer
    page.goto(f"{server.url}/#/p/{handle.project_id}/t/{node.task_id}")
    page.click(f"g.node[data-node-id='{node.nid}']")
    until(page, "document.body.dataset.logMode === 'static'", 10_000)
    assert node.nid in page.url


# -- boundary ---------------------------------------------------------------------------------------------------


def test_boundary_a_day_old_closed_log_is_purged_by_the_flow_and_the_viewer_says_so(
    prefect_harness, page, server, handle
):
    from graphlemon.flows.log_retention import log_retention

    set_retention(handle.ledger, 1, by="test")
    old = old_closed_log(handle, "stale", days_ago=1.2)
    fresh = old_closed_log(handle, "fresh", days_ago=0.5)
    running = RunningNode(handle).start()
    folder = log_path(handle.state_dir, old).parent
    result = log_retention(project=str(handle.root))
    assert [p.node_exec_id for p in result.purged] == [old] and result.failed == []
    assert (result.retention_days, result.kept_recent, result.kept_open) == (1, 1, 1)
    logs = NodeLogs(handle.ledger).all()
    assert logs[old].status == "purged" and logs[old].retention_days == 1
    assert not folder.exists()  # node.log and the transcripts beside it
    assert logs[fresh].status == "closed" and log_path(handle.state_dir, fresh).exists()
    assert logs[running.nid].status == "open" and log_path(handle.state_dir, running.nid).exists()

    page.goto(f"{server.url}/#/p/{handle.project_id}/logs/{old}")
    until(page, "document.body.dataset.logMode === 'purged'", 10_000)
    page.shot("purged")
    notice = page.inner_text("#log-notice")
    assert notice.startswith(f"purged by retention on {logs[old].purged_at:%Y-%m-%d}") and "(1 day)" in notice
    assert page.get_attribute("#log-notice", "data-kind") == "purged"
    cli = subprocess.run([*GRAPHLEMON, "logs", old, "--project", str(handle.root)], capture_output=True, text=True)
    assert cli.returncode == 0 and "purged by retention on" in cli.stdout and "(1 day)" in cli.stdout
    running.finish()


# -- failure ----------------------------------------------------------------------------------------------------


def test_failure_an_unknown_node_is_node_exec_not_found_everywhere(page, server, handle):
    from starlette.testclient import TestClient

    from graphlemon.console.app import create_app

    cli = subprocess.run([*GRAPHLEMON, "logs", "ne-nope-coder-r0", "--follow", "--project", str(handle.root)],
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    assert cli.returncode == 2 and "error[NODE_EXEC_NOT_FOUND]" in cli.stderr and cli.stdout == ""

    app = create_app(ConsoleSettings(token="t" * 32, registry=server.settings.registry))
    with TestClient(app, base_url="http://127.0.0.1", cookies={"graphlemon_console": "t" * 32}) as client:
        resp = client.get(f"/api/projects/{handle.project_id}/logs/ne-nope-coder-r0/range?start=0")
        assert resp.status_code == 404 and resp.json()["error"]["code"] == "NODE_EXEC_NOT_FOUND"
        with client.websocket_connect("/ws/logs", headers={"host": "127.0.0.1:8766"}) as ws:
            ws.send_json({"project": handle.project_id, "node": "ne-nope-coder-r0", "from": 0})
            msg = ws.receive_json()
            assert msg["type"] == "error" and msg["error"]["code"] == "NODE_EXEC_NOT_FOUND"
            closed = ws.receive()
            assert closed["type"] == "websocket.close" and closed["code"] == 4404

    page.goto(f"{server.url}/#/p/{handle.project_id}/logs/ne-nope-coder-r0")
    page.wait_for_selector("#log-notice[data-code=NODE_EXEC_NOT_FOUND]", timeout=10_000)
    page.shot("not-found")
    assert "error[NODE_EXEC_NOT_FOUND]" in page.inner_text("#log-notice")


class Undeletable:
    """Make a file impossible to delete for real: immutable (`chattr +i`) as root, a read-only folder otherwise.
    Where the file system has no immutable flag (tmpfs, overlayfs), `remove` refuses the pinned files with the
    EPERM a real one would raise, and says so (`simulated`)."""

    def __init__(self) -> None:
        self.pinned: list[Path] = []
        self.simulated = False

    def pin(self, path: Path) -> None:
        if os.geteuid() != 0:
            path.parent.chmod(0o500)
        elif shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)],
                                                               capture_output=True).returncode != 0:  # fmt: skip
            self.simulated = True
        self.pinned.append(path)

    def unpin(self, path: Path) -> None:
        if os.geteuid() != 0:
            path.parent.chmod(0o755)
        elif not self.simulated:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        self.pinned.remove(path)

    def remove(self):
        """The removal cleanup uses: the real one, unless the pin is simulated."""
        if not self.simulated:
            return None

        def remove(folder: Path) -> None:
            if any(p.parent == folder for p in self.pinned):
                raise PermissionError(1, "Operation not permitted", str(folder / "node.log"))
            remove_log_folder(folder)

        return remove


@pytest.fixture
def undeletable():
    pins = Undeletable()
    yield pins
    for path in list(pins.pinned):
        pins.unpin(path)


def test_failure_one_undeletable_log_fails_alone_and_is_retried_next_cycle(handle, undeletable):
    nids = [old_closed_log(handle, f"n{i}", days_ago=3) for i in range(4)]
    stuck = log_path(handle.state_dir, nids[1])
    undeletable.pin(stuck)
    first = purge_expired(handle.ledger, 1, remove=undeletable.remove())
    assert [f.node_exec_id for f in first.failed] == [nids[1]]
    assert sorted(p.node_exec_id for p in first.purged) == sorted(nids[:1] + nids[2:])
    logs = NodeLogs(handle.ledger).all()
    assert logs[nids[1]].status == "purge_failed" and "PermissionError" in (logs[nids[1]].error or "")
    assert stuck.exists() and not any(log_path(handle.state_dir, n).exists() for n in nids if n != nids[1])
    out = subprocess.run([*GRAPHLEMON, "logs", "--task", "task-old", "--project", str(handle.root), "--json"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert '"status": "purge_failed"' in out and out.count('"status": "purged"') == 3

    undeletable.unpin(stuck)  # the file is free again: the next cycle retries it
    second = purge_expired(handle.ledger, 1, remove=undeletable.remove())
    assert [p.node_exec_id for p in second.purged] == [nids[1]] and second.failed == []
    assert NodeLogs(handle.ledger).find(nids[1]).status == "purged" and not stuck.parent.exists()
    third = purge_expired(handle.ledger, 1)
    assert (third.purged, third.failed) == ([], [])  # a purged log is done


def test_retention_setting_refuses_bad_values_and_changes_nothing(handle):
    from graphlemon.errors import GraphLemonError

    set_retention(handle.ledger, 7, by="test")
    for bad in (0, -3, "abc", "1.5", 1.5, 100_000, True, None, float("nan")):
        with pytest.raises(GraphLemonError) as err:
            set_retention(handle.ledger, bad)
        assert err.value.code == "INVALID_PARAM", bad
    for bad in ("0", "abc"):  # the command: exit 2, the message on stderr
        cli = subprocess.run([*GRAPHLEMON, "logs", "retention", "set", "--days", bad, "--project", str(handle.root)],
                             capture_output=True, text=True)  # fmt: skip
        assert cli.returncode == 2 and "error[INVALID_PARAM]" in cli.stderr, (bad, cli.stderr)
    shown = subprocess.run([*GRAPHLEMON, "logs", "retention", "show", "--json", "--project", str(handle.root)],
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert '"retention_days": 7' in shown


def test_retention_settings_page(page, server, handle):
    page.goto(f"{server.url}/#/p/{handle.project_id}/logs")
    page.wait_for_selector("#retention-now")
    assert page.inner_text("#retention-now") == "14 day(s)"
    for bad in ("0", "-1", "99999", "abc"):
        page.fill("#retention-days", "")
        page.type("#retention-days", bad) if bad != "abc" else page.eval_on_selector(
            "#retention-days", "el => { el.type = 'text'; el.value = 'abc'; }"
        )
        page.click("#retention-form button[type=submit]")
        page.wait_for_selector("#retention-msg.error[data-code=INVALID_PARAM]", timeout=5_000)
        page.eval_on_selector("#retention-msg", "el => { el.className = ''; }")
    assert page.inner_text("#retention-now") == "14 day(s)"
    assert handle.ledger.read("log_retention") == []  # nothing written
    page.fill("#retention-days", "30")
    page.click("#retention-form button[type=submit]")
    page.wait_for_selector("#retention-msg.ok", timeout=5_000)
    page.shot("saved")
    assert page.inner_text("#retention-now") == "30 day(s)"
    assert [r.retention_days for r in handle.ledger.read("log_retention")] == [30]
