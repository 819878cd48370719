"""REQ-13 on the demo run (the session's snake run through Prefect): every node execution has its
execution_log_file record and a log that says what the node did, closed when the node ended."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from graphlemon.execlogs import NodeLogs, log_path
from graphlemon.nodes import NodeTracker

pytestmark = pytest.mark.system


def test_every_node_of_the_demo_run_has_a_closed_log_that_says_what_it_did(snake_run):
    project, final = snake_run
    nodes = NodeTracker(project.ledger).all()
    logs = NodeLogs(project.ledger).all()
    assert nodes and set(logs) == set(nodes)  # one record per work_node_execution, no more
    stages = {n.stage for n in nodes.values()}
    assert {"planner", "coder", "validator"} <= stages
    texts = {}
    for nid, node in nodes.items():
        log = logs[nid]
        assert log.status == "closed", (nid, node.status, log.status)  # every node of a finished run has ended
        text = log_path(project.state_dir, nid).read_text()
        assert (log.size_bytes, log.line_count) == (len(text.encode()), text.count("\n"))
        heads = [line for line in text.splitlines() if not line.startswith("    ")]  # not continuation lines
        assert f"[node] {node.stage} {nid} attempt " in heads[0] and heads[0].endswith(": running"), heads[0]
        assert heads[-1].endswith(f": {node.status}") or f": {node.status} (" in heads[-1], heads[-1]
        texts[nid] = text
    for nid, node in nodes.items():
        if node.stage in ("planner", "coder"):
            assert "[agent] " in texts[nid] and " turn_start " in texts[nid] and " turn_end " in texts[nid], nid
        if node.stage == "coder":  # the tester's turns and test runs inside the L1 node
            assert "[agent] tester " in texts[nid] and "[tests] unit tests: $ " in texts[nid], nid
        if node.stage == "validator":
            assert "[tests] validation run: " in texts[nid]
        if node.stage == "integrator":
            assert "[tests] integration cases: " in texts[nid]
    listed = subprocess.run([sys.executable, "-m", "graphlemon", "logs", "--task", final["task_id"], "--json",
                             "--project", str(project.root)], capture_output=True, text=True, check=True)  # fmt: skip
    rows = json.loads(listed.stdout)["logs"]
    assert {r["node_exec_id"] for r in rows} == {n for n, v in nodes.items() if v.task_id == final["task_id"]}
