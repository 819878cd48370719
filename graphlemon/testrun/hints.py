"""A hint for every failure: specific and true, or the facts only (`hint_confidence`).

Rules are tried in order: the framework's own (`Framework.hint_rules`: go-cmp diffs, Rust panics), the
error patterns of `hint_rules` on the failure's message then its detail, HTTP status pairs, then the
rules over the parsed expected/got values (`hint_values`). Each rule writes a hint only when its
preconditions hold. When none does, the failure carries the facts: where it failed, the call and what
it returned, the raised error, or where the parsed values first differ — `hint_confidence` "facts".
No hint is "fix the bug" or a restatement of expected/got.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .hint_context import HintContext, error_type, short_path, source_frame
from .hint_rules import RULES
from .hint_values import value_facts, value_hint
from .result_models import HintConfidence, TestFailure

# a framework's own rule: the hint it can tell from the failure, or None
FrameworkRule = Callable[[HintContext], str | None]

_PHASES = (
    ("setup", "so the test body never ran", "make that fixture work for this test before looking at the test body."),
    (
        "teardown",
        "after the test body ran",
        "make its cleanup cope with what the test leaves behind (closed connections, removed files).",
    ),
)


@dataclass(frozen=True)
class Hint:
    text: str
    confidence: HintConfidence


def build_hint(failure: TestFailure, root: Path | None = None, rules: Sequence[FrameworkRule] = ()) -> str:
    return hint_for(failure, root, rules).text


def hint_for(failure: TestFailure, root: Path | None = None, rules: Sequence[FrameworkRule] = ()) -> Hint:
    ctx = HintContext(failure, root)
    specific = (
        next((hint for rule in rules if (hint := rule(ctx))), None)
        or _first_rule(ctx) or _status_hint(ctx) or _value_hint(failure)
    )  # fmt: skip
    lead = _call_lead(ctx)
    hint = (
        Hint(f"{lead}. {specific}" if lead else specific, "specific") if specific else Hint(_facts(ctx, lead), "facts")
    )
    for phase, consequence, advice in _PHASES:
        if failure.message.startswith(f"error in {phase}"):
            error = error_type(ctx) or "an error"
            phase_lead = f"The test's {phase} (a fixture or hook) raised {error}{ctx.where}, {consequence}"
            if hint.confidence == "specific":
                return Hint(f"{phase_lead}. {hint.text}", "specific")
            return Hint(f"{phase_lead}: {advice}", "specific")
    return hint


def _first_rule(ctx: HintContext) -> str | None:
    """Rules on the message first, then on the detail (which may quote source code)."""
    for text in (ctx.failure.message, ctx.evidence):
        for pattern, make in RULES:
            match = pattern.search(text)
            hint = make(match, ctx) if match else None
            if hint:
                return hint
    return None


# pytest's assertion explanation: "assert 6 == 11\n +  where 6 = total([1, 2, 3, 4])"
_RETURNED = re.compile(r"^\s*\+\s+where (?P<value>[^\n]+?) = (?P<call>[\w.]+\([^\n]*\))\s*$", re.M)


def _call_lead(ctx: HintContext) -> str | None:
    """The call pytest shows and what it returned (`add(2, 2)` returned 5 where the test expects 6)."""
    f = ctx.failure
    match = _RETURNED.search(f.message) or _RETURNED.search(ctx.evidence)
    if match is None:
        return None
    call, value = match.group("call"), match.group("value").strip()
    lead = f"`{_clip(call)}` returned {_clip(value)}"
    if f.expected is not None and f.got is not None and f.got.strip() == value:
        lead += f" where the test expects {_clip(f.expected)}"
    return lead


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_STATUS_PAIRS: dict[tuple[int, int], str] = {
    (401, 500): "Wrong credentials should answer 401, not crash with 500: "
    "catch the failed lookup/compare in the auth path and return 401.",
    (400, 500): "Invalid input should be rejected with 400 before it reaches the service: "
    "validate the request in the route instead of letting it throw.",
    (404, 200): "A missing resource must answer 404: "
    "check the lookup result and return 404 before building the success response.",
    (404, 500): "Looking up a missing resource crashes: handle the not-found case (no row, null) and return 404.",
    (409, 500): "A duplicate should answer 409 Conflict: "
    "check for the existing row (or catch the unique-constraint error) instead of crashing.",
    (201, 200): "A creation should answer 201 Created: set the status explicitly on the create route.",
}


def _status_hint(ctx: HintContext) -> str | None:
    exp, got = _status_pair(ctx)
    if exp is None or got is None:
        return None
    if (exp, got) in _STATUS_PAIRS:
        return _STATUS_PAIRS[(exp, got)]
    if exp in (401, 403) and got < 300:
        return "The request gets through without valid credentials: apply the auth check (middleware) to this route and reject before the handler runs."
    if exp < 300 and got in (401, 403):
        return "A valid request is rejected as unauthorised: check how the test's credentials reach the server (header name, `Bearer ` prefix, token secret)."
    if exp < 300 and got in (400, 422):
        return "A valid request fails validation: compare the request body with what the route checks (field names, types, required fields)."
    if exp < 300 and got == 404:
        return "The route or resource is not found: check the path, the HTTP method and the prefix the router is mounted at, or that the resource was created first."
    if exp < 400 and got >= 500:
        return "The handler throws on a request the test considers valid: read the server-side error for this request to find the exception."
    if 400 <= exp < 500 and got < 300:
        return "The server accepts a request it should reject: add the missing validation, permission or existence check before the success path."
    if 400 <= exp < 500 and got >= 500:
        return f"The server crashes where it should answer {exp}: catch this error case in the handler and return {exp} with a clear message."
    return f"The handler takes the wrong branch for this request: find where a {got // 100}xx response is produced and what condition should lead to {exp} instead."


_COMMON_STATUSES = {200, 201, 202, 204, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 405, 409, 410, 413, 415, 422,
                    429, 500, 501, 502, 503, 504}  # fmt: skip


def _status_pair(ctx: HintContext) -> tuple[int | None, int | None]:
    """(expected, got) HTTP statuses: codes in a status context, or well-known codes one of which is an error."""
    exp, got = ctx.failure.expected, ctx.failure.got
    if not (exp and got and exp.strip().isdigit() and got.strip().isdigit()):
        return None, None
    e, g = int(exp), int(got)
    if e == g or not (100 <= e < 600 and 100 <= g < 600):
        return None, None
    in_context = re.search(r"status|response|http|\bcode\b", ctx.text + " " + ctx.failure.name, re.IGNORECASE)
    if in_context or ({e, g} <= _COMMON_STATUSES and max(e, g) >= 400):
        return e, g
    return None, None


def _value_hint(failure: TestFailure) -> str | None:
    if failure.expected is None or failure.got is None:
        return None
    try:
        return value_hint(failure.expected, failure.got)
    except RecursionError:  # a value nested deeper than the rules walk: no claim
        return None


def _facts(ctx: HintContext, lead: str | None) -> str:
    """What is known without a claim of cause: the place, the call, the error, or where the values differ."""
    f = ctx.failure
    location = f" at {short_path(f.file, ctx.root)}:{f.line}" if f.file and f.line else ""
    parts = [f"Facts only (no hint rule's conditions hold): the check{location} failed"]
    if lead:
        parts.append(f"{lead}")
    error = error_type(ctx)
    if f.expected is not None and f.got is not None:
        try:
            parts.append(value_facts(f.expected, f.got))
        except RecursionError:
            parts.append("expected and got differ (nested too deep to name where)")
    elif error:
        parts.append(f"{error} was raised{ctx.where or ' while the test ran'}")
    else:
        statement = _failing_statement(f.detail)
        if statement:
            frame = source_frame(ctx.evidence, None, ctx.root)
            parts.append(f"`{_clip(statement)}`{f' at {frame}' if frame else ''} does not hold and the values it "
                         "checks were not reported (assert a comparison, `a == b`, so the runner shows both)")  # fmt: skip
    return "; ".join(p.rstrip(".") for p in parts) + "."


def _failing_statement(detail: str) -> str | None:
    """The innermost line pytest marks with `>` (the statement that raised), if any."""
    found = re.findall(r"^>\s+(\S.*)$", detail, re.M)
    return found[-1].strip() if found else None
