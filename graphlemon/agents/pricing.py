"""The one price table: USD per million tokens, by model-name prefix (longest prefix wins).

Cache writes (5-minute TTL) cost 1.25x the input price; cache reads cost 0.1x the input
price unless the model's entry says otherwise (Opus 5.5 reads at $0.20, 0.05x), as
the Anthropic price list says (platform.claude.com, checked 2026-12). A model missing
from the table is priced like the most expensive entry, so a budget guardrail errs on
the safe side.
"""

from __future__ import annotations

from typing import NamedTuple


class Price(NamedTuple):
    input: float
    output: float
    cache_read: float | None = None  # USD per million cached input tokens read; None: 0.1x input


PRICES: dict[str, Price] = {
    "scripted": Price(0.0, 0.0),
    "claude-fable-5": Price(10.0, 50.0, 1.0),
    "claude-opus-5-5": Price(4.0, 20.0, 0.2),
    "claude-opus-5": Price(5.0, 25.0),
    "claude-opus-4-8": Price(5.0, 25.0),
    "claude-opus-4-7": Price(5.0, 25.0),
    "claude-opus-4-6": Price(5.0, 25.0),
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4-0": Price(15.0, 75.0),
    "claude-opus-4-2025": Price(15.0, 75.0),
    "claude-3-opus": Price(15.0, 75.0),
    "claude-sonnet-5-5": Price(2.0, 10.0),
    "claude-sonnet-5": Price(2.0, 10.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-3-7-sonnet": Price(3.0, 15.0),
    "claude-3-5-sonnet": Price(3.0, 15.0),
    "claude-haiku-4": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.8, 4.0),
    "claude-3-haiku": Price(0.25, 1.25),
}
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.1
FALLBACK = max(PRICES.values(), key=lambda p: p.output)


def price_for(model: str) -> Price:
    matches = [prefix for prefix in PRICES if model.startswith(prefix)]
    return PRICES[max(matches, key=len)] if matches else FALLBACK


def cost_usd(
    model: str,
    *,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> float:
    p = price_for(model)
    total = (
        input_tokens * p.input
        + output_tokens * p.output
        + cache_write_tokens * p.input * CACHE_WRITE_FACTOR
        + cache_read_tokens * (p.cache_read if p.cache_read is not None else p.input * CACHE_READ_FACTOR)
    )
    return round(total / 1_000_000, 6)
