"""Self-development (REQ-15): GraphLemon's own repository as a DevLoop project, deployed with no person.

`graphlemon deploy bootstrap` marks the repository self-hosted (project.json `settings.self_hosted`). There a
core_engine bug goes to the Coder (`routing.root_cause_route`), and a task the DevLoop finishes and merges into
the branch is deployed: `pending_self_deploy` says which merge commit, with the bootstrap's settings; the
Prefect layer runs it as the `deploy-supervisor` flow (flows/devloop.py), the direct engine with `deploy_merged`.
Nothing here asks a person: the supervisor's health check, monitoring and rollback decide.
"""

from __future__ import annotations

from pydantic import BaseModel

from ..errors import GraphLemonError
from ..ledger import Ledger
from ..models import TimelineEvent
from ..project import ProjectHandle, open_project
from ..taskboard import TaskBoard
from .deployments import Deployment, short
from .supervisor import DeployConfig, Supervisor


class SelfDeploy(BaseModel):
    """A merge the DevLoop left on GraphLemon's branch, to deploy: which commit, where, with which settings."""

    task_id: str
    commit: str
    root: str
    config: DeployConfig


def merged_commit(ledger: Ledger, task_id: str) -> str | None:
    """The commit the DevLoop's merge of `task_id` made (the ref of its `done` timeline event), or None: the task
    ended on its branch (merge_into_main off, or the main worktree had uncommitted changes)."""
    done = [e for e in ledger.read_as("timeline", TimelineEvent) if e.task_id == task_id and e.event == "done"]
    return done[-1].ref if done else None


def pending_self_deploy(handle: ProjectHandle, task_id: str) -> SelfDeploy | None:
    """The deploy a finished task of a self-hosted project is owed, or None (not self-hosted, not done, not merged,
    no live instance to replace, or that commit is live or was deployed already: a replayed run deploys once)."""
    settings = open_project(handle.root).meta.settings  # fresh: bootstrap may have run after the handle was opened
    if not settings.self_hosted:
        return None
    task = TaskBoard(handle.ledger).get(task_id)
    commit = merged_commit(handle.ledger, task_id) if task.status == "done" else None
    if commit is None:
        return None
    sup = Supervisor(handle, root=settings.deploy_root)
    state = sup.state()
    if state.live is None or state.live.commit == commit:
        return None
    if any(d.commit == commit for d in sup.book.all().values()):
        return None
    return SelfDeploy(task_id=task_id, commit=commit, root=str(sup.root), config=state.config or DeployConfig())


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
