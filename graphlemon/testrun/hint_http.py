"""HTTP status rules: a wrong status of a request, only when the failing path is an HTTP exchange.

Premises of each: the reporter says which value is expected; both are HTTP statuses (integers
100-599) that differ; the failing code path is an HTTP exchange (`hint_premises.HTTP_EXCHANGE`: a
status read from a response object, statuses with their HTTP reasons, a test client's request, an
HTTP server or client on the stack) — a library's error code of 400 for 500 is not a request. It says the two
statuses and their classes, and no cause: the statuses alone do not show which branch or check is wrong.
"""

from __future__ import annotations

from .hint_context import HintContext
from .hint_premises import HTTP_EXCHANGE, Premise, Rule
from .value_types import parse_value


def statuses(ctx: HintContext) -> tuple[int, int] | None:
    """(expected, got) when the reporter gives both sides and both are differing HTTP status numbers."""
    f = ctx.failure
    if f.expected is None or f.got is None or (f.operands is not None and not f.operands.sided):
        return None
    grammar = f.operands.grammar if f.operands is not None else "any"
    e, g = parse_value(f.expected, grammar), parse_value(f.got, grammar)
    if isinstance(e, str) and e.isdigit() and isinstance(g, str) and g.isdigit():  # `'500'` written as text
        e, g = int(e), int(g)
    if type(e) is not int or type(g) is not int or e == g or not (100 <= e < 600 and 100 <= g < 600):
        return None
    return e, g


STATUSES: Premise[HintContext] = Premise(
    "two HTTP statuses, sides known",
    "the reporter says which value is expected, and both are HTTP status numbers (100-599) that differ",
    statuses,
)


_CLASSES = {1: "informational", 2: "a success", 3: "a redirect", 4: "a client error", 5: "a server error"}


def _status_says(ctx: HintContext, pair: tuple[int, int], why: str) -> str:
    """The two statuses and their classes: what the exchange answered where the test expects another answer. The
    statuses alone do not say which branch or check is wrong, so no cause is named."""
    e, g = pair
    same = " (the same class)" if e // 100 == g // 100 else ""
    return (f"The response's status is {g} ({_CLASSES[g // 100]}) where {e} ({_CLASSES[e // 100]}) is "
            f"expected{same}; the failing path is an HTTP exchange ({why}).")  # fmt: skip


HTTP_RULES: tuple[Rule[HintContext], ...] = (Rule("HTTP status", (STATUSES, HTTP_EXCHANGE), _status_says),)
