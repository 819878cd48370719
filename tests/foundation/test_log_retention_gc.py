"""Execution logs and what is left of them (REQ-13, docs/logs.md): a purge takes the turns' transcript folders
with the node's log, a partial purge records the bytes still on disk, `graphlemon gc` closes the logs a killed run
left open, and `graphlemon gc --retention` runs retention now. Real files, a real ledger, the CLI as a process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from datetime import timedelta

import pytest

from graphlemon.execlogs import NodeLogs, log_path
from graphlemon.execlogs.retention import purge_expired
from graphlemon.lease import Holder, take
from graphlemon.models import ExecutionLogEvent, utcnow
from graphlemon.nodes import NodeTracker

NODE = "ne-t1-coder-add-r0"


def _node_with_turns(project, nid: str = NODE, task: str = "t1") -> list:
    """A coder node that ran (log opened, closed), with the folders of a tester turn and a replay inside it."""
    nodes = NodeTracker(project.ledger)
    nodes.transition(nid, "running", task_id=task, stage="coder", unit_id="add", loop_round=0, attempt=1)
    turns = [project.state_dir / "logs" / f"{nid}-tester-a1", project.state_dir / "logs" / f"{nid}-replay-add-a2"]
    for folder in turns:
        folder.mkdir(parents=True)
        (folder / "tester-a1-scripted.ndjson").write_text('{"event": "turn_start"}\n' * 100)
    nodes.transition(nid, "done")
    return turns


def _age(project, nid: str, days: int) -> None:
    """The log closed `days` ago (the record's timestamp, as retention reads it)."""
    old = utcnow() - timedelta(days=days)
    project.ledger.append(ExecutionLogEvent(node_exec_id=nid, status="open", from_status="closed", ts=old,
                                            path=f"logs/{nid}/node.log", task_id="t1"))  # fmt: skip
    project.ledger.append(ExecutionLogEvent(node_exec_id=nid, status="closed", from_status="open", ts=old,
                                            path=f"logs/{nid}/node.log", size_bytes=1, line_count=1))  # fmt: skip


@pytest.mark.system
def test_gc_retention_purges_a_node_with_its_turns_transcript_folders(project, cli):
    turns = _node_with_turns(project)
    other = project.state_dir / "logs" / "ne-t1-coder-add-r0x-tester-a1"  # not inside the node: another name
    other.mkdir()
    (other / "t.ndjson").write_text("{}\n")
    _age(project, NODE, 3)
    out = cli("gc", "--retention", "--days", "2", "-p", str(project.root))
    assert out.returncode == 0, out.stderr
    assert "log retention (2 d): 1 purged, 0 failed" in out.stdout
    assert not log_path(project.state_dir, NODE).parent.exists() and not any(t.exists() for t in turns)
    assert other.exists()
    assert NodeLogs(project.ledger).find(NODE).status == "purged"
    [purged] = [e for e in project.ledger.read("log") if e.node_exec_id == NODE and e.status == "purged"]
    assert purged.size_bytes > 2 * 100 * len('{"event": "turn_start"}\n')  # the turns' transcripts counted
    [event] = [e for e in project.ledger.read("timeline") if e.event == "log_retention"]
    assert "1 purged" in event.summary
    for bad in ("0", "abc", "1.5", "-3"):
        refused = cli("gc", "--retention", "--days", bad, "-p", str(project.root))
        assert refused.returncode == 2 and refused.stderr.startswith("error[INVALID_PARAM]")
    assert cli("gc", "--days", "3", "-p", str(project.root)).returncode == 2


@pytest.mark.system
def test_a_partial_purge_records_the_bytes_left_and_is_retried(project):
    turns = _node_with_turns(project)
    pinned = turns[1] / "tester-a1-scripted.ndjson"
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(pinned)]).returncode != 0:
        pytest.skip("no immutable flag on this file system")
    try:
        result = purge_expired(project.ledger, 1, now=utcnow() + timedelta(days=2))
        [failed] = result.failed
        assert failed.left_bytes == pinned.stat().st_size and failed.size_bytes > 0  # the rest was deleted
        record = NodeLogs(project.ledger).find(NODE)
        assert record.status == "purge_failed" and record.size_bytes == pinned.stat().st_size
        assert "Operation not permitted" in record.error
    finally:
        subprocess.run(["chattr", "-i", str(pinned)], check=True)
    again = purge_expired(project.ledger, 1, now=utcnow() + timedelta(days=2))
    assert [p.node_exec_id for p in again.purged] == [NODE] and not turns[1].exists()


@pytest.mark.system
def test_gc_closes_the_logs_a_killed_run_left_open_and_only_those(project, cli):
    nodes = NodeTracker(project.ledger)
    for nid, task in (("ne-t1-coder-add-r0", "t1"), ("ne-t2-coder-add-r0", "t2"), ("ne-t3-coder-add-r0", "t3")):
        nodes.transition(nid, "running", task_id=task, stage="coder", unit_id="add", loop_round=0, attempt=1)
    stale = time.time() - 3600
    for nid in ("ne-t1-coder-add-r0", "ne-t2-coder-add-r0"):  # t1: killed; t2: a live run (this process) holds it
        os.utime(log_path(project.state_dir, nid), (stale, stale))
    take(project.ledger, "t2", Holder.here("a live run (this test)"))
    # t3: no run either, but written a moment ago: not taken for abandoned yet

    dry = cli("gc", "--dry-run", "--json", "-p", str(project.root))
    planned = [i for i in json.loads(dry.stdout)["items"] if i["action"] == "close_log"]
    assert [i["target"] for i in planned] == ["ne-t1-coder-add-r0"]
    assert NodeLogs(project.ledger).find("ne-t1-coder-add-r0").status == "open"  # a dry run changes nothing

    out = cli("gc", "-p", str(project.root))
    assert out.returncode == 0 and "closed the execution log of ne-t1-coder-add-r0 (no live run" in out.stdout
    logs = NodeLogs(project.ledger)
    closed = logs.find("ne-t1-coder-add-r0")
    assert closed.status == "closed" and closed.line_count == 2 and closed.size_bytes > 0
    last = log_path(project.state_dir, "ne-t1-coder-add-r0").read_text().splitlines()[-1]
    assert "closed by graphlemon gc" in last
    assert [logs.find(n).status for n in ("ne-t2-coder-add-r0", "ne-t3-coder-add-r0")] == ["open", "open"]
    # closed, it ages out like any other; a resumed node reopens it and appends
    nodes.transition("ne-t1-coder-add-r0", "reflecting", error="resumed after an interruption")
    assert logs.find("ne-t1-coder-add-r0").status == "open"
