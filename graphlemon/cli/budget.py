"""`graphlemon budget set|show`: a task's budget guardrail (REQ-10, c_budget_config_update / v_budget_settings)."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import JsonOpt, ProjectOpt, console, emit_json, open_project

app = typer.Typer(help="Per-task budgets (token_count or cost_usd), checked before every model call.",
                  no_args_is_help=True)  # fmt: skip

TaskArg = Annotated[str, typer.Argument(help="The task, e.g. task-20260101-120000-ab12 (or a unique prefix).")]


@app.command("set")
def set_(
    task_id: TaskArg,
    limit: Annotated[float, typer.Option("--limit", help="Tokens (a whole number) or US dollars.")],
    limit_type: Annotated[str, typer.Option("--type", help="token_count or cost_usd.")] = "token_count",
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Set (raise or lower) a task's budget. A task blocked by its budget that now has room is queued again, and
    nothing runs it until `graphlemon resume TASK_ID` (printed as `next:`)."""
    from ..agents.budget import update_budget
    from ..taskboard import TaskBoard
    from ..wording import budget_warning

    handle = open_project(project)
    ledger = handle.ledger
    task_id = TaskBoard(ledger).resolve(task_id)  # a unique prefix names its task
    update = update_budget(ledger, task_id, limit, limit_type)
    if as_json:
        warned = budget_warning(update.status.limit_type, update.status.limit_value, update.status.used,
                                update.task_status)  # fmt: skip
        emit_json(_view(update.status) | {"task_status": update.task_status, "requeued": update.requeued,
                                          "warning": warned})  # fmt: skip
        return
    out = console()
    s = update.status
    out.print(f"{task_id}: budget {_fmt(s.limit_type, s.limit_value)} (used {_fmt(s.limit_type, s.used)}, "
              f"remaining {_fmt(s.limit_type, s.remaining)})", highlight=False)  # fmt: skip
    warning = budget_warning(s.limit_type, s.limit_value, s.used, update.task_status)
    if warning:
        out.print(f"warning: {warning}", style="yellow", markup=False, highlight=False)
    if update.requeued:  # queued, and nothing runs it until it is resumed (the console's Raise the budget runs it)
        from .show import print_next_step

        out.print("the task was blocked by its budget and is queued again; nothing runs it yet", highlight=False)
        print_next_step(handle, TaskBoard(ledger).get(task_id), out)


@app.command()
def show(task_id: TaskArg, project: ProjectOpt = None, as_json: JsonOpt = False) -> None:
    """A task's budget: limit, used, remaining (v_budget_settings)."""
    from ..agents.budget import budget_status, task_usage
    from ..models import BudgetConfig
    from ..taskboard import TaskBoard

    ledger = open_project(project).ledger
    task_id = TaskBoard(ledger).resolve(task_id)  # TASK_NOT_FOUND; a unique prefix names its task
    task = TaskBoard(ledger).get(task_id)
    status = budget_status(ledger, task_id)
    tokens, cost = task_usage(ledger, task_id)
    history = [b for b in ledger.read_as("budget", BudgetConfig) if b.task_id == task_id]
    data = {
        "task_id": task_id,
        "task_status": task.status,
        "blocked_reason": task.blocked_reason,
        **(_view(status) if status else {"limit_type": None, "limit": None, "used": None, "remaining": None}),
        "used_tokens": tokens,
        "used_cost_usd": cost,
        "changes": [b.model_dump(mode="json", include={"ts", "limit_type", "limit_value", "by"}) for b in history],
    }
    if as_json:
        emit_json(data)
        return
    out = console()
    if status is None:
        out.print(f"{task_id}: no budget set (used {tokens} tokens, ${cost:.4f})", highlight=False)
        return
    out.print(f"{task_id} ({task.status}{f', {task.blocked_reason}' if task.blocked_reason else ''})", highlight=False)
    out.print(f"  limit     {_fmt(status.limit_type, status.limit_value)}", highlight=False)
    out.print(f"  used      {_fmt(status.limit_type, status.used)}  ({tokens} tokens, ${cost:.4f})", highlight=False)
    out.print(f"  remaining {_fmt(status.limit_type, status.remaining)}", highlight=False)
    out.print(f"  changes   {len(history)} (latest by {history[-1].by})", highlight=False)


def _view(status) -> dict:
    return {"limit_type": status.limit_type, "limit": status.limit_value, "used": status.used,
            "remaining": status.remaining}  # fmt: skip


def _fmt(limit_type: str, value: float) -> str:
    return f"{value:g} tokens" if limit_type == "token_count" else f"${value:.4f}"
