"""A hint for every failure: specific and true, or the facts only (`hint_confidence`).

Every rule is data (`hint_premises.Rule`): its premises and what it says when they hold. They are tried in
order: the framework's own (`Framework.hint_rules`: go-cmp and node:assert diffs, Rust panics), the
exception rules that read more than the error text (`hint_raised`: another exception expected by the
test's own code, a function used as a value), the error rules of `hint_rules` (a pattern the runner's
error text must say), an exception raised inside a library called from the project (`hint_raised`),
the HTTP status rules of `hint_http` (only on an HTTP exchange), then the rules over the two compared
values (`hint_values`, `hint_text`: read in their reporter's grammar, directional ones only when the
reporter says which value is expected). When none
speaks, the failure carries the facts: where it failed, the call and what it returned, the raised
error, or where the values first differ, with both operands named as the reporter names them —
`hint_confidence` "facts". No hint is "fix the bug" or a restatement of expected/got.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .go_source import unread_first_message
from .hint_context import HintContext, error_type, short_path, source_frame
from .hint_diff import DIFF_RULES, field_facts
from .hint_http import HTTP_RULES
from .hint_pair import clip as _clip
from .hint_premises import Rule, exception_check, names_of
from .hint_raised import FIRST_RULES, LAST_RULES, raised
from .hint_rules import ERROR_RULES
from .hint_values import VALUE_RULES, operand_pair, value_facts, value_hint
from .output_text import labelled_pairs, visible_controls
from .result_models import HintConfidence, TestFailure
from .rust_source import OWN_DOC_TEST, doc_test

# a framework's own rule (over the failure's HintContext)
FrameworkRule = Rule[HintContext]

_PHASES = (("setup", "so the test body never ran"), ("teardown", "after the test body ran"))


@dataclass(frozen=True)
class Hint:
    text: str
    confidence: HintConfidence


def all_rules(framework_rules: Sequence[Rule[Any]] = ()) -> tuple[Rule[Any], ...]:
    """Every hint rule, in the order they are tried (framework rules first, when given)."""
    return (*framework_rules, *FIRST_RULES, *ERROR_RULES, *LAST_RULES, *HTTP_RULES, *DIFF_RULES, *VALUE_RULES)


def build_hint(failure: TestFailure, root: Path | None = None, rules: Sequence[FrameworkRule] = ()) -> str:
    return hint_for(failure, root, rules).text


def hint_for(failure: TestFailure, root: Path | None = None, rules: Sequence[FrameworkRule] = ()) -> Hint:
    ctx = HintContext(failure, root)
    specific = _first((*rules, *FIRST_RULES, *ERROR_RULES, *LAST_RULES, *HTTP_RULES, *DIFF_RULES), ctx) or _value_hint(
        ctx
    )
    lead = _call_lead(ctx)
    if specific and _several_messages(failure.message):  # the rule read the first: the others are shown whole
        specific = f"{specific.rstrip('.')}.{_other_pairs(failure.message)} The whole message: {_printed(failure.message, 300)}."
    hint = (
        Hint(f"{lead}. {specific}" if lead else specific, "specific") if specific else Hint(_facts(ctx, lead), "facts")
    )
    for phase, consequence in _PHASES:
        if failure.message.startswith(f"error in {phase}"):
            error = error_type(ctx) or "an error"
            phase_lead = f"The test's {phase} (a fixture or hook) raised {error}{ctx.where}, {consequence}"
            if hint.confidence == "specific":
                return Hint(f"{phase_lead}. {hint.text}", "specific")
            return Hint(f"{phase_lead}.", "specific")
    return hint


def _first(rules: Sequence[Rule[HintContext]], ctx: HintContext) -> str | None:
    return next((hint for rule in rules if (hint := rule.hint(ctx))), None)


def _value_hint(ctx: HintContext) -> str | None:
    pair = operand_pair(ctx.failure, ctx)
    if pair is None or exception_check(ctx):  # what should be thrown and what was: no rule over two values
        return None
    try:
        return value_hint(pair)
    except RecursionError:  # a value nested deeper than the rules walk: no claim
        return None


# pytest's assertion explanation: "assert 6 == 11\n +  where 6 = total([1, 2, 3, 4])"
_RETURNED = re.compile(r"^\s*\+\s+where (?P<value>[^\n]+?) = (?P<call>[\w.]+\([^\n]*\))\s*$", re.M)


# a method call pytest explains in two steps: "where False = <built-in method startswith of str object at 0x…>('x')"
# then "where <built-in method startswith of str object at 0x…> = 'abc'.startswith" (the receiver)
_METHOD_RETURNED = re.compile(
    r"^\s*\+\s+where (?P<value>[^\n]+?) = <(?:built-in |bound )?method (?P<method>\w+) of [^\n>]*>\((?P<args>[^\n]*)\)[ \t]*\n"
    r"\s*\+\s+where <(?:built-in |bound )?method (?P=method) of [^\n>]*> = (?P<receiver>[^\n]+)\.(?P=method)[ \t]*$",
    re.M,
)


def _call_lead(ctx: HintContext) -> str | None:
    """The call pytest shows and what it returned (`add(2, 2)` returned 5 where the test expects 6); a method call
    with its receiver (`'Date …'.startswith('Unable to parse')` returned False)."""
    f = ctx.failure
    for text in (f.message, ctx.evidence):  # the first explanation pytest printed: a method's or a call's
        method, match = _METHOD_RETURNED.search(text), _RETURNED.search(text)
        if method or match:
            break
    if method is not None and (match is None or method.start() <= match.start()):
        call = f"{_clip(method['receiver'], 60)}.{method['method']}({_clip(method['args'], 80)})"
        value = method["value"].strip()
    elif match is not None:
        call, value = _clip(match.group("call")), match.group("value").strip()
    else:
        return None
    lead = f"`{call}` returned {_clip(value)}"
    if f.expected is not None and f.got is not None and f.got.strip() == value:
        lead += f" where the test expects {_clip(f.expected)}"
    return lead


def _facts(ctx: HintContext, lead: str | None) -> str:
    """What is known without a claim of cause: the place, the call, the error, or where the values differ."""
    f = ctx.failure
    location = f" at {short_path(f.file, ctx.root)}:{f.line}" if f.file and f.line else ""
    doc = doc_test(f.name)
    check = f"the doc test of `{doc.item}` (its example{location})" if doc else f"the check{location}"
    own_doc = OWN_DOC_TEST.match(f.name.strip())
    if own_doc and f.file == own_doc["file"] and f.line == int(own_doc["line"]):  # placed at the example's fence
        check = f"the doc example{location}"
    if f.declared:  # no frame of the failing check in the test file: the line is the test's declaration
        check = f"the test declared{location}"
    if location and unread_first_message(f, ctx.root):  # a Go log line and an error line print alike
        check = f"the test (its first message{location}, a log or an error line: its source was not read)"
    parts = [f"Facts only (no hint rule's conditions hold): {check} failed"]
    if lead:
        parts.append(f"{lead}")
    error = error_type(ctx) or (raised(ctx) or (None, ""))[0]
    pair = operand_pair(f, ctx)
    ops = f.operands
    if pair is not None:
        try:
            parts.append(value_facts(pair))
        except RecursionError:
            parts.append("the two values differ (nested too deep to name where)")
    elif (diff := field_facts(ctx)) is not None:
        parts.append(diff)
    elif ops is not None and ops.truth is not None and ops.first is not None:
        parts.append(_truth_facts(ctx, ops.first, ops.truth))
    elif ops is not None and ops.shortened and ops.first is not None and ops.second is not None:
        parts.append(f"the runner printed the values abbreviated, so they are not known: {ops.labels[0]} "
                     f"{_clip(ops.first)}, {ops.labels[1]} {_clip(ops.second)}")  # fmt: skip
    elif error:
        said = (raised(ctx) or (None, ""))
        message = f": {_printed(said[1], 200)}" if said[0] == error and said[1] else ""
        parts.append(f"{error} was raised{_raised_place(ctx, error)}{message}")
    else:
        statement = _failing_statement(f.detail)
        if statement:
            frame = source_frame(ctx.evidence, None, ctx.root)
            printed = _printed_comparison(f.message)
            values = (f"; pytest printed its operands: {_printed(printed, 300)}" if printed
                      else f"; the runner's message was cut short ({_printed(f.message, 300)}), so the values it "
                           "checks are not known here" if _cut_message(f.message)
                      else f"; the runner said: {_printed(f.message, 300)}" if not _bare_assertion(f.message)
                      else " and the values it checks were not reported (assert a comparison, `a == b`, so the runner "
                           "shows both)")  # fmt: skip
            parts.append(f"`{_clip(statement)}`{f' at {frame}' if frame else ''} does not hold{values}")
        elif _says_more(f):
            parts.append(f"the runner said: {_printed(f.message, 300)}")
    if pair is not None and _several_messages(f.message):
        if others := _other_pairs(f.message):
            parts.append(others.strip()[0].lower() + others.strip()[1:])
        parts.append(f"the whole message: {_printed(f.message, 300)}")
    return "; ".join(p.rstrip(".") for p in parts) + "."


def _raised_place(ctx: HintContext, error: str) -> str:
    """Where `error` was raised (the innermost frame of its own traceback) and the test's line that called into it: the
    test's line alone is named as the call, never as where the error was raised."""
    f = ctx.failure
    site = ctx.raise_site(error)
    call = f"{short_path(f.file, ctx.root)}:{f.line}" if f.file and f.line and ctx.own_place else None
    if site and call and site != call:
        return f" in {site}, called from the test at {call}"
    if site:
        return f" at {site}"
    return f" during the test's call at {call}" if call else " while the test ran"


def _truth_facts(ctx: HintContext, value: str, requirement: str) -> str:
    """A truth test (`assert not x`, assertTrue, `t.ok`): the statement, the value it tested and what it requires of it
    — no equality with a boolean, so no value or type is claimed."""
    statement = _failing_statement(ctx.failure.detail)
    expr = next((e for v, e in ctx.where_lines if v.strip() == value.strip()), None)
    tested = f", `{_clip(expr)}`," if expr else ""
    checked = f"`{_clip(statement)}` is" if statement else "it is"
    return (f"{checked} a truth test, not an equality with a boolean: the value it tested{tested} is "
            f"{_clip(value)}, and the test requires it to be {requirement}")


# pytest's rewritten assertion, first line: `assert <value> <operator> <value>` (the values as their reprs)
_PYTEST_ASSERT = re.compile(r"^(?:AssertionError: )?assert (?P<compared>.+)$")
# a comparison operator between the printed values, once their quoted texts and `<...>` reprs are taken out
_COMPARISON = re.compile(r" (?:not in|in|is not|is|==|!=|<=|>=|<|>) ")


def _printed_comparison(message: str) -> str | None:
    """pytest's first explanation line when it printed both operands of a comparison (`assert 'a' in "bcd"`): the
    values are reported, though no rule over two values reads a containment or an order check."""
    first = _PYTEST_ASSERT.match(message.strip().split("\n", 1)[0])
    if first is None:
        return None
    bare = names_of(first["compared"])  # the values' quoted texts and `<...>` reprs are data, not operators
    return first.group(0) if _COMPARISON.search(bare) else None


def _cut_message(message: str) -> bool:
    """The message is a runner's one line cut to the terminal's width (pytest's short summary, `Asserti...`): what
    the rest said is not known, so it proves neither that values were reported nor that they were not."""
    text = message.strip()
    return "\n" not in text and text.endswith("...")


def _bare_assertion(message: str) -> bool:
    """The message is a bare `assert x` (an AssertionError, its `assert …` line or none): it reports no values. A
    runner's own words (`DID NOT WARN …`, `Regex pattern did not match …`) report what it checked, and are quoted."""
    first = message.strip().split("\n", 1)[0]
    return re.fullmatch(r"(?:AssertionError(?::\s*|$))?(?:assert\b.*)?", first) is not None


def _printed(text: str, limit: int) -> str:
    """A runner's text quoted as printed (its lines joined by ` / `, a control character as its escape: `\\x00`),
    clipped to `limit`."""
    lines = (line.strip() for line in visible_controls(text).strip().splitlines() if line.strip())
    return "«" + _clip(" / ".join(lines), limit) + "»"


def _says_more(f: TestFailure) -> bool:
    """The message says more than the test's name or a bare `failed`."""
    text = f.message.strip()
    return bool(text) and text not in (f.name.strip(), "failed", "failed (no message)", "not ok")


def _other_pairs(message: str) -> str:
    """How many expected/got pairs the runner printed after the first (the one read), when it printed several."""
    pairs = labelled_pairs(message)
    if pairs is None or not pairs[1]:
        return ""
    return f" The runner printed {pairs[1]} other expected/got pair{'s' if pairs[1] > 1 else ''} after this one."


def _several_messages(message: str) -> bool:
    """The message is several messages (a Go test's t.Errorf lines), not one value's lines or a diff: only the first
    was read as a pair, so the rest is shown whole."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return len(lines) > 1 and not any(line[0] in "+-<>|{}[]" or _LABEL_LINE.match(line) for line in lines)


# a line that labels one value (jest's `Expected:`, a doctest's `Got:`, Rust's `left:`) or explains one (pytest)
_LABEL_LINE = re.compile(r"^(?:Expected|Received|Got|expected|actual|left|right|want|got)\s*:|^E\s|^where\b")


def _failing_statement(detail: str) -> str | None:
    """The innermost line pytest marks with `>` (the statement that raised), if any: a `>` line its `E` lines follow
    (npm's `> node test.js` banner is no statement)."""
    found = _PYTEST_STATEMENT.findall(detail)
    return found[-1].strip() if found else None


# pytest's traceback entry: the statement marked `>`, then (after the entry's source lines) its `E` lines
_PYTEST_STATEMENT = re.compile(r"^>\s+(\S.*)\n(?:(?![>E]\s).*\n)*?E\s", re.M)
