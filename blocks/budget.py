"""BudgetGuardrail: a token or cost limit for tasks (REQ-10), applied as a `BudgetConfig` ledger record.

Register: `prefect block register -f blocks/budget.py`, then save one named `default`
(or pass `budget_block` to the devloop flow): every task a devloop run creates starts with
that budget, written to the ledger as the task's `BudgetConfig` record; the agents'
pre-flight reads the ledger, not Prefect.
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
    limit_value: float = Field(gt=0, description="Tokens (token_count) or US dollars (cost_usd) a task may use.")

    def to_budget_config(self, task_id: str, by: str = "budget-guardrail-block") -> BudgetConfig:
        return BudgetConfig(task_id=task_id, limit_type=self.limit_type, limit_value=self.limit_value, by=by)


def load_budget_guardrail(name: str | None) -> BudgetGuardrail | None:
    """The saved block `name`, or None when there is no such block (or no name)."""
    if not name:
        return None
    try:
        return BudgetGuardrail.load(name)
    except ValueError:  # no such block document
        return None
