"""Call-level facts for function-level (library) failures: what the run observed, what the SDD states.

Observed (`observed_calls`): pytest's assertion introspection (`+  where 6 = mul(-2, 3)`,
`+    and   12 = mul(3, 4)`, nesting read from the indentation), and plain assertions in the
failing source line with the value from the assertion message: `assert f(x) == Y` /
`assert Y == f(x)` (pytest `assert 6 == -6`), `self.assertEqual(f(x), Y)` (unittest
`AssertionError: 6 != -6`), `expect(f(x)).toBe(Y)` (Jest `Received: 6`).

Stated (`statements`): a call followed by a verb and a value or formula — "mul(-2, 3)
returns -6", "`to_cents("19.99")` gives 1999", "`add(a, b)` returns a + b", "f(x) is /
equals / yields / evaluates to / == / → / = / 返回 Y" — in SDD sentences, table rows
(`| clamp(x, lo, hi) | min(max(x, lo), hi) |`), doctest lines (`>>> f(2)` then `4`) and
`assert f(x) == Y` lines in code blocks, and in contract.json function descriptions. A
statement whose call has values for arguments is an example (it applies to exactly that
call); one whose arguments are names is a formula, evaluated on the observed arguments.
A sentence that goes on with "when / if / unless / for ..." is a condition, not a rule.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Literal

from .pyexpr import (
    CALL_START,
    MISSING,
    CallExpr,
    Undefined,
    call_of,
    dotted,
    evaluate,
    matching_paren,
    names_in,
    parse_call,
    parse_expr,
    read_value,
    same_value,
    value_of,
)
from .rundir import IntegrationFailure
from .sdd import Clause

_WHERE = re.compile(r"^(?:E\s+)?\s*\+(\s+)(?:where|and)\s+(.+?)\s*$")
_FUNC_REPR = re.compile(r"<function (?:[\w.]+\.)?(\w+) at 0x[0-9a-fA-F]+>(?=\()")
_BOUND_REPR = re.compile(r"<bound method (?:[\w.]+\.)?(\w+) of .*>(?=\()")
_SOURCE = re.compile(r"^\s*>\s*(?:\d+\s*\|)?\s?(.*\S)\s*$")
_EQUAL_METHODS = frozenset({"assertEqual", "assertEquals", "assert_equal", "strictEqual", "deepStrictEqual", "equal"})
_EXPECT_METHODS = frozenset({"toBe", "toEqual", "toStrictEqual"})
_VERB = re.compile(
    r"^`?\s*(?:(?:should|must|will|shall|always|then)\s+)?"
    r"(?:returns?|gives?|yields?|evaluates? to|equals?|is equal to|produces|results? in|is|==|=>|->|→|=|返回|等于|得到|为)"
    r"(?![\w=])\s*:?\s*",
    re.IGNORECASE,
)
_CONDITION = re.compile(
    r"^\W{0,3}(?:when|if|unless|for|while|except|only|on|in case|provided|as long as|once|after|before|until|"
    r"whenever|otherwise)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"^\s*(?:[.;:,!?)]|$|\n\s*\n|and\b|but\b|so\b)", re.IGNORECASE)
_CONTINUES = re.compile(r"^`?\s*(?:[-+*/%^(\[<>=|&]|\.(?=\S))")
_BOUNDARY = re.compile(r"[\s,;]|[.:](?=\s|$)|$")
_DOCTEST = re.compile(r"^\s*>>>\s*(.+?)\s*$")
_CODE_ASSERT = re.compile(r"^\s*assert\s+(.+?)\s*$")
MAX_WORDS = 12  # a value or formula is a few words; longer runs are prose
MAX_NODES = 60
MAX_OBSERVED = 100  # calls kept from one failure (pytest shows a handful)
MAX_SCAN = 20_000  # characters of one clause read for statements (a clause is a sentence or a table row)


@dataclass(frozen=True)
class ObservedCall:
    """`mul(-2, 3)` returned 6 in this run (value MISSING when the run does not show it)."""

    call: CallExpr
    value: Any
    value_text: str
    depth: int  # 0: the asserted expression itself; deeper: its arguments
    quote: str  # verbatim text of the failure that shows it ("where 6 = mul(-2, 3)")


@dataclass(frozen=True)
class Statement:
    """A place that says what a call returns: `mul(-2, 3)` → `-6`, or `add(a, b)` → `a + b`."""

    call: CallExpr
    expr: ast.expr
    text: str  # the value or formula as written
    doc: str
    line: int
    quote: str  # verbatim slice of the file starting on `line`
    units: frozenset[str]
    section: str
    source: Literal["sdd", "contract"] = "sdd"

    @property
    def formula(self) -> bool:
        """`add(a, b)` → `a + b` (applies to any arguments), as opposed to an example such as `add(2, 3)` → `5`."""
        return self.call.parameters() is not None and bool(self.call.args)

    def expected(self, observed: CallExpr) -> Any:
        """What this statement says `observed` returns: a value, MISSING (it does not apply), Undefined raised."""
        if observed.name != self.call.name:
            return MISSING
        given = observed.literal_args()
        if given is None:
            return MISSING
        names = _bind(self.call, *given)
        if names is None:
            return MISSING
        return evaluate(self.expr, names)

    def where(self) -> str:
        return (
            f'"{self.section}", {self.doc.rsplit("/", 1)[-1]}:{self.line}'
            if self.section
            else f"{self.doc}:{self.line}"
        )


# -- observed ------------------------------------------------------------------------------


def observed_calls(failure: IntegrationFailure) -> list[ObservedCall]:
    """Calls with their values, from introspection first, then from the failing assertion line."""
    seen: dict[tuple[str, str], ObservedCall] = {}
    for text in (failure.message, failure.stack):
        for line in (text or "").splitlines():
            m = _WHERE.match(line)
            found = _split_where(m.group(2)) if m else None
            if m and found:
                value_text, call, quote = found
                depth = max(len(m.group(1)) - 2, 0) // 2
                seen.setdefault(
                    (call.text, value_text), ObservedCall(call, read_value(value_text), value_text, depth, quote)
                )
    plain = _plain_assertion(failure)
    if plain is not None and plain.call.literal_args() is not None:
        if not any(o.call.text == plain.call.text for o in seen.values()):
            seen[(plain.call.text, plain.value_text)] = plain
    return sorted(seen.values(), key=lambda o: o.depth)[:MAX_OBSERVED]


def _split_where(body: str) -> tuple[str, CallExpr, str] | None:
    """`6 = mul(-2, 3)` → ("6", mul(-2, 3), quote); the value may itself contain " = "."""
    at = body.find(" = ")
    while at > 0:
        right = _BOUND_REPR.sub(r"\1", _FUNC_REPR.sub(r"\1", body[at + 3 :].strip()))
        call = parse_call(right)
        if call is not None:
            return body[:at].strip(), call, f"where {body}" if len(body) < 200 else body[at + 3 :].strip()
        at = body.find(" = ", at + 1)
    return None


def failing_source(failure: IntegrationFailure) -> tuple[ast.Module, str] | None:
    """The first source line the stack marks with `>` (the test's assertion), parsed, and its text."""
    for line in (failure.stack or "").splitlines():
        m = _SOURCE.match(line)
        if not m:
            continue
        text = m.group(1).rstrip(";").strip()
        try:
            return ast.parse(text), text
        except (SyntaxError, ValueError, RecursionError):
            return None
    return None


def _plain_assertion(failure: IntegrationFailure) -> ObservedCall | None:
    source = failing_source(failure)
    stmt = source[0].body[0] if source and source[0].body else None
    pair: tuple[ast.expr, int] | None = None  # (the call node, its operand position)
    if isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Compare) and isinstance(stmt.test.ops[0], ast.Eq):
        left, right = stmt.test.left, stmt.test.comparators[0]
        pair = (left, 0) if isinstance(left, ast.Call) else (right, 1) if isinstance(right, ast.Call) else None
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute):
        outer = stmt.value
        if outer.func.attr in _EQUAL_METHODS and len(outer.args) >= 2:
            first, second = outer.args[0], outer.args[1]
            pair = (first, 0) if isinstance(first, ast.Call) else (second, 1) if isinstance(second, ast.Call) else None
        inner = outer.func.value
        if outer.func.attr in _EXPECT_METHODS and isinstance(inner, ast.Call) and inner.args:
            pair = (inner.args[0], 0) if isinstance(inner.args[0], ast.Call) else None
    if pair is None or not isinstance(pair[0], ast.Call):
        return None
    call = call_of(pair[0])
    if call is None:
        return None
    value_text = _asserted_value(failure, pair[1])
    value = read_value(value_text) if value_text else MISSING
    return ObservedCall(call, value, value_text or "", 0, source[1] if source else call.text)


def _asserted_value(failure: IntegrationFailure, position: int) -> str | None:
    """The observed operand of the failed comparison, as the framework printed it."""
    for line in f"{failure.message}\n{failure.stack}".splitlines():
        text = re.sub(r"^E\s+", "", line.strip())
        for pattern, op in (
            (r"^(?:AssertionError:\s*)?assert\s+(.+)$", ast.Eq),
            (r"^AssertionError:\s*(.+)$", ast.NotEq),
        ):
            m = re.match(pattern, text)
            node = parse_expr(m.group(1)) if m else None
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], op):
                return ast.unparse([node.left, node.comparators[0]][position])
        m = re.match(r"^Received:\s+(.+)$", text)
        if m:
            return m.group(1)
    return None


# -- stated --------------------------------------------------------------------------------


def statements(clauses: list[Clause], docs: list[tuple[str, str]]) -> list[Statement]:
    """Every call statement of the SDD: sentences and table rows (clauses), doctest and assert lines (raw docs)."""
    out: list[Statement] = []
    for c in clauses:
        if c.raw.lstrip().startswith("|"):
            out += _row_statements(c)
        else:
            out += statements_in(c.raw, c.doc, c.line, units=c.units, section=c.section)
    for rel, text in docs:
        out += _code_statements(rel, text)
    return list({(s.doc, s.line, s.call.text, s.text): s for s in out}.values())


def statements_in(text: str, doc: str, line: int, *, units=frozenset(), section="", source="sdd") -> list[Statement]:
    """`call verb value` statements in a piece of prose that starts on `line` of `doc` (its first MAX_SCAN chars)."""
    text = text[:MAX_SCAN]
    out = []
    lines_before, counted = 0, 0
    for m in CALL_START.finditer(text):
        end = matching_paren(text, m.end() - 1)
        verb = _VERB.match(text[end + 1 : end + 41]) if end is not None else None
        call = parse_call(text[m.start() : end + 1]) if verb and end is not None else None
        if call is None or verb is None or end is None:
            continue
        found = _value_after(text, end + 1 + verb.end(), call)
        if found is None:
            continue
        expr, stop = found
        quote = text[m.start() : stop].strip().rstrip(".,;:")
        lines_before, counted = lines_before + text.count("\n", counted, m.start()), m.start()
        out.append(
            Statement(call, expr, ast.unparse(expr), doc, line + lines_before, quote, frozenset(units), section, source)
        )
    return out


def _value_after(text: str, start: int, call: CallExpr) -> tuple[ast.expr, int] | None:
    """The longest run of words after the verb that is a value (or a formula over the call's parameters)."""
    ends = [start + m.start() for m in _BOUNDARY.finditer(text[start : start + 160])][:MAX_WORDS]
    for end in sorted(set(ends), reverse=True):
        piece = text[start:end].strip().rstrip(".,;:").strip()
        expr = parse_expr(piece) if piece else None
        if expr is not None and _acceptable(expr, call):
            tail = text[end : end + 80]
            if _CONTINUES.match(tail):
                return None  # a fragment of a longer expression the triager cannot evaluate
            params = call.parameters()
            if _CONDITION.match(tail):
                return None  # "returns 0 when the list is empty": a condition, not the rule
            if params is not None and not names_in(expr) & {p for p, _ in params} and not _SENTENCE_END.match(tail):
                return None
            return expr, end
    return None


def _acceptable(expr: ast.expr, call: CallExpr) -> bool:
    """A value, or (for a call written with parameter names) a formula over those names, in what `evaluate` knows."""
    params = call.parameters()
    allowed = ({p for p, _ in params} if params is not None and call.args else set()) | {"True", "False", "None"}
    nodes = list(ast.walk(expr))
    if len(nodes) > MAX_NODES:
        return False
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    for n in nodes:
        if isinstance(n, ast.Call) and (dotted(n.func) == call.name or dotted(n.func) not in _SAFE_CALLS):
            return False  # another unit's function, or a recursive definition ("f(x) is f(x - 1) + 1")
        if isinstance(n, ast.Name | ast.Attribute) and id(n) not in called and dotted(n) not in allowed:
            return False  # prose ("the sum"), or a name the statement does not bind
    return True


_SAFE_CALLS = frozenset(
    "abs min max round len sum int float str bool sorted Decimal Fraction date datetime time timedelta "
    "decimal.Decimal fractions.Fraction datetime.date datetime.datetime datetime.time datetime.timedelta".split()
)


def _row_statements(clause: Clause) -> list[Statement]:
    """`| fizz(15) | "FizzBuzz" |`: a cell that is exactly a call, followed by a cell that is a value."""
    cells = [c for c in clause.raw.strip().strip("|").split("|")]
    out = []
    for left, right in zip(cells, cells[1:], strict=False):
        call = parse_call(left)
        expr = parse_expr(right)
        if call is None or expr is None or not _acceptable(expr, call):
            continue
        quote = clause.raw.strip()
        out.append(
            Statement(call, expr, ast.unparse(expr), clause.doc, clause.line, quote, clause.units, clause.section)
        )
    return out


def _code_statements(rel: str, text: str) -> list[Statement]:
    """Doctest (`>>> f(2)` then `4`) and `assert f(2) == 4` lines, in code blocks or anywhere."""
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        doctest, code = _DOCTEST.match(line), _CODE_ASSERT.match(line)
        if doctest and i + 1 < len(lines) and lines[i + 1].strip() and not lines[i + 1].lstrip().startswith(">>>"):
            call, expr = parse_call(doctest.group(1)), parse_expr(lines[i + 1].strip())
        elif code and isinstance(node := parse_expr(code.group(1)), ast.Compare) and isinstance(node.ops[0], ast.Eq):
            call, expr = (call_of(node.left) if isinstance(node.left, ast.Call) else None), node.comparators[0]
        else:
            continue
        if call is not None and expr is not None and _acceptable(expr, call):
            out.append(Statement(call, expr, ast.unparse(expr), rel, i + 1, line.strip(), frozenset(), ""))
    return out


def _bind(spec: CallExpr, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """Match observed argument values against the statement's call: names bind, values must be equal."""
    params = spec.parameters()
    if params is not None and spec.args:  # a formula: bind like Python binds arguments to parameters
        names: dict[str, Any] = {}
        if len(args) > len(params):
            return None
        for (name, _default), value in zip(params, args, strict=False):
            names[name] = value
        for key, value in kwargs.items():
            if key not in {p for p, _ in params} or key in names:
                return None
            names[key] = value
        for name, default in params:
            if name not in names:
                if default is MISSING:
                    return None
                names[name] = default
        return names
    try:  # an example: the same argument values
        want_args = tuple(value_of(a) for a in spec.args)
        want_kwargs = {k: value_of(v) for k, v in spec.keywords}
    except Undefined:
        return None
    same = len(want_args) == len(args) and all(same_value(a, b) for a, b in zip(want_args, args, strict=True))
    if not same or want_kwargs.keys() != kwargs.keys():
        return None
    return {} if all(same_value(want_kwargs[k], kwargs[k]) for k in kwargs) else None
