"""A reply's `usage`, as GraphLemon records it: the server's numbers when they are numbers a bill can hold.

Each of `input_tokens`, `output_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens` must be a
whole number >= 0 (an absent cache field, or null, is 0: the API leaves them out when nothing was cached).
When `usage` is missing, or `input_tokens` / `output_tokens` is missing, negative or not a whole number, or a
cache field is negative or not a whole number, the server's usage is invalid: that field is recorded as
GraphLemon's own estimate (the request's input estimate; the reply's characters / 4 for the output; 0 for a
cache field), never as the server's number, so nothing is subtracted from a budget. `Usage.problem` says what
was wrong (the transcript's `usage_invalid` event and the person's timeline line `usage_invalid`).
A very large whole number is recorded as sent: it may have been billed, and the budget's pre-flight then
refuses the next call (over-counting is the safe side).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FIELDS = {  # the API's name -> the usage record's
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
    "cache_creation_input_tokens": "cache_write_tokens",
}
REQUIRED = ("input_tokens", "output_tokens")


@dataclass(frozen=True)
class Usage:
    tokens: dict[str, int]  # keyword arguments of `TurnRecorder.record_usage`
    problem: str | None = None


def read_usage(usage: Any, *, input_estimate: int, output_estimate: int) -> Usage:
    """The usage to record for one reply (`usage`: the SDK's object, a dict, or None)."""
    if usage is None:
        tokens = {"input_tokens": input_estimate, "output_tokens": output_estimate,
                  "cache_read_tokens": 0, "cache_write_tokens": 0}  # fmt: skip
        return Usage(tokens, "the reply had no usage; GraphLemon's estimate was recorded")
    raw = usage if isinstance(usage, dict) else {name: getattr(usage, name, None) for name in FIELDS}
    estimates = {"input_tokens": input_estimate, "output_tokens": output_estimate}
    tokens, wrong = {}, []
    for name, field_name in FIELDS.items():
        value = raw.get(name)
        if value is None and name not in REQUIRED:
            tokens[field_name] = 0
        elif _whole(value) and value >= 0:
            tokens[field_name] = int(value)
        else:
            tokens[field_name] = estimates.get(name, 0)
            wrong.append(f"{name}={_show(value)}")
    if not wrong:
        return Usage(tokens)
    return Usage(tokens, f"the server's usage was invalid ({', '.join(wrong)}); GraphLemon's estimate was recorded "
                         "for those fields")  # fmt: skip


def _whole(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and value.is_integer()


def _show(value: Any) -> str:
    return "missing" if value is None else repr(value)[:40]
