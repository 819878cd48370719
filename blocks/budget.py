"""BudgetGuardrail: a token or cost limit for tasks (REQ-10), applied as a `BudgetConfig` ledger record.

Register: `prefect block register -f blocks/budget.py`. The loop writes the
record when a task starts (scope `task`: this task only; `project`: the default
for every new task); the agents' pre-flight reads the ledger, not Prefect.
"""

from __future__ import annotations

from typing import Literal

from prefect.blocks.core import Block
from pydantic import Field

from graphlemon.models import BudgetConfig


class BudgetGuardrail(Block):
    _block_type_name = "GraphLemon Budget Guardrail"
    _block_type_slug = "graphlemon-budget-guardrail"
    _description = "A per-task budget (token_count or cost_usd) checked before every model call."

    limit_type: Literal["token_count", "cost_usd"] = "token_count"
    limit_value: float = Field(gt=0)
    scope: Literal["task", "project"] = "task"

    def to_budget_config(self, task_id: str, by: str = "budget-guardrail-block") -> BudgetConfig:
        return BudgetConfig(task_id=task_id, limit_type=self.limit_type, limit_value=self.limit_value, by=by)
