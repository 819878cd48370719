"""A boolean answer field the SDD defines by a threshold on another field of the same answer, checked against
what a call of the failing step answered.

"`observable` is true exactly when cloud_cover is below 0.3": a call that answered `cloud_cover: 0.82,
observable: true` contradicts the statement with the answer's own values — no words of the case are needed, and
the unit that answered it is the one whose behaviour departs from the SDD.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from .matching import Call
from .run_context import RunContext
from .sdd import Clause

_FIELD = r"`?([A-Za-z_][\w.]*)`?"
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "below": operator.lt, "under": operator.lt, "less than": operator.lt, "lower than": operator.lt,
    "above": operator.gt, "over": operator.gt, "more than": operator.gt, "greater than": operator.gt,
    "higher than": operator.gt, "at least": operator.ge, "at most": operator.le,
}  # fmt: skip
# "`A` is true (exactly / only) when / if / iff `B` is <comparison> N": a definition, so both directions hold
_DEFINITION = re.compile(
    rf"{_FIELD}\s+is\s+(true|false)\s+(?:exactly\s+|only\s+|precisely\s+)?(?:when|if|iff|whenever)\s+(?:the\s+)?"
    rf"{_FIELD}\s+is\s+({'|'.join(sorted(_COMPARE, key=len, reverse=True))})\s+(-?\d+(?:\.\d+)?)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class DerivedField:
    flag: str
    basis: str
    clause: Clause
    call: Call
    stated: bool  # what the SDD's definition gives for the answered basis value
    basis_value: float


def contradicted(ctx: RunContext, calls: list[Call]) -> DerivedField | None:
    """The first call whose answer contradicts an SDD definition of one of its boolean fields by another."""
    for call in calls:
        if not isinstance(call.body, dict) or call.provider is None or call.path is None:
            continue
        for clause in ctx.sdd.clauses:
            if clause.relevance(call.method, call.path, call.provider) is None:
                continue
            for m in _DEFINITION.finditer(clause.raw):
                flag, truth, basis, compare, number = m.groups()
                have, value = call.body.get(flag), call.body.get(basis)
                if not isinstance(have, bool) or isinstance(value, bool) or not isinstance(value, int | float):
                    continue
                stated = _COMPARE[compare.lower()](float(value), float(number)) == (truth.lower() == "true")
                if have != stated:
                    return DerivedField(flag, basis, clause, call, stated, float(value))
    return None


__all__ = ["DerivedField", "contradicted"]
