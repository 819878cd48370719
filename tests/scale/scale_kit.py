"""Shared by the scale tests and benchmarks/bench_scale.py: fixture projects with a bare git remote, a direct
run of a goal (in-process units, or units isolated as on a remote worker), and a ledger compared ignoring ids,
times and sizes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

from graphlemon.devloop.driver import DirectEngine, drive
from graphlemon.devloop.remote_unit import FolderStore, IsolatedUnits
from graphlemon.devloop.stages import Stages
from graphlemon.project import init_project, update_settings
from graphlemon.stages.session import LoopSession
from graphlemon.taskboard import TaskBoard

ROOT = Path(__file__).resolve().parents[2]
CALC = ROOT / "tests" / "acceptance" / "fixtures" / "calc"
SNAKE = ROOT / "examples" / "snake"
VARYING = {
    "ts",
    "duration_ms",
    "size_bytes",
    "sha256",
    "line_count",
    "started",
    "finished",
    "latency_ms",
    "flow_run_id",
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def make_project(dest: Path, fixture: Path = CALC, *, remote: bool = True):
    """A fixture repository, committed and `graphlemon init`ed; with a bare remote beside it (`<dest>.git`) named
    in the project's settings."""
    shutil.copytree(fixture / "repo", dest)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "fixture"]):
        git(dest, *args)
    handle = init_project(dest).project
    if remote:
        bare = dest.with_name(dest.name + ".git")
        git(dest.parent, "init", "-q", "--bare", str(bare))
        update_settings(handle, git_remote=bare.as_uri())
    return handle


class IsolatedEngine(DirectEngine):
    """The direct engine whose unit loops take the remote path in this process."""

    def __init__(self, store: Path, scratch: Path) -> None:
        super().__init__()
        self.store, self.scratch = store, scratch

    def stages(self, session):
        return Stages(session.run, IsolatedUnits(FolderStore(self.store), self.scratch))


def run_goal(handle, fixture: Path = CALC, engine=None, **config):
    task = TaskBoard(handle.ledger).create(f"goal of {fixture.name}")
    session = LoopSession.start(handle, task.task_id, executor="scripted", playbook=fixture / "playbook.yaml",
                                max_unit_attempts=2, **config)  # fmt: skip
    with session.bound():
        return drive(session, engine or DirectEngine())


def ledger_view(state_dir: Path) -> dict[str, Counter]:
    """Each ledger file as a multiset of its records without ids, times and sizes (units of a wave interleave
    in any order, in one process as on workers); the task's leases, which name the processes that ran it, apart."""
    state_dir = Path(state_dir)
    task_ids = {json.loads(line)["task_id"] for line in (state_dir / "tasks.ndjson").read_text().splitlines()}
    view = {}
    for path in sorted(state_dir.glob("*.ndjson")):
        if path.name == "leases.ndjson":  # who ran the task (a flow run, this process): never the same twice
            continue
        records = Counter()
        for line in path.read_text().splitlines():
            data = {k: v for k, v in json.loads(line).items() if k not in VARYING}
            text = json.dumps(_without(data), sort_keys=True)
            for task_id in task_ids:
                text = text.replace(task_id, "<task>")
            records[re.sub(r"\b[0-9a-f]{6,64}\b", "<id>", text)] += 1
        view[path.name] = records
    return view


def _without(value):
    if isinstance(value, dict):
        return {k: _without(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [_without(v) for v in value]
    return value


def tree(handle) -> str:
    return git(handle.root, "rev-parse", "HEAD^{tree}")
