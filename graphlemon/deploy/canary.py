"""The canary task of a health check: the scripted snake demo (`make demo`) on a temp repository, run by the
candidate's own code (its checkout first on PYTHONPATH). It must end `done` with the demo's expected bugs: the
planted wall bug found by the tester, attributed to the coder by the validator, fixed and verified."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from .. import gitrun
from ..bugs import BugTracker
from ..ledger import Ledger
from ..models import TaskEvent
from .instances import GIT_ID, instance_env

GOAL = "Implement a snake game"
# prefect: a `devloop` flow run (against PREFECT_API_URL when set, else an ephemeral server: slow to start);
# direct: the same loop without Prefect (the candidate's domain code only)
CanaryEngine = Literal["prefect", "direct"]
# what the canary exercises: a commit that leaves these trees as they were behaves as the one that passed
CODE_PATHS = ("graphlemon", "flows", "tasks", "examples/snake")


class CanaryExpectation(BaseModel):
    task_status: str = "done"
    attributed: set[tuple[str, str]] = Field(default_factory=lambda: {("collision", "coder")})  # (unit, root cause)
    bug_status: str = "verified"  # every bug the run opened ends here


class CanaryResult(BaseModel):
    ok: bool
    detail: str
    task_status: str | None = None
    bugs: list[str] = Field(default_factory=list)
    duration_ms: int = 0
    workdir: str = ""


def run_canary(instance_dir: Path, *, env: dict[str, str] | None = None, timeout: float = 600,
               expect: CanaryExpectation | None = None, engine: CanaryEngine = "prefect",
               keep: bool = False) -> CanaryResult:  # fmt: skip
    expect = expect or CanaryExpectation()
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="graphlemon-canary-"))
    try:
        result = _run(instance_dir, work, env or {}, timeout, expect, engine)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    result.duration_ms = int((time.monotonic() - started) * 1000)
    return result


def _run(instance_dir: Path, work: Path, env: dict[str, str], timeout: float, expect: CanaryExpectation,
         engine: CanaryEngine) -> CanaryResult:
    snake = instance_dir / "examples" / "snake"
    repo = work / "snake"
    shutil.copytree(snake / "repo", repo)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "empty snake package"]):
        gitrun.git(repo, *GIT_ID, *args)
    run_env = instance_env(instance_dir, {"PREFECT_HOME": str(work / "prefect"), **env})
    graphlemon = [sys.executable, "-m", "graphlemon"]
    engine_args = ["--engine", engine]
    steps = [
        [*graphlemon, "init", str(repo)],
        [*graphlemon, "run", GOAL, "--project", str(repo), "--executor", "scripted",
         "--playbook", str(snake / "playbook.yaml"), "--max-unit-attempts", "2", "--quiet", *engine_args],
    ]  # fmt: skip
    log = work / "canary.log"
    deadline = time.monotonic() + timeout
    for step in steps:
        with open(log, "ab") as out:
            try:
                proc = subprocess.run(step, cwd=instance_dir, env=run_env, stdout=out, stderr=subprocess.STDOUT,
                                      timeout=max(1.0, deadline - time.monotonic()), start_new_session=True)  # fmt: skip
            except subprocess.TimeoutExpired:
                return CanaryResult(ok=False, detail=f"canary timed out after {timeout:g} s", workdir=str(work))
        if proc.returncode != 0 and step[3] == "init":
            return CanaryResult(ok=False, detail=f"graphlemon init exited {proc.returncode}: {_tail(log)}",
                                workdir=str(work))  # fmt: skip
    return judge(Ledger(repo / ".graphlemon"), expect, work, _tail(log))


def judge(ledger: Ledger, expect: CanaryExpectation, work: Path, log_tail: str = "") -> CanaryResult:
    """Compare what the canary run left in its ledger with what the demo must give."""
    tasks = ledger.read_as("task", TaskEvent)
    status = tasks[-1].status if tasks else None
    bugs = list(BugTracker(ledger).all().values())
    attributed = {(b.unit_id or "", b.root_cause_category) for b in bugs if b.root_cause_category}
    described = [f"{b.bug_id} {b.unit_id}:{b.test_name} {b.status} {b.root_cause_category or '-'}" for b in bugs]
    problems = []
    if status != expect.task_status:
        problems.append(f"task ended {status!r}, expected {expect.task_status!r}")
    if attributed != expect.attributed:
        problems.append(f"attributed bugs {sorted(attributed)}, expected {sorted(expect.attributed)}")
    if not bugs or any(b.status != expect.bug_status for b in bugs):
        problems.append(f"bugs {described or 'none'}, expected all {expect.bug_status}")
    if problems and log_tail:
        problems.append(f"log: {log_tail}")
    detail = "; ".join(problems) if problems else f"task done, bugs as expected: {', '.join(described)}"
    return CanaryResult(ok=not problems, detail=detail, task_status=status, bugs=described, workdir=str(work))


def _tail(log: Path, chars: int = 400) -> str:
    """What a note can carry from the canary's output: its `error[CODE]` lines if it printed any, else its last
    lines of words — never the frames of a terminal table (box-drawing rows, padding) cut mid-row."""
    if not log.exists():
        return ""
    return note_lines(log.read_text(errors="replace"), chars)


def note_lines(output: str, chars: int = 400, last: int = 4) -> str:
    lines = [" ".join("".join(c for c in raw if not _BOX <= ord(c) <= _BOX_END).split()) for raw in output.splitlines()]
    words = [line for line in lines if any(c.isalnum() for c in line)]
    errors = [line for line in words if line.startswith("error[")]
    text = " | ".join(errors[-2:] if errors else words[-last:])
    return text if len(text) <= chars else "…" + text[-chars:]


_BOX, _BOX_END = 0x2500, 0x259F  # box drawing and block elements: the frames of a table
