"""Prefect tasks of the deploy supervisor (REQ-15): one domain call each (graphlemon/deploy/supervisor.py).

No retries: a failed health check is a result (path A, never retried), and a proxy switch is not repeated
blindly. Nothing is cached: the ledger's deployment records are the record of progress.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from graphlemon.deploy.supervisor import DeployConfig, Supervisor
from graphlemon.project import open_project


def supervisor(project: str, root: str, config: dict) -> Supervisor:
    return Supervisor(open_project(project), DeployConfig.model_validate(config), root)


@task(name="c-deploy-supervisor-stage", cache_policy=NO_CACHE, persist_result=False)
def stage_task(project: str, root: str, config: dict, commit: str, task_id: str | None = None) -> dict:
    return supervisor(project, root, config).stage(commit, task_id=task_id).model_dump(mode="json")


@task(name="c-deploy-supervisor-health-check", cache_policy=NO_CACHE, persist_result=False)
def health_check_task(project: str, root: str, config: dict, deployment_id: str) -> dict:
    return supervisor(project, root, config).health_check(deployment_id).model_dump(mode="json")


@task(name="c-deploy-supervisor-cutover", cache_policy=NO_CACHE, persist_result=False)
def cutover_task(project: str, root: str, config: dict, deployment_id: str) -> dict:
    return supervisor(project, root, config).cutover(deployment_id).model_dump(mode="json")


@task(name="c-deploy-supervisor-monitor", cache_policy=NO_CACHE, persist_result=False)
def monitor_task(project: str, root: str, config: dict, deployment_id: str) -> dict:
    return supervisor(project, root, config).monitor(deployment_id).model_dump(mode="json")


@task(name="c-deploy-supervisor-rollback", cache_policy=NO_CACHE, persist_result=False)
def rollback_task(project: str, root: str, config: dict, deployment_id: str) -> dict:
    return supervisor(project, root, config).rollback(deployment_id).model_dump(mode="json")
