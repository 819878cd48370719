"""A hint rule as data: its name, the premises it needs, and what it says when they hold.

Every rule declares its premises (`Premise`: a name, the fact it stands for, the check of that fact
against the failure's evidence). `Rule.hint` checks them all before the rule speaks, so no rule can
claim what its premises do not establish; a test enumerates every rule (`hints.all_rules()`) and
checks, for each premise, that the rule is silent when that premise fails.

The premises shared by several rules live here: an HTTP exchange on the failing path, a boundary (a
range, an index, a count) shown by the code or the data.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .assertions import identifier_words
from .hint_context import HintContext, frames, short_path, statement_at, without_locations

S = TypeVar("S")


@dataclass(frozen=True)
class Premise(Generic[S]):
    """A fact a rule needs: `check` returns a finding (truthy) when the evidence establishes it, else None."""

    name: str
    states: str
    check: Callable[[S], Any]


@dataclass(frozen=True)
class Rule(Generic[S]):
    """A hint rule: it speaks (`says`, given the subject and each premise's finding) only when every premise holds."""

    name: str
    premises: tuple[Premise[S], ...]
    says: Callable[..., str]

    def hint(self, subject: S) -> str | None:
        findings = []
        for premise in self.premises:
            found = premise.check(subject)
            if found is None or found is False:
                return None
            findings.append(found)
        return self.says(subject, *findings)


def said(pattern: re.Pattern[str], what: str) -> Premise[HintContext]:
    """The runner's error text says `what`: `pattern` matches the message, else the error text without the
    source code tracebacks quote. The finding is the match."""

    def check(ctx: HintContext) -> re.Match[str] | None:
        return pattern.search(ctx.failure.message) or pattern.search(ctx.evidence)

    return Premise(f"the error says {what}", f"the runner's error text says {what} (/{pattern.pattern[:60]}/)", check)


# --- an HTTP exchange on the failing path --------------------------------------------------------------

# a status read from a response object: `res.status`, `response.status_code`, `rr.Code`, `<Response [500]>.status_code`
_RESPONSE_STATUS = re.compile(
    r"(?:\b(?:res|resp|response|reply|rsp|rr|recorder|rec)\b|<\w*Response\b[^>]*>)(?:\.\w+|\[[^\]\n]*\]|\(\))*?"
    r"\.(?:status(?:_code|Code)?|StatusCode|Code|code)\b"
)
# supertest's `expected 401 "Unauthorized", got 500 "Internal Server Error"`: statuses with their HTTP reasons
_STATUS_WITH_REASON = re.compile(r'expected \d{3} "[^"\n]+", got \d{3} "[^"\n]+"')
# a test client making the request: Flask/Django/Starlette's client, supertest, fastify's inject, Go's httptest
_CLIENT_CALL = re.compile(
    r"\bclient\.(?:get|post|put|patch|delete|head|options|request)\(|\brequest\(\s*app\b|\.inject\(|httptest\.New"
)
# a server or HTTP client library on the stack
_HTTP_FRAME = re.compile(
    r"node_modules/(?:express|koa|@koa|fastify|@fastify|@hapi|restify|supertest|superagent|light-my-request|undici|"
    r"axios|node-fetch|got)/|/(?:flask|werkzeug|django|starlette|fastapi|aiohttp|tornado|falcon|bottle|pyramid|"
    r"requests|httpx|urllib3)/|\bnet/http\b|/http/server\.py|\bServeHTTP\b"
)
# Go's idiom says it in words: `handler returned wrong status code: got 500 want 401`
_SAYS_HTTP = re.compile(r"\b(?:handler|response|HTTP)\b[^\n]*\bstatus\b|\bstatus\b[^\n]*\b(?:handler|response)\b", re.I)


def http_exchange(ctx: HintContext) -> str | None:
    """Why the failing path is an HTTP exchange (a status read from a response object, a status with its HTTP
    reason, a test client's request, a server or HTTP client on the stack), or None."""
    code = f"{ctx.code}\n{ctx.explained}"
    words = set(identifier_words(code))
    if _RESPONSE_STATUS.search(code) or _RESPONSE_STATUS.search(ctx.failure.message) or (
        "status" in words and words & {"res", "resp", "response", "reply"}
    ):
        return "a status read from a response object"
    if _STATUS_WITH_REASON.search(ctx.text):
        return "statuses with their HTTP reasons"
    if _CLIENT_CALL.search(code):
        return "a test client's request"
    if _HTTP_FRAME.search(ctx.text):
        return "an HTTP server or client on the stack"
    if _SAYS_HTTP.search(ctx.failure.message):
        return "the message speaks of an HTTP status"
    return None


HTTP_EXCHANGE: Premise[HintContext] = Premise(
    "an HTTP exchange",
    "the failing code path is an HTTP exchange: a status read from a response object, statuses with their HTTP "
    "reasons, a test client's request, or an HTTP server or client on the stack",
    http_exchange,
)


# --- a boundary: a range, an index, a count ------------------------------------------------------------

BOUNDARY_WORDS: frozenset[str] = frozenset({
    "count", "counts", "counted", "counter", "counting", "len", "length", "lengths", "size", "sizes", "qty",
    "quantity", "quantities", "index", "indexes", "indices", "idx", "offset", "offsets", "position", "positions",
    "range", "ranges", "bound", "bounds", "boundary", "limit", "limits", "slice", "nth", "times",
})  # fmt: skip
# in the data: a range (`-128..127`), a count (`256 values`, `3 items`)
_DATA_RANGE = re.compile(r"-?\d+\s*\.\.\.?\s*-?\d+")
_DATA_COUNT = re.compile(r"\b\d+ [a-z]{2,}s\b")


def boundary_words(text: str) -> set[str]:
    return set(identifier_words(text)) & BOUNDARY_WORDS


# a sum or a count built up: what doubling or a missing half, or a total left at zero, can happen to
ACCUMULATION_WORDS = BOUNDARY_WORDS | {"sum", "sums", "total", "totals", "add", "adds", "added", "accumulate",
                                      "accumulated", "tally", "subtotal", "aggregate", "append", "push"}  # fmt: skip


def code_words(ctx: HintContext, vocabulary: frozenset[str]) -> str | None:
    """Words of `vocabulary` in the failing check itself: the code on the failing path, the expressions pytest
    explained, the runner's message (in these two, the names only: the values' reprs and quoted texts are data, and
    stack frames, locations and file paths are places, `src/index.spec.ts:16:34` names no index)
    (`len(...)`, `countHashes(...)`, `toHaveLength`). Never the test's name alone: `decode_to_slice` names what
    the test is about, not that the two numbers it compares are a count or an index."""
    for where, text in (("code", ctx.code), ("call", names_of(without_locations(ctx.explained))),
                        ("message", names_of(without_locations(ctx.failure.message)))):  # fmt: skip
        words = set(identifier_words(text)) & vocabulary
        if words:
            return f"{where}: {', '.join(sorted(words))}"
    return None


# pytest's `where` expressions hold the values' reprs: an object's `<...>` repr and a quoted string are data, never
# code (`tzinfo=<FixedTzOffset UTC 0:00:00>` names no offset the code computed); a function's or a method's repr
# keeps its name (`<bound method Counter.count of <...>>(…)` is a call of `Counter.count`)
_CALLABLE_REPR = re.compile(r"<(?:bound method|function|built-in method|built-in function|method) ([\w.]+)[^<>]*>")
_OBJECT_REPR = re.compile(r"<[^<>\n]*>")
_QUOTED = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")


def names_of(expressions: str) -> str:
    """The expressions without the values' reprs in them: what the code named (innermost repr first)."""
    text = _QUOTED.sub(" ", expressions)
    while True:
        stripped = _OBJECT_REPR.sub(" ", _CALLABLE_REPR.sub(r"\1", text))
        if stripped == text:
            return text
        text = stripped


def code_boundary(ctx: HintContext) -> str | None:
    return code_words(ctx, BOUNDARY_WORDS)


# a collection the code names as one of counts, lengths, indexes (`lengths(words)`, `offsets`): its items are counts
COLLECTION_OF_COUNTS: frozenset[str] = frozenset({
    "counts", "lengths", "sizes", "quantities", "indexes", "indices", "offsets", "positions", "ranges", "bounds",
    "limits",
})  # fmt: skip


def data_boundary(*texts: str | None) -> str | None:
    """A range or a count written in the compared data itself."""
    for text in texts:
        if text and (_DATA_RANGE.search(text) or _DATA_COUNT.search(text)):
            return "the data shows a range or a count"
    return None


# --- an exception check -------------------------------------------------------------------------------

# the failed check's operator as its reporter names it in the failure's block (tape's, TAP YAML's `operator: throws`)
_EXCEPTION_CHECK = re.compile(r"^operator: ['\"]?(?P<op>throws|rejects)['\"]?$", re.M)


def exception_check(ctx: HintContext) -> str | None:
    """The reporter says the failed check is an exception check (`throws`, `rejects`): its expected is what should be
    thrown and its actual what was thrown (or, tape's doesNotThrow, the error caught), never values the code returned."""
    found = _EXCEPTION_CHECK.search(ctx.failure.detail)
    return found["op"] if found else None


# --- the runtime's voice -------------------------------------------------------------------------------

# a failed comparison: the words in it are the compared values', not an error the runtime raised
_ASSERTION_SAYS = re.compile(
    r"^\s*(?:E\s+)?(?:AssertionError\b|AssertionFailedError\b|ComparisonFailure\b|Expected values to be\b|"
    r"expected\b.*\bto\b)|ERR_ASSERTION|\bassertion `left (?:==|!=) right` failed|\bassertion failed\b",
    re.I,
)
# the test's own statement expects an error: its words are the unit's, on purpose
_EXPECTS_AN_ERROR = re.compile(
    r"\b(?:assert\.(?:throws|rejects|doesNotThrow)|assertRaises\w*|raises|toThrow\w*|rejects|should\.throw|"
    r"to\.(?:be\.)?throw\w*|throws|expectPanic|should_panic|assert_raises)\b"
)
# the statement that raised is the code's own: `raise X(...)`, `throw new X(...)`, `panic(...)`, `panic!(...)`
_OWN_RAISE = re.compile(r"^\s*(?:raise\b|throw\b)|\bthrow\s+new\b|\bpanic!?\(|\breject\(|\bErr\(")


def runtime_voice(ctx: HintContext, match: re.Match[str]) -> str | None:
    """The error `match` found is the runtime's own (an error the language or a library raised while the code
    ran), not the unit's voice: not a failed comparison whose values hold the words, not an error the test's own
    statement expects, not a `raise`/`throw`/`panic` written in the statement that raised it (the innermost frame
    of that error's own traceback)."""
    f = ctx.failure
    first = f.message.strip().splitlines()[0] if f.message.strip() else ""
    if _ASSERTION_SAYS.search(first) or f.expected is not None or f.got is not None or f.operands is not None:
        return None
    if _EXPECTS_AN_ERROR.search(statement_at(ctx.root, f.file, f.line) or ""):
        return None
    for path, line in frames(ctx.segment_of(match))[:1]:
        statement = statement_at(ctx.root, short_path(path, ctx.root), int(line))
        if statement and _OWN_RAISE.search(statement):
            return None
    return "the runtime's error, raised while the code ran"


def said_by_runtime(pattern: re.Pattern[str], what: str) -> Premise[HintContext]:
    """The error `pattern` finds (as `said` finds it) is in the runtime's voice (`runtime_voice`)."""

    def check(ctx: HintContext) -> str | None:
        match = pattern.search(ctx.failure.message) or pattern.search(ctx.evidence)
        return runtime_voice(ctx, match) if match else None

    return Premise(
        "the runtime's voice",
        f"the error that says {what} is the runtime's (raised by the language or a library while the code ran): not "
        "the values of a failed comparison, not an error the test's own statement expects, not a raise/throw/panic "
        "in the statement that raised it",
        check,
    )
