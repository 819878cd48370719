"""Budget pre-flight (REQ-10): a call whose estimate would cross the task's budget is never sent.

The budget is the latest `BudgetConfig` record for the task (limit_type
token_count | cost_usd); what is used is the sum of the task's `UsageRecord`s
(tokens = input + output + cache read + cache write). Before each model call the
executor estimates the request (input tokens from the text, plus the most output
it allows) and calls `preflight`, which either raises `BudgetExceeded` or returns
the largest `max_tokens` that still fits, so the reply itself cannot overshoot.
"""

from __future__ import annotations

from pydantic import BaseModel

from ..errors import BudgetExceeded
from ..ledger import Ledger
from ..models import BudgetConfig, BudgetLimitType, UsageRecord
from .pricing import price_for

MIN_OUTPUT_TOKENS = 16


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


def budget_status(ledger: Ledger, task_id: str | None) -> BudgetStatus | None:
    if not task_id:
        return None
    configs = [b for b in ledger.read_as("budget", BudgetConfig) if b.task_id == task_id]
    if not configs:
        return None
    latest = configs[-1]
    tokens, cost = 0, 0.0
    for u in ledger.read_as("usage", UsageRecord):
        if u.task_id == task_id:
            tokens += u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens
            cost += u.cost_usd
    return BudgetStatus(
        task_id=task_id,
        limit_type=latest.limit_type,
        limit_value=latest.limit_value,
        used_tokens=tokens,
        used_cost_usd=round(cost, 6),
    )


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
            f"{status.limit_type} budget {status.limit_value:g} (used {status.used:g}); the call was not sent",
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
