"""Prefect flow `deploy-supervisor` (REQ-15, p_deploy_supervisor_blue_green): deploy one merged commit of
GraphLemon itself — stage, health check (endpoint + canary task), cutover, monitoring window, finalize — or roll
back (path A before cutover, path B after). A thin wrapper: the decisions are in graphlemon/deploy/."""

from __future__ import annotations

from prefect import flow

from graphlemon.deploy.deployments import DeploymentBook
from graphlemon.deploy.self_deploy import pending_self_deploy, record_deploy
from graphlemon.deploy.supervisor import DeployConfig
from graphlemon.errors import GraphLemonError
from graphlemon.flows._params import project_dir
from graphlemon.project import ProjectHandle, open_project
from graphlemon.tasks._common import artifact_key
from graphlemon.tasks._redacted_artifacts import create_markdown_artifact
from graphlemon.tasks.deploy import cutover_task, health_check_task, monitor_task, rollback_task, stage_task


@flow(name="deploy-supervisor", log_prints=True)
def deploy_supervisor(commit: str, project: str | None = None, root: str | None = None,
                      config: dict | None = None, task_id: str | None = None) -> dict:  # fmt: skip
    """Blue-green deploy `commit` of GraphLemon's repository (`project`: that repository, GraphLemon's own;
    `task_id`: the DevLoop task whose merge it is, when the devloop flow starts this one as its last step)."""
    chosen = project_dir(project)
    handle = open_project(chosen)
    root = root or str(handle.state_dir / "deploy")
    config = DeployConfig.model_validate(config or {}).model_dump(mode="json")
    dep = stage_task(chosen, root, config, commit, task_id)
    dep = health_check_task(chosen, root, config, dep["deployment_id"])
    if dep["status"] == "health_check_passed":
        dep = cutover_task(chosen, root, config, dep["deployment_id"])
        if dep["status"] == "live":
            dep = monitor_task(chosen, root, config, dep["deployment_id"])
    if dep["status"] in ("health_check_failed", "anomaly_detected"):
        dep = rollback_task(chosen, root, config, dep["deployment_id"])
    lines = [f"- `{e['status']}` {e.get('note') or ''}" for e in dep["timeline"]]
    summary = f"Deployment {dep['deployment_id']} of {dep['commit'][:12]}: **{dep['status']}**"
    create_markdown_artifact(markdown=summary + "\n\n" + "\n".join(lines),
                             key=artifact_key(handle.project_id, "deploy"))  # fmt: skip
    print(summary)
    return dep


def deploy_merge(handle: ProjectHandle, task_id: str) -> dict | None:
    """GraphLemon's own repository: run this flow for the merge the finished task `task_id` left, with the
    bootstrap's settings, and tell the task's timeline what became of it; None when it is owed no deploy."""
    target = pending_self_deploy(handle, task_id)
    if target is None:
        return None
    try:
        result = deploy_supervisor(commit=target.commit, project=str(handle.root), root=target.root,
                                   config=target.config.model_dump(mode="json"), task_id=task_id)  # fmt: skip
    except GraphLemonError as exc:  # refused (e.g. another deployment still runs)
        record_deploy(handle.ledger, task_id, target.commit, None, f"{exc.code}: {exc.message}")
        raise
    record_deploy(handle.ledger, task_id, target.commit, DeploymentBook(handle.ledger).get(result["deployment_id"]))
    return result
