"""T2: nothing a claude_code turn started outlives it, however the turn ends (testrun/sandbox_end.py).

Each turn runs the real fake `claude` in the real sandbox; before it ends, its Bash step starts a grandchild that
detaches itself (`setsid -f`: a double fork into a new session, its own process group, its parent gone) with a
marker of the test's own in its argv. After the turn returns (or raises) no process may carry the marker, and
none may name the test's folder in its command line (the fake, bwrap, the egress bridge).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from fakes.claude import bash, crash, denials, hang, success, when

from graphlemon.agents import Limits, build_executor
from graphlemon.agents.claude_code import PROBE_PROMPT
from graphlemon.errors import BudgetExceeded, ClassifierBlocked, GraphLemonError
from graphlemon.models import BudgetConfig


def _detach(marker: str) -> dict:
    """A Bash step that leaves a detached grandchild behind (its output closed: the step itself returns)."""
    return {"bash": f"setsid -f sh -c 'sleep 600; : {marker}' </dev/null >/dev/null 2>&1; echo started"}


def _with_detached(behaviour: dict, marker: str) -> dict:
    return {**behaviour, "steps": [_detach(marker), *behaviour["steps"]]}


def _running(needle: str) -> list[str]:
    """The command lines of live processes (zombies aside) that contain `needle`."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path("/proc", entry, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path("/proc", entry, "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if needle in cmdline and state != "Z":
            out.append(f"{entry}: {cmdline[:200]}")
    return out


def _ending(project, kind: str, marker: str):
    """(the behaviour, the turn's kwargs, the error it raises or None) for a turn that ends as `kind` says."""
    if kind == "exit":
        return bash(_detach(marker)["bash"]), {}, None
    if kind == "crash":
        return _with_detached(crash(2, "Error: boom"), marker), {}, GraphLemonError
    if kind == "denials":
        return _with_detached(denials(3), marker), {"task_id": "task-d"}, ClassifierBlocked
    if kind == "budget":
        project.ledger.append(BudgetConfig(task_id="task-b", limit_type="token_count", limit_value=2000))
        turn = success(texts=["a", "b", "c"], usage={"input_tokens": 1000, "output_tokens": 500})
        return _with_detached(turn, marker), {"task_id": "task-b"}, BudgetExceeded
    assert kind == "timeout"
    return _with_detached(hang(60), marker), {"limits": Limits(timeout_s=3.0)}, None


@pytest.mark.system
@pytest.mark.parametrize("kind", ["exit", "crash", "denials", "budget", "timeout"])
def test_no_process_of_a_turn_outlives_it_however_it_ends(
    project, fake_claude, claude_settings, turn, tmp_path, kind
):
    marker = f"graphlemon-turn-end-{uuid.uuid4().hex}"
    behaviour, kwargs, raises = _ending(project, kind, marker)
    fake_claude.queue(behaviour)
    executor = build_executor("claude_code", settings=claude_settings)
    if raises is None:
        turn(executor, "coder", **kwargs)
    else:
        with pytest.raises(raises):
            turn(executor, "coder", **kwargs)
    assert fake_claude.bash_outputs == ["started\n"]  # the detached grandchild was started inside the sandbox
    assert _running(marker) == []
    assert _running(str(tmp_path)) == []


@pytest.mark.system
def test_the_quota_probe_leaves_no_process_either(fake_claude, claude_settings, tmp_path):
    marker = f"graphlemon-probe-end-{uuid.uuid4().hex}"
    fake_claude.queue(when(bash(_detach(marker)["bash"], result="ok"), stdin=PROBE_PROMPT))
    assert build_executor("claude_code", settings=claude_settings).probe("claude-sonnet-4-5") is True
    assert fake_claude.bash_outputs == ["started\n"]
    assert _running(marker) == []
    assert _running(str(tmp_path)) == []
