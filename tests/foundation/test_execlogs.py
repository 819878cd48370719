"""graphlemon.execlogs (REQ-13): the execution_log_file lifecycle, the one writing seam, byte-range reads, cleanup."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from logview_kit import RunningNode

from graphlemon import lifecycle
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.execlogs import LINE_MAX_CHARS, NodeLogs, follow, log_path, read_range, tail_lines, write_line
from graphlemon.execlogs.retention import check_retention_days, purge_expired, retention, set_retention
from graphlemon.models import ExecutionLogEvent, utcnow
from graphlemon.nodes import log_view


def test_the_lifecycle_table():
    assert lifecycle.allowed("execution_log", None) == {"open"}
    lifecycle.check("execution_log", "open", "closed")
    lifecycle.check("execution_log", "closed", "purged")
    lifecycle.check("execution_log", "purge_failed", "purge_failed")  # retried, failed again
    for bad in (("open", "purged"), ("open", "purge_failed"), (None, "closed")):
        with pytest.raises(GraphLemonError) as err:
            lifecycle.check("execution_log", *bad)
        assert err.value.code == ErrorCode.INVALID_TRANSITION


def test_a_node_opens_writes_redacted_lines_and_closes_its_log(project, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-very-secret-123")
    node = RunningNode(project).start()
    assert node.log().status == "open"
    node.line("called with tok-very-secret-123 and sk-ant-api03-abcdefghijklmnop")
    node.line("x" * (LINE_MAX_CHARS + 500))
    write_line(project.state_dir, f"{node.nid}-tester-a1", "tests", "a tester turn inside the coder node")
    write_line(project.state_dir, "ne-unrelated-coder-r0", "agent", "no log open: nothing written")
    node.nodes.transition(node.nid, "reflecting", error="2 tests failed")
    node.nodes.transition(node.nid, "blocked", error="retry limit")
    log = node.log()
    text = log_path(project.state_dir, node.nid).read_text()
    assert log.status == "closed" and log.size_bytes == len(text.encode()) and log.line_count == 6
    assert "tok-very-secret-123" not in text and "sk-ant-api03" not in text and text.count("[REDACTED]") == 2
    assert "[500 more chars cut]" in text
    assert "[tests] a tester turn inside the coder node" in text
    assert text.splitlines()[-1].endswith("attempt 1: blocked (retry limit)")
    assert not log_path(project.state_dir, "ne-unrelated-coder-r0").exists()
    # a resumed node reopens its log and appends
    node.nodes.transition(node.nid, "retrying")
    node.nodes.transition(node.nid, "running")
    assert node.log().status == "open"
    node.finish()
    assert node.log().status == "closed" and node.log().line_count == 9
    events = [e.status for e in project.ledger.read_as("log", ExecutionLogEvent)]
    assert events == ["open", "closed", "open", "closed"]


def test_logging_off_writes_no_record_and_no_file(project, monkeypatch):
    monkeypatch.setenv("GRAPHLEMON_EXEC_LOGS", "off")
    node = RunningNode(project).start()
    node.line("hello")
    node.finish()
    assert node.log() is None and not log_path(project.state_dir, node.nid).exists()
    assert log_view(project.ledger, node.nid).notice.startswith("this node has no execution log")


def test_read_range_returns_whole_lines_and_never_more_than_asked(tmp_path):
    path = tmp_path / "node.log"
    lines = [f"line {i:03d} " + "y" * (i % 7) + "\n" for i in range(200)]
    path.write_text("".join(lines))
    data = path.read_bytes()
    chunk = read_range(path, 0, 100)
    assert chunk.text.endswith("\n") and len(chunk.text) <= 100 and data.startswith(chunk.text.encode())
    inside = read_range(path, 5, 100)  # a start inside a line moves to the next one
    assert inside.start == len(lines[0]) and inside.text.startswith("line 001")
    pages, start = [], 0
    while (c := read_range(path, start, 333)).end > start:
        pages.append(c.text)
        start = c.end
    assert "".join(pages) == path.read_text() and start == len(data)
    assert read_range(path, len(data) + 10, 100).text == ""
    with pytest.raises(GraphLemonError):
        read_range(path, -1, 10)


def test_tail_lines_reads_from_the_end(tmp_path):
    path = tmp_path / "node.log"
    path.write_text("".join(f"{i}\n" for i in range(100_000)) + "partial")
    assert tail_lines(path, 3).text == "99997\n99998\n99999\n"  # a line being written is not shown yet
    assert tail_lines(path, 0).text == ""
    assert tail_lines(path, 10**6).start == 0


def test_follow_ends_when_the_log_closes(project):
    node = RunningNode(project).start()
    node.write(20, 0.01)
    text = "".join(c.text for c in follow(NodeLogs(project.ledger), node.nid, 0, poll_s=0.01))
    assert text == log_path(project.state_dir, node.nid).read_text()
    assert text.count("[agent] step") == 20 and node.log().status == "closed"


def test_unknown_node_and_bad_ids(project):
    with pytest.raises(GraphLemonError) as err:
        log_view(project.ledger, "ne-nothing-coder-r0")
    assert err.value.code == ErrorCode.NODE_EXEC_NOT_FOUND
    for bad in ("../etc", "a/b", "", ".."):
        with pytest.raises(GraphLemonError) as err:
            log_path(project.state_dir, bad)
        assert err.value.code == ErrorCode.INVALID_PARAM


@pytest.mark.parametrize("bad", [0, -1, 3651, 1.5, "x", "", True, None, float("inf"), [1]])
def test_retention_days_must_be_a_whole_number_of_days_in_range(project, bad):
    with pytest.raises(GraphLemonError) as err:
        set_retention(project.ledger, bad)
    assert err.value.code == ErrorCode.INVALID_PARAM
    assert project.ledger.read("log_retention") == []
    assert retention(project.ledger).retention_days == 14


def test_retention_days_accepts_whole_numbers():
    assert [check_retention_days(v) for v in (1, "7", 30.0, 3650)] == [1, 7, 30, 3650]


def _closed(project, nid: str, days_ago: float) -> None:
    path = log_path(project.state_dir, nid)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x\n")
    when = utcnow() - timedelta(days=days_ago)
    rel = path.relative_to(project.state_dir).as_posix()
    project.ledger.append(
        ExecutionLogEvent(node_exec_id=nid, status="open", path=rel, ts=when),
        ExecutionLogEvent(node_exec_id=nid, status="closed", path=rel, size_bytes=2, line_count=1, ts=when),
    )


def test_cleanup_never_touches_an_open_log_and_keeps_recent_ones(project):
    running = RunningNode(project).start()
    _closed(project, "ne-t-coder-old-r0", 20)
    _closed(project, "ne-t-coder-new-r0", 2)
    result = purge_expired(project.ledger, now=utcnow() + timedelta(days=400))  # even far in the future
    assert {p.node_exec_id for p in result.purged} == {"ne-t-coder-old-r0", "ne-t-coder-new-r0"}
    assert result.kept_open == 1 and running.log().status == "open"
    assert log_path(project.state_dir, running.nid).exists()
    _closed(project, "ne-t-coder-mid-r0", 2)
    set_retention(project.ledger, 3)
    assert purge_expired(project.ledger).kept_recent == 1  # 2 days old, kept 3


def test_cleanup_removes_a_symlinked_folder_not_its_target(project, tmp_path):
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "node.log").write_text("not ours")
    nid = "ne-t-coder-link-r0"
    _closed(project, nid, 5)
    folder = log_path(project.state_dir, nid).parent
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    folder.symlink_to(outside, target_is_directory=True)
    result = purge_expired(project.ledger, 1)
    assert [p.node_exec_id for p in result.purged] == [nid]
    assert not os.path.lexists(folder) and (outside / "node.log").read_text() == "not ours"


def test_cleanup_also_ages_out_files_no_record_names(project):
    import time

    root = project.state_dir / "logs"
    old, new = root / "console" / "run-1.log", root / "console" / "run-2.log"
    for path, age in ((old, 3), (new, 0)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("run log\n")
        os.utime(path, (time.time() - age * 86400,) * 2)
    _closed(project, "ne-t-coder-kept-r0", 0)  # a recent record's folder is not walked as untracked
    os.utime(log_path(project.state_dir, "ne-t-coder-kept-r0"), (time.time() - 9 * 86400,) * 2)
    result = purge_expired(project.ledger, 1)
    assert result.untracked_purged == ["logs/console/run-1.log"] and not old.exists() and new.exists()
    assert log_path(project.state_dir, "ne-t-coder-kept-r0").exists() and result.purged == []
    assert [e.ref for e in project.ledger.read("timeline") if e.event == "log_purged"] == ["logs/console/run-1.log"]
