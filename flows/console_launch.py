"""The console's way into Prefect: is the devloop deployment there, and start a run of it (without waiting).

`graphlemon.console.launch` decides *whether* a goal runs as a deployment run or a local process; the calls that
talk to Prefect live here, in the Prefect layer (the domain never imports Prefect).
"""

from __future__ import annotations

from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment
from prefect.exceptions import ObjectNotFound
from prefect.settings import PREFECT_API_URL, temporary_settings

from graphlemon.errors import ErrorCode, GraphLemonError


def deployment_exists(name: str, api_url: str) -> bool:
    """Whether `name` is deployed on the API at `api_url`; an API that does not answer is EXECUTOR_ERROR (never a
    silent local run instead)."""
    try:
        with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
            client.read_deployment_by_name(name)
        return True
    except ObjectNotFound:
        return False
    except Exception as exc:  # noqa: BLE001 - whatever the transport said, the API did not answer
        raise GraphLemonError(
            ErrorCode.EXECUTOR_ERROR,
            f"the Prefect API at {api_url} did not answer ({exc}); start it, or unset PREFECT_API_URL to run goals "
            "as local processes",
        ) from None


def start_devloop_run(name: str, handle, request) -> str:
    """A run of the deployment `name` for a new task of the console's `request` (launch.GoalRequest), left to its
    worker; its flow run id. The task is created first, as `graphlemon run` does, so the run is created with its
    final name (`devloop · goal · task-…`) instead of a random one its flow renames when a worker starts it. The
    console holds the task's lease from its creation and hands it to the flow run (held for it until it starts:
    nothing else can start the task meanwhile). A run that cannot be created abandons the task it was for (nothing
    else was written)."""
    from graphlemon.agents.budget import update_budget
    from graphlemon.lease import Holder, held
    from graphlemon.taskboard import TaskBoard

    from .devloop import _apply_budget_block
    from .run_names import devloop_run_name

    board = TaskBoard(handle.ledger)
    task = board.create(request.goal)
    params = {"goal": request.goal, "project": str(handle.root), "executor": request.executor,
              "playbook": str(request.playbook) if request.playbook else None, "task_id": task.task_id}  # fmt: skip
    run_name = devloop_run_name(task.goal_text, task.task_id)
    with held(handle.ledger, task.task_id, Holder.here("console: new goal (deployment run)"),
              status=lambda: board.get(task.task_id).status) as lease:  # fmt: skip
        try:
            if request.budget_tokens is not None:
                update_budget(handle.ledger, task.task_id, request.budget_tokens, "token_count", by="console")
            else:
                _apply_budget_block(handle, task.task_id, "default")  # what the flow gives a task it creates itself
            run = run_deployment(name, parameters=params, timeout=0, flow_run_name=run_name)
        except BaseException as exc:
            board.transition(task.task_id, "abandoned", note=f"its deployment run was not created: {exc}"[:500],
                             by="console")  # fmt: skip
            raise
        lease.hand(Holder(label=f"Prefect flow run {run_name}", flow_run_id=str(run.id)))
    return str(run.id)
