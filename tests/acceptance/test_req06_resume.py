"""REQ-06: checkpoint resume after a real SIGKILL: finished nodes are not run again, a retrying node keeps its
attempt count, corrupt persisted state blocks the task instead of silently restarting."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import CALC, broken_mul, playbook_variant, turn

from graphlemon.models import NodeEvent, RunRecord, TaskEvent, TimelineEvent, UsageRecord
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system

GRAPHLEMON = [sys.executable, "-m", "graphlemon"]


def start(project, playbook: Path, engine: str, tmp_path: Path) -> subprocess.Popen:
    """`graphlemon run` in its own process group (its ephemeral Prefect server included)."""
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect-home")}
    return subprocess.Popen(
        [*GRAPHLEMON, "run", "Build calc", "--project", str(project.root), "--playbook", str(playbook),
         "--max-unit-attempts", "2", "--engine", engine, "--quiet"],  # fmt: skip
        env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def kill_when(proc: subprocess.Popen, ready, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"the run ended before the kill point: {proc.stderr.read()[-2000:]}"
        assert time.monotonic() < deadline, "the kill point never came"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole group: no orphaned Prefect server
    proc.wait()


def resume(project, task_id: str, engine: str, tmp_path: Path) -> dict:
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect-home")}
    out = subprocess.run([*GRAPHLEMON, "resume", task_id, "--project", str(project.root), "--engine", engine, "--json"],
                         env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert out.stdout.strip(), out.stderr[-3000:]
    return json.loads(out.stdout)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def task_id_of(project) -> str:
    return TaskBoard(project.ledger).list()[0].task_id


def run_of(cli, project) -> list:
    return [t["run"] for t in json.loads(cli("status", "--json", "--project", str(project.root)).stdout)["tasks"]]


def test_happy_killed_mid_run_resumes_without_redoing_finished_nodes(calc, tmp_path, cli):
    proc = start(calc, CALC / "playbook.yaml", "prefect", tmp_path)
    kill_when(proc, lambda: any(e.get("event") == "unit_green" for e in lines(calc.state_dir / "timeline.ndjson")))
    assert run_of(cli, calc) == ["interrupted"]  # `graphlemon status` tells a killed run from a live one
    before = calc.ledger.read_as("node", NodeEvent)
    finished = {e.node_exec_id for e in before if e.status == "done"}
    usage_before = len(calc.ledger.read_as("usage", UsageRecord))
    final = resume(calc, task_id_of(calc), "prefect", tmp_path)
    assert final["status"] == "done" and run_of(cli, calc) == [None]
    after = calc.ledger.read_as("node", NodeEvent)[len(before):]
    assert not [e for e in after if e.node_exec_id in finished], "a finished node ran again"
    usage = calc.ledger.read_as("usage", UsageRecord)
    assert len({u.call_id for u in usage}) == len(usage)
    assert len(usage) - usage_before <= 6  # only the turns that had not run: no tokens spent twice on finished nodes
    runs = Counter(r.run_id for r in calc.ledger.read_as("run", RunRecord))
    assert max(runs.values()) == 1  # no duplicate run records
    resumed = [e for e in calc.ledger.read_as("timeline", TimelineEvent) if e.event == "resumed"]
    assert len(resumed) == 1 and "interrupted run" in resumed[0].summary


def test_boundary_killed_while_retrying_resumes_the_retry_with_its_attempt_count(calc, tmp_path):
    playbook = playbook_variant(tmp_path, CALC, lambda d: broken_mul(d, attempts=(1,)))  # mul: red once, then fixed

    def retrying() -> bool:
        return any(e.get("unit_id") == "mul" and e.get("status") == "retrying" for e in lines(calc.state_dir / "nodes.ndjson"))

    proc = start(calc, playbook, "direct", tmp_path)
    kill_when(proc, retrying)
    paid_before = [u for u in calc.ledger.read_as("usage", UsageRecord) if u.role == "coder" and u.unit_id == "mul"]
    answered = [o for o in lines(calc.state_dir / "outcomes.ndjson")
                if o.get("name") == "a2-coder-answer" and o["node_exec_id"].endswith("-coder-mul-r0")]  # fmt: skip
    in_flight = len(paid_before) == 2 and not answered  # the kill landed inside attempt 2's call: its answer is lost
    final = resume(calc, task_id_of(calc), "direct", tmp_path)
    assert final["status"] == "done"
    mul = [e for e in calc.ledger.read_as("node", NodeEvent) if e.stage == "coder" and e.unit_id == "mul"]
    statuses = [(e.status, e.attempt) for e in mul]
    assert statuses[:3] == [("running", 1), ("reflecting", 1), ("retrying", 2)]
    assert statuses[-1] == ("done", 2) and ("running", 1) not in statuses[3:]  # the retry went on at attempt 2
    coder_mul_calls = [u for u in calc.ledger.read_as("usage", UsageRecord) if u.role == "coder" and u.unit_id == "mul"]
    assert len(coder_mul_calls) == 2 + in_flight  # attempt 1 once; attempt 2 once (again only if cut mid-call)


def test_failure_corrupt_persisted_state_blocks_the_task_instead_of_restarting(calc, tmp_path):
    proc = start(calc, CALC / "playbook.yaml", "direct", tmp_path)
    kill_when(proc, lambda: any(e.get("event") == "planned" for e in lines(calc.state_dir / "timeline.ndjson")))
    outcomes = calc.state_dir / "outcomes.ndjson"
    lines_ = outcomes.read_bytes().splitlines(keepends=True)
    [at] = [i for i, line in enumerate(lines_) if b"-planner-" in line]
    lines_[at] = b'{"ok": tru\n'  # the planner's outcome record damaged on disk (a whole line, not a torn tail)
    outcomes.write_bytes(b"".join(lines_))
    final = resume(calc, task_id_of(calc), "direct", tmp_path)
    assert final["status"] == "blocked_pending_human" and final["blocked_reason"] == "state_corrupt"
    assert f"{outcomes}:{at + 1}: not JSON" in final["note"]
    planner_runs = [e for e in calc.ledger.read_as("node", NodeEvent) if e.stage == "planner" and e.status == "running"]
    assert len(planner_runs) == 1  # never silently planned again
    blocked = [e for e in calc.ledger.read_as("task", TaskEvent) if e.status == "blocked_pending_human"]
    assert blocked[-1].blocked_reason == "state_corrupt"


def test_boundary_killed_before_the_loop_started_resumes_with_the_runs_settings(calc, tmp_path):
    """Killed while Prefect still imports (the task is queued, no node ran): the task's executor, playbook and limits
    were recorded with the task, so `resume` needs none of them again."""
    proc = start(calc, CALC / "playbook.yaml", "prefect", tmp_path)
    kill_when(proc, lambda: bool(calc.ledger.read_as("task", TaskEvent)))
    assert not calc.ledger.read_as("node", NodeEvent)  # killed before any stage
    final = resume(calc, task_id_of(calc), "direct", tmp_path)
    assert final["status"] == "done"


def with_integration_tests(data: dict) -> None:
    """The plan has an integration case and the integrator writes its test (which passes)."""
    turn(data, role="planner")["actions"][4] = {
        "write_file": {"path": ".graphlemon/plan/drafts/plan.json", "from_file": "files/plan/plan_with_integration.json"}
    }
    data["turns"].append({"match": {"role": "integrator"}, "usage": {"input_tokens": 2000, "output_tokens": 500},
                          "actions": [{"write_file": {"path": "tests/integration/test_integration.py", "from_file": "files/tests/test_integration.py"}}],
                          "output": {"tests": ["tests/integration/test_integration.py"]}})  # fmt: skip


def test_boundary_killed_while_the_integration_tests_run_resumes_without_asking_the_integrator_again(calc, tmp_path):
    """Killed after the integrator wrote the integration tests, while they run: its answer is recorded, so the
    resumed integration runs the tests it wrote and pays for no second integrator turn."""

    def integrator_answered() -> bool:
        return any(o.get("name") == "integrator-answer" for o in lines(calc.state_dir / "outcomes.ndjson"))

    proc = start(calc, playbook_variant(tmp_path, CALC, with_integration_tests), "direct", tmp_path)
    kill_when(proc, integrator_answered)
    integrations = [e for e in calc.ledger.read_as("node", NodeEvent) if e.stage == "integrator"]
    assert integrations[-1].status == "running"  # the kill landed inside the integration, after the answer
    final = resume(calc, task_id_of(calc), "direct", tmp_path)
    assert final["status"] == "done", final
    integrator_calls = [u for u in calc.ledger.read_as("usage", UsageRecord) if u.role == "integrator"]
    assert len(integrator_calls) == 1, [u.call_id for u in integrator_calls]
