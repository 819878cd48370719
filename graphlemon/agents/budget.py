"""Budget pre-flight (REQ-10): a call whose estimate would cross the task's budget is never sent.

The budget is the latest `BudgetConfig` record for the task (limit_type
token_count | cost_usd); what is used is the sum of the task's `UsageRecord`s
(tokens = input + output + cache read + cache write). Before each model call the
executor estimates the request (input tokens from the text, plus the most output
it allows) and calls `preflight`, which either raises `BudgetExceeded` or returns
the largest `max_tokens` that still fits, so the reply itself cannot overshoot.

`update_budget` is c_budget_config_update: it appends a new `BudgetConfig`, and a
task blocked for `budget_exceeded` that now has room again goes back to `queued`
(schedulable; `graphlemon resume` or the scheduler continues it).
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from ..errors import BudgetExceeded, invalid_param
from ..ledger import Ledger
from ..models import BudgetConfig, BudgetLimitType, UsageRecord
from ..taskboard import TaskBoard
from ..wording import budget_words
from .pricing import price_for

MIN_OUTPUT_TOKENS = 16
MAX_LIMIT = {"token_count": 10**12, "cost_usd": 1_000_000.0}


class BudgetStatus(BaseModel):
    task_id: str
    limit_type: BudgetLimitType
    limit_value: float
    used_tokens: int
    used_cost_usd: float

    @property
    def used(self) -> float:
        return self.used_tokens if self.limit_type == "token_count" else self.used_cost_usd

    @property
    def remaining(self) -> float:
        return self.limit_value - self.used


class BudgetUpdate(BaseModel):
    """What c_budget_config_update did."""

    config: BudgetConfig
    status: BudgetStatus
    task_status: str
    requeued: bool


def task_usage(ledger: Ledger, task_id: str) -> tuple[int, float]:
    """-> (tokens, cost in USD) the task's model calls used so far."""
    tokens, cost = 0, 0.0
    for u in ledger.read_as("usage", UsageRecord):
        if u.task_id == task_id:
            tokens += u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens
            cost += u.cost_usd
    return tokens, round(cost, 6)


def suggested_raise(ledger: Ledger, task_id: str) -> str:
    """The `budget set` options a budget stop suggests: twice the larger of the limit and what was used (a limit
    at or below the use stops the task again at once), in the budget's own unit."""
    status = budget_status(ledger, task_id)
    if status is None:
        return "--limit N"
    if status.limit_type == "cost_usd":
        return f"--limit {max(status.limit_value, status.used) * 2 or 1:.2f} --type cost_usd"
    return f"--limit {int(max(status.limit_value, status.used) * 2) or 1000}"


def budget_status(ledger: Ledger, task_id: str | None) -> BudgetStatus | None:
    if not task_id:
        return None
    configs = [b for b in ledger.read_as("budget", BudgetConfig) if b.task_id == task_id]
    if not configs:
        return None
    latest = configs[-1]
    tokens, cost = task_usage(ledger, task_id)
    return BudgetStatus(
        task_id=task_id,
        limit_type=latest.limit_type,
        limit_value=latest.limit_value,
        used_tokens=tokens,
        used_cost_usd=cost,
    )


def check_budget(limit_value: float, limit_type: str) -> None:
    """INVALID_PARAM unless `limit_value` is a usable `limit_type` budget."""
    if limit_type not in MAX_LIMIT:
        raise invalid_param(f"unknown limit type {limit_type!r}; choose token_count or cost_usd")
    if isinstance(limit_value, bool) or not isinstance(limit_value, int | float) or not math.isfinite(limit_value):
        raise invalid_param(f"the budget limit must be a finite number, got {limit_value!r}")
    if limit_value <= 0:
        raise invalid_param(f"the budget limit must be above 0, got {limit_value:g}")
    if limit_type == "token_count" and not float(limit_value).is_integer():
        raise invalid_param(f"a token_count limit is a whole number of tokens, got {limit_value:g}")
    if limit_value > MAX_LIMIT[limit_type]:
        raise invalid_param(f"a {limit_type} limit above {MAX_LIMIT[limit_type]:g} is not a guardrail")


def update_budget(
    ledger: Ledger,
    task_id: str,
    limit_value: float,
    limit_type: str = "token_count",
    *,
    by: str = "human",
    requeue: bool = True,
) -> BudgetUpdate:
    """c_budget_config_update: set the task's budget; a task blocked by its budget with room again is re-queued
    (`requeue=False`: only recorded, for a caller that does not hold the task: its holder re-queues it)."""
    check_budget(limit_value, limit_type)
    board = TaskBoard(ledger)
    task = board.get(task_id)  # TASK_NOT_FOUND
    if task.terminal:
        raise invalid_param(f"task {task_id} is {task.status}; a budget can no longer change anything", task_id=task_id)
    config = BudgetConfig(task_id=task_id, limit_type=limit_type, limit_value=limit_value, by=by)  # type: ignore[arg-type]
    ledger.append(config)
    status = budget_status(ledger, task_id)
    assert status is not None
    requeued = requeue and (
        task.status == "blocked_pending_human" and task.blocked_reason == "budget_exceeded" and status.remaining > 0
    )
    if requeued:
        task = board.transition(
            task_id, "queued", by=by, note=f"budget raised to {budget_words(limit_type, limit_value)} (used "
            f"{budget_words(limit_type, status.used)})"
        )
    return BudgetUpdate(config=config, status=status, task_status=task.status, requeued=requeued)


def preflight(
    ledger: Ledger,
    task_id: str | None,
    *,
    model: str,
    input_tokens: int,
    max_output_tokens: int,
    min_output_tokens: int = MIN_OUTPUT_TOKENS,
) -> int:
    """-> the max_tokens to send (≤ max_output_tokens); BudgetExceeded if not even `min_output_tokens` fit."""
    status = budget_status(ledger, task_id)
    if status is None:
        return max_output_tokens
    price = price_for(model)
    if status.limit_type == "token_count":
        room = status.remaining - input_tokens
    else:
        room_usd = status.remaining - input_tokens * price.input / 1_000_000
        room = room_usd * 1_000_000 / price.output if price.output else float("inf")
    floor = min(min_output_tokens, max_output_tokens)
    if room < floor:
        raise BudgetExceeded(
            f"task {task_id}: this {model} call (about {input_tokens} input tokens + a reply) would cross the "
            f"budget of {budget_words(status.limit_type, status.limit_value)} (used "
            f"{budget_words(status.limit_type, status.used)}); the call was not sent",
            task_id=task_id,
            limit_type=status.limit_type,
            limit_value=status.limit_value,
            used=status.used,
            estimate_input_tokens=input_tokens,
            model=model,
        )
    return int(min(max_output_tokens, room))


def estimate_tokens(text: str) -> int:
    """A deliberately high token estimate: 1 per 3 ASCII characters, 1 per other character."""
    ascii_chars = len(text) if text.isascii() else len(text.encode("ascii", "ignore"))
    return (ascii_chars + 2) // 3 + (len(text) - ascii_chars) + 4
