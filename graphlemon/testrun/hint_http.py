"""HTTP status rules: a wrong status of a request, only when the failing path is an HTTP exchange.

Premises of each: the reporter says which value is expected; both are HTTP statuses (integers
100-599) that differ; the failing code path is an HTTP exchange (`hint_premises.HTTP_EXCHANGE`: a
status read from a response object, statuses with their HTTP reasons, a test client's request, an
HTTP server or client on the stack) — a library's error code of 400 for 500 is not a request; and
the pair is of the rule's kind (401 for 500, a 2xx for a 4xx, ...).
"""

from __future__ import annotations

from collections.abc import Callable

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


def _kind(name: str, test: Callable[[int, int], bool]) -> Premise[HintContext]:
    def check(ctx: HintContext) -> bool:
        pair = statuses(ctx)
        return pair is not None and test(*pair)

    return Premise(name, f"the expected and produced statuses are {name}", check)


def _rule(kind: str, test: Callable[[int, int], bool], says: Callable[[int, int], str]) -> Rule[HintContext]:
    return Rule(f"HTTP {kind}", (STATUSES, HTTP_EXCHANGE, _kind(kind, test)),
                lambda ctx, pair, why, _kind: says(*pair))  # fmt: skip


HTTP_RULES: tuple[Rule[HintContext], ...] = (
    _rule("401 for 500", lambda e, g: (e, g) == (401, 500), lambda e, g:
          "Wrong credentials should answer 401, not crash with 500: catch the failed lookup/compare in the auth path "
          "and return 401."),
    _rule("400 for 500", lambda e, g: (e, g) == (400, 500), lambda e, g:
          "Invalid input should be rejected with 400 before it reaches the service: validate the request in the route "
          "instead of letting it throw."),
    _rule("404 for 200", lambda e, g: (e, g) == (404, 200), lambda e, g:
          "A missing resource must answer 404: check the lookup result and return 404 before building the success "
          "response."),
    _rule("404 for 500", lambda e, g: (e, g) == (404, 500), lambda e, g:
          "Looking up a missing resource crashes: handle the not-found case (no row, null) and return 404."),
    _rule("409 for 500", lambda e, g: (e, g) == (409, 500), lambda e, g:
          "A duplicate should answer 409 Conflict: check for the existing row (or catch the unique-constraint error) "
          "instead of crashing."),
    _rule("201 for 200", lambda e, g: (e, g) == (201, 200), lambda e, g:
          "A creation should answer 201 Created: set the status explicitly on the create route."),
    _rule("401/403 for a success", lambda e, g: e in (401, 403) and g < 300, lambda e, g:
          "The request gets through without valid credentials: apply the auth check (middleware) to this route and "
          "reject before the handler runs."),
    _rule("a success for 401/403", lambda e, g: e < 300 and g in (401, 403), lambda e, g:
          "A valid request is rejected as unauthorised: check how the test's credentials reach the server (header "
          "name, `Bearer ` prefix, token secret)."),
    _rule("a success for 400/422", lambda e, g: e < 300 and g in (400, 422), lambda e, g:
          "A valid request fails validation: compare the request body with what the route checks (field names, "
          "types, required fields)."),
    _rule("a success for 404", lambda e, g: e < 300 and g == 404, lambda e, g:
          "The route or resource is not found: check the path, the HTTP method and the prefix the router is mounted "
          "at, or that the resource was created first."),
    _rule("a 5xx for a success", lambda e, g: e < 400 and g >= 500, lambda e, g:
          "The handler throws on a request the test considers valid: read the server-side error for this request to "
          "find the exception."),
    _rule("a success for a 4xx", lambda e, g: 400 <= e < 500 and g < 300, lambda e, g:
          "The server accepts a request it should reject: add the missing validation, permission or existence check "
          "before the success path."),
    _rule("a 5xx for a 4xx", lambda e, g: 400 <= e < 500 and g >= 500, lambda e, g:
          f"The server crashes where it should answer {e}: catch this error case in the handler and return {e} with a "
          "clear message."),
    _rule("another status", lambda e, g: True, lambda e, g:
          f"The handler takes the wrong branch for this request: find where a {g // 100}xx response is produced and "
          f"what condition should lead to {e} instead."),
)  # fmt: skip
