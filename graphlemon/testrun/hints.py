"""A specific one- or two-sentence hint for every failure (ports and extends seed 000 §7.2).

Rules (`hint_rules`) are tried in order on the failure's message, then its detail;
the first that matches writes the hint, naming the field, module, table, status or
location it found. Then HTTP status pairs, then value differences (`hint_values`).
The fallback still names the error type and where it was raised; no hint is
"fix the bug" or a restatement of expected/got.
"""

from __future__ import annotations

import re
from pathlib import Path

from .hint_context import HintContext, error_type, short_path, source_frame
from .hint_rules import RULES, panic_hint
from .hint_values import value_hint
from .parsers.go_messages import changed_lines
from .result_models import TestFailure
from .rust_source import rust_place

_PHASES = (
    ("setup", "so the test body never ran", "make that fixture work for this test before looking at the test body."),
    (
        "teardown",
        "after the test body ran",
        "make its cleanup cope with what the test leaves behind (closed connections, removed files).",
    ),
)


def build_hint(failure: TestFailure, root: Path | None = None) -> str:
    ctx = HintContext(failure, root)
    hint = _first_rule(ctx) or _with_call(ctx, _status_hint(ctx) or _diff_hint(failure) or _value_hint(failure))
    for phase, consequence, advice in _PHASES:
        if failure.message.startswith(f"error in {phase}"):
            error = error_type(ctx) or "an error"
            lead = f"The test's {phase} (a fixture or hook) raised {error}{ctx.where}, {consequence}"
            return f"{lead}. {hint}" if hint else f"{lead}: {advice}"
    return hint or _fallback(ctx)


def _first_rule(ctx: HintContext) -> str | None:
    """Rules on the message first, then on the detail (which may quote source code)."""
    for text in (ctx.failure.message, ctx.evidence):
        for pattern, make in RULES:
            match = pattern.search(text)
            if match:
                return make(match, ctx)
    return None


# pytest's assertion explanation: "assert 6 == 11\n +  where 6 = total([1, 2, 3, 4])"
_RETURNED = re.compile(r"^\s*\+\s+where (?P<value>[^\n]+?) = (?P<call>[\w.]+\([^\n]*\))\s*$", re.M)


def _with_call(ctx: HintContext, hint: str | None) -> str | None:
    """Lead with the call pytest shows and what it returned, then the kind of difference."""
    f = ctx.failure
    match = _RETURNED.search(f.message) or _RETURNED.search(ctx.evidence)
    if match is None:
        return hint
    call, value = match.group("call"), match.group("value").strip()
    lead = f"`{_clip(call)}` returned {_clip(value)}"
    if f.expected is not None and f.got is not None and f.got.strip() == value:
        lead += f" where the test expects {_clip(f.expected)}"
    if hint:
        return f"{lead}. {hint}"
    return f"{lead}: check what `{call.split('(', 1)[0]}` computes for these arguments (a condition, an operator, a missing case)."


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


_FIELD = re.compile(r"^(?P<key>[\w.\[\]\"'-]+):\s+(?P<value>.+?),?$")


def _diff_hint(failure: TestFailure) -> str | None:
    """A `(-want +got)` diff (go-cmp): name the first changed line, or field, and what kind of change it is."""
    want, got = changed_lines(failure.message)
    if not want and not got:
        return None
    if not got:
        return f"The result lacks what the diff marks as wanted, first `{_clip(want[0])}`: check the code that should produce it."
    if not want:
        return f"The result has extra content the diff marks, first `{_clip(got[0])}`: check the code that adds it."
    w, g = _FIELD.match(want[0]), _FIELD.match(got[0])
    if w and g and w["key"] == g["key"]:
        kind = value_hint(w["value"], g["value"]) or ""
        return f"Field `{w['key']}` differs ({_clip(w['value'])} wanted, {_clip(g['value'])} produced). {kind}".strip()
    kind = value_hint(want[0].rstrip(","), got[0].rstrip(",")) or ""
    return f"The diff's first change: `{_clip(want[0])}` wanted, `{_clip(got[0])}` produced. {kind}".strip()


def _value_hint(failure: TestFailure) -> str | None:
    if failure.expected is None or failure.got is None:
        return None
    return value_hint(failure.expected, failure.got)


def _rust_panic(ctx: HintContext) -> str | None:
    """A libtest panic: a failed assertion in test code (a test or its helper), or a panic in the code under test."""
    f = ctx.failure
    panic = re.search(r"panicked at [^\n]*\n?(?P<msg>[^\n]*)", ctx.text)
    place = rust_place(ctx.root, f.file, f.line) if panic else None
    if place is None or panic is None:
        return None
    at = f"{f.file}:{f.line}" if f.line else f.file
    message = _clip(f.message.strip().splitlines()[0] if f.message.strip() else panic.group("msg").strip(), 140)
    test_fn = f.name.rsplit("::", 1)[-1]
    if place.in_test_code:
        where = (f"in test helper `{place.function}` ({at})" if place.function and place.function != test_fn
                 else f"in the test ({at})")  # fmt: skip
        check = message.removeprefix("assertion failed: ")
        what = f"The assertion `{check}`" if check != message else f"An assertion (message `{message}`)"
        return (f"{what} {where} failed — a check of the test, not a panic in the code under test. Print the "
                "values it checks (or use assert_eq! so both are shown) and trace them back to the code under test "
                "that computes them for this input.")  # fmt: skip
    inside = f" in `{place.function}`" if place.function else ""
    return (f"The code under test panicked{inside} ({at}): {message} — handle that case instead of panicking, or "
            "fix the state that leads to it.")  # fmt: skip


def _fallback(ctx: HintContext) -> str:
    rust = _rust_panic(ctx)
    if rust:
        return rust
    error = error_type(ctx)
    where = ctx.where
    if error:
        return (f"{error} was raised{where or ' while the test ran'}: check how that code handles the input "
                "this test gives it, and whether the test's setup provides what the code expects.")  # fmt: skip
    panic = re.search(r"panicked at [^\n]*\n?(?P<msg>[^\n]*)", ctx.text)
    if panic:
        return panic_hint(panic, ctx)
    location = (
        f" at {short_path(ctx.failure.file, ctx.root)}:{ctx.failure.line}"
        if ctx.failure.file and ctx.failure.line
        else ""
    )
    statement = _failing_statement(ctx.failure.detail)
    if statement and ctx.failure.expected is None and ctx.failure.got is None:
        frame = source_frame(ctx.evidence, None, ctx.root)
        where = f" at {frame}" if frame else location
        return (f"`{_clip(statement)}`{where} does not hold and the values it checks were not reported: print them "
                "(or assert a comparison, `a == b`, so the runner shows both) and trace back to the code that "
                "computes them for this test's input.")  # fmt: skip
    return (f"The check{location} does not hold: print the value it inspects and trace back to the code that "
            "computes it for this test's input.")  # fmt: skip


def _failing_statement(detail: str) -> str | None:
    """The innermost line pytest marks with `>` (the statement that raised), if any."""
    found = re.findall(r"^>\s+(\S.*)$", detail, re.M)
    return found[-1].strip() if found else None
