"""Small pure helpers of the triager: observations in words, body differences, confidence adjustment."""

from __future__ import annotations

import json
from typing import Any

from .matching import Call, Requirement
from .rundir import Observation


def adjust(base: float, *, prose: bool = False, code_confirms: bool = False, stack: bool = False) -> float:
    return base - (0.08 if prose else 0.0) + (0.07 if code_confirms else 0.0) + (0.03 if stack else 0.0)


def pick_status(req: Requirement, observed: int) -> int:
    return next(s.code for s in req.clause.statuses if s.code != observed)


def describe(o: Observation) -> str:
    """An observation in words: `401`, `no response (connect ECONNREFUSED ...)`, `value {...}`."""
    if o.error:
        return f"no response ({o.error.strip()[:80]})"
    if o.status is not None:
        return str(o.status)
    if o.value is not None:
        return f"value {short(o.value)}"
    return f"body {short(o.body)}" if o.body is not None else "nothing"


def describe_call(call: Call) -> str:
    return str(call.status) if call.status is not None else f"no response ({call.error})"


def short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def top_keys(value: Any) -> list[str]:
    return [str(k) for k in value] if isinstance(value, dict) else []


def missing_fields(fields: tuple[str, ...], body: Any) -> list[str]:
    if not fields or not isinstance(body, dict) or not body:
        return []
    missing = [f for f in fields if f not in body]
    return missing if missing and len(missing) < len(fields) else []


def mismatches(want: Any, have: Any) -> dict[str, tuple[Any, Any]]:
    """Top-level fields whose expected value differs (or is missing); a scalar is the field `value`."""
    if isinstance(want, dict):
        have = have if isinstance(have, dict) else {}
        return {k: (v, have.get(k)) for k, v in want.items() if k not in have or have[k] != v}
    return {} if want is None or want == have else {"value": (want, have)}


def rounding_like(mismatched: dict[str, tuple[Any, Any]]) -> bool:
    """Every difference is one unit on a number of at least 10 (82 vs 83 cents), or under 0.5 % for floats."""
    pairs = list(mismatched.values())
    if not pairs:
        return False
    for want, have in pairs:
        if not (isinstance(want, int | float) and isinstance(have, int | float)) or isinstance(want, bool):
            return False
        diff = abs(want - have)
        if not (0 < diff <= 1 and abs(want) >= 10) and not (0 < diff <= 0.005 * abs(want)):
            return False
    return True


def values_text(mismatched: dict[str, tuple[Any, Any]], index: int, only: str | None = None) -> str:
    items = [(k, v[index]) for k, v in mismatched.items() if only is None or k == only]
    if len(items) == 1 and items[0][0] == "value":
        return short(items[0][1])
    return ", ".join(f"{k}={short(v)}" for k, v in items)


def squash(text: str) -> str:
    return " ".join(text.split())
