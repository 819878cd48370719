"""Self-development (REQ-15): GraphLemon's own repository as a DevLoop project, deployed with no person.

`graphlemon deploy bootstrap` marks the repository self-hosted (project.json `settings.self_hosted`). There a
core_engine bug goes to the Coder (`routing.root_cause_route`), and a task the DevLoop finishes and merges into
the branch is deployed: `pending_self_deploy` says which merge commit, with the bootstrap's settings; the
Prefect layer runs it as the `deploy-supervisor` flow (flows/devloop.py; from a deployment run, in a detached
`graphlemon deploy merged TASK` process: `spawn_deploy`), the direct engine with `deploy_merged`.
Nothing here asks a person: the supervisor's health check, monitoring and rollback decide.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from pydantic import BaseModel

from ..errors import GraphLemonError
from ..ledger import Ledger
from ..models import TimelineEvent
from ..project import ProjectHandle, open_project
from ..taskboard import TaskBoard
from .deployments import Deployment, short
from .supervisor import DeployConfig, Supervisor

_CODE_ROOT = Path(__file__).resolve().parents[2]  # the running code's checkout: `-m graphlemon` imports this code


class SelfDeploy(BaseModel):
    """A merge the DevLoop left on GraphLemon's branch, to deploy: which commit, where, with which settings."""

    task_id: str
    commit: str
    root: str
    config: DeployConfig


def merged_commit(ledger: Ledger, task_id: str) -> str | None:
    """The commit the DevLoop's merge of `task_id` made (the ref of its `done` timeline event), or None: the task
    ended on its branch (merge_into_main off, the main worktree had uncommitted changes, or `merge_guard` held it)."""
    done = [e for e in ledger.read_as("timeline", TimelineEvent) if e.task_id == task_id and e.event == "done"]
    return done[-1].ref if done else None


def pending_self_deploy(handle: ProjectHandle, task_id: str) -> SelfDeploy | None:
    """The deploy a finished task of a self-hosted project is owed, or None (`why_no_deploy` says why)."""
    target, _ = _decide(handle, task_id)
    return target


def why_no_deploy(handle: ProjectHandle, task_id: str) -> str | None:
    """Why the task is owed no deploy, in words; None when it is owed one."""
    return _decide(handle, task_id)[1] or None


def _decide(handle: ProjectHandle, task_id: str) -> tuple[SelfDeploy | None, str]:
    task = TaskBoard(handle.ledger).get(task_id)  # an unknown id is TASK_NOT_FOUND, whatever the project
    settings = open_project(handle.root).meta.settings  # fresh: bootstrap may have run after the handle was opened
    if not settings.self_hosted:
        return None, "the project is not self-hosted (GraphLemon's own repository runs `graphlemon deploy bootstrap`)"
    if task.status != "done":
        return None, f"task {task_id} is {task.status}, not done"
    commit = merged_commit(handle.ledger, task_id)
    if commit is None:
        return None, f"task {task_id} was not merged into the branch (it ended on its integration branch)"
    sup = Supervisor(handle, root=settings.deploy_root)
    state = sup.state()
    if state.live is None:
        return None, "no live instance to replace (run `graphlemon deploy bootstrap COMMIT`)"
    if state.live.commit == commit:
        return None, f"{short(commit)} is already live"
    done = next((d for d in sup.book.all().values() if d.commit == commit), None)
    if done is not None:  # a replayed run deploys once
        return None, f"{short(commit)} was deployed already ({done.deployment_id}: {done.status})"
    return SelfDeploy(task_id=task_id, commit=commit, root=str(sup.root), config=state.config or DeployConfig()), ""


def spawn_deploy(handle: ProjectHandle, task_id: str) -> tuple[int, Path]:
    """`graphlemon deploy merged TASK_ID` as a detached process in its own session, logging to
    `.graphlemon/logs/deploy/<task>.log`: for a run inside an instance's own worker, which finalize stops (a
    process group the deploy must not be part of). -> (PID, log)."""
    logs = handle.state_dir / "logs" / "deploy"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{task_id}.log"
    cmd = [sys.executable, "-m", "graphlemon", "deploy", "merged", task_id, "--project", str(handle.root)]
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, cwd=_CODE_ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
    threading.Thread(target=proc.wait, daemon=True).start()  # reaped when it ends (no zombie)
    summary = f"deploying the merge in a detached process (PID {proc.pid}, log {log.relative_to(handle.state_dir)})"
    handle.ledger.append(TimelineEvent(event="deploy_started", task_id=task_id, ref=str(proc.pid), summary=summary))
    return proc.pid, log


def record_deploy(ledger: Ledger, task_id: str, commit: str, dep: Deployment | None, error: str | None = None) -> None:
    """The task's timeline says what became of its merge: deployed (finalized), rolled back, or refused."""
    if dep is not None:
        summary = f"deployment {dep.deployment_id} of the merge {short(commit)}: {dep.status}"
        ledger.append(TimelineEvent(event="deployed", task_id=task_id, ref=dep.deployment_id, summary=summary))
    else:
        summary = f"the merge {short(commit)} was not deployed: {error or 'no deployment'}"
        ledger.append(TimelineEvent(event="deploy_refused", task_id=task_id, ref=commit, summary=summary[:2000]))


def deploy_merged(handle: ProjectHandle, task_id: str) -> Deployment | None:
    """The direct engine's step after a task: the whole blue-green run of its merge in this process, or None."""
    target = pending_self_deploy(handle, task_id)
    if target is None:
        return None
    sup = Supervisor(handle, target.config, target.root)
    try:
        dep = sup.deploy(target.commit, task_id=task_id)
    except GraphLemonError as exc:  # e.g. another deployment still runs: the task stays done, the refusal is told
        record_deploy(handle.ledger, task_id, target.commit, None, f"{exc.code}: {exc.message}")
        raise
    record_deploy(handle.ledger, task_id, target.commit, dep)
    return dep
