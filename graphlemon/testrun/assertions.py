"""The two compared values of an assertion message, with what the reporter says about them.

Each dialect says which printed operand is expected, or does not: jest's `Expected:` / `Received:`,
chai's `expected <actual> to equal <expected>`, node's `actual !== expected`, Go's `got X, want Y`
and doctest's `Expected:` / `Got:` name their sides; pytest's `assert left == right`, Rust's
`left:` / `right:` and unittest's `first != second` name no side (pytest's diff calls the right side
"expected" only by its position: `assert six.u("ሴ") == six.unichr(0x1234)` has the code under test on the
right). A printed Python assertion (pytest's `>` line, a traceback's quoted line) settles the sides when its
operands do: a name such as `expected` / `want` against `actual` / `result`, one literal against a computed
value (a literal is never what the code under test produced, nor is a builtin or a standard library value type
applied to literals: `ord("l")`, `defaultdict(int, {"a": 1})`, `datetime(2011, 2, 1)`),
a constant (`MAXSIZE`, `mod.LIMIT`) against a call, or a directly parametrized argument of a pytest test (its
data, written in the test file) against an expression that calls code. unittest's abbreviated reprs (`'abc[58 chars]xyz'`)
are not values: they are kept as printed and marked `shortened`.
"""

from __future__ import annotations

import ast
import itertools
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, replace

from .output_text import clip
from .result_models import Operands, TruthRequirement, ValueGrammar

VALUE_CHARS = 1_000_000  # compared whole (bounded); shortened for display after the hint (values.py)


@dataclass(frozen=True)
class Compared:
    """Two operands in the order the reporter printed them, its labels for them, and which one is expected
    (`expected_at` 0 or 1; None when the reporter does not say)."""

    first: str
    second: str
    labels: tuple[str, str]
    expected_at: int | None
    grammar: ValueGrammar = "any"
    data_names: tuple[str, ...] = ()  # names whose values are the test's own data (pytest's direct parametrize)
    # a truth test (`assert x`, `assert not x`, assertTrue, tape's ok, chai's `to be truthy`): "truthy"/"falsy", what
    # it requires of its one value (`first` is the boolean that value must equal only when the value is a boolean)
    truth: TruthRequirement | None = None

    def operands(self, shortened: bool = False) -> tuple[str | None, str | None, Operands]:
        """(expected, got, operands) for a TestFailure: the values are expected/got only when sided and whole. A truth
        test is no equality with a boolean: its value is expected/got only when it is itself a boolean."""
        if self.truth is not None and not (is_boolean(self.second, self.grammar) and is_boolean(self.first, self.grammar)):
            kept = Operands(labels=("value tested", "required"), sided=False, grammar=self.grammar,
                            first=self.second, truth=self.truth)  # fmt: skip
            return None, None, kept
        if self.expected_at is None or shortened:
            kept = Operands(labels=self.labels, sided=self.expected_at is not None, grammar=self.grammar,
                            shortened=shortened, first=self.first, second=self.second)  # fmt: skip
            return None, None, kept
        i = self.expected_at
        values, labels = (self.first, self.second), self.labels
        sided = Operands(labels=(labels[i], labels[1 - i]), sided=True, grammar=self.grammar)
        return values[i], values[1 - i], sided


def sided(expected: str, got: str, grammar: ValueGrammar, labels: tuple[str, str] = ("expected", "got")) -> Compared:
    return Compared(expected, got, labels, 0, grammar)


_BOOLEANS = {"python": ("True", "False")}


def is_boolean(text: str, grammar: ValueGrammar) -> bool:
    """`text` is a boolean literal of the grammar (Python's True/False; true/false elsewhere)."""
    return text.strip() in _BOOLEANS.get(grammar, ("true", "false"))


def truth_test(value: str, requirement: TruthRequirement, grammar: ValueGrammar) -> Compared:
    """A truth test of one printed value: the boolean it must be is its expected value only when it is a boolean."""
    wanted = _BOOLEANS.get(grammar, ("true", "false"))[0 if requirement == "truthy" else 1]
    return Compared(wanted, clip(value, VALUE_CHARS), ("expected", "got"), 0, grammar, truth=requirement)


# node:assert's names for its call's two arguments (`assert.equal(actual, expected)`): positions, not what the code
# produced and what the test requires (a test may write `assert.equal(false, isMatch(x))`)
NODE_ARGUMENTS = ("actual argument", "expected argument")
# jest's printed value: a quoted string, which may run over lines to its closing quote, or the rest of its line. A
# block's `Received:` is the line right after its `Expected:` value: a failure may print several blocks (two expect()
# errors; toHaveBeenNthCalledWith's `Expected:` above a `Received` list of calls), and a pair is never read across two
_JEST_VALUE = r'"(?:[^"\\]|\\.)*"(?=[ \t]*$)|\S[^\n]*?'
# (pattern, group printed first, group printed second, labels, index of the expected one or None, grammar)
_Dialect = tuple[re.Pattern[str], str, str, tuple[str, str], int | None, ValueGrammar]
_DIALECTS: tuple[_Dialect, ...] = (
    # jest / vitest expect(): "Expected: 401\nReceived: 500", one block's two lines (`_JEST_BLOCK`)
    (_JEST_BLOCK := re.compile(rf"^[ \t]*Expected(?: value)?:[ \t]*(?P<e>{_JEST_VALUE})[ \t]*\n"
                               rf"[ \t]*Received(?: value)?:[ \t]*(?P<g>{_JEST_VALUE})[ \t]*$", re.M),
     "e", "g", ("expected", "received"), 0, "js"),
    # referee (sinon's assertions): "[assert.isTrue] Expected false to be true" (a boolean check: its value and the
    # one it must have)
    (re.compile(r"^\s*(?:AssertionError: )?\[(?:assert|refute)\.\w+\] Expected (?P<g>true|false) to be (?P<e>true|false)\s*$",
                re.M), "g", "e", ("actual", "expected"), 1, "js"),
    # chai / vitest: "expected 500 to be 401", "expected [ 1 ] to deeply equal [ 2 ]" (a sentence: read only when each
    # side is one whole value; vitest's `expected "spy" to be called 1 times, but got 2 times` compares no values)
    (_CHAI := re.compile(r"expected (?P<g>.+?) to (?:be|equal|deeply equal|strictly equal|eql|have length|have property|"
                r"include|match|be close to) (?P<e>.+?)(?: // Object\.is equality)?$", re.M),
     "g", "e", ("actual", "expected"), 1, "js"),
    # node:assert's AssertionError as node prints it uncaught (util.inspect of the error's properties): "  actual:
    # [ 95, 47, 58 ],\n  expected: [ 96, 48, 59 ],\n  operator: 'deepEqual'" (each value on its one line, the operator
    # right after: a value inspect broke over lines is not read; the call's argument positions, not sides)
    (re.compile(r"^ {2}actual: (?P<g>\S.*?),\n {2}expected: (?P<e>\S.*?),\n {2}operator: '\w+'\n", re.M),
     "g", "e", NODE_ARGUMENTS, None, "js"),
    # node:assert: "Expected values to be strictly equal:\n\n500 !== 401" (actual !== expected: the call's argument
    # positions, not sides; `js_source` reads the test's call for them)
    (re.compile(r"^\s*(?:AssertionError(?: \[ERR_ASSERTION\])?: )?(?P<g>\S.*?) !== (?P<e>\S.*?)\s*$", re.M),
     "g", "e", NODE_ARGUMENTS, None, "js"),
    # node:assert's legacy equal: "AssertionError [ERR_ASSERTION]: '0.5' == '2'" (its generated message is
    # `inspect(actual) == inspect(expected)`; read only when each side is one whole value)
    (_NODE_EQUAL := re.compile(r"^\s*AssertionError \[ERR_ASSERTION\]: (?P<g>\S.*?) == (?P<e>\S.*?)\s*$", re.M),
     "g", "e", NODE_ARGUMENTS, None, "js"),
    # unittest assertEqual(first, second): "AssertionError: 4 != 3" (no side is expected); assertAlmostEqual adds
    # its tolerance after the second value: "1.8 != 1.75 within 7 places (0.05 difference)", "… within 0.1 delta (…)".
    # Free text around `!=` is read only when each side is one printed value (`one_value`): go's `#21. Match(`a`)
    # != path.Match(...). Got false, <nil> want true, <nil>` compares no two values at its `!=`
    (_NOT_EQUAL := re.compile(r"^(?!.*\bassert )\s*(?:AssertionError: )?(?:(?:Lists|Tuples|Sets|Sequences|Dicts|Strings|Items) "
                r"differ: )?(?P<g>\S.*?) != (?P<e>\S.*?)(?: within \S+ (?:places|delta) \(\S+ difference\))?\s*$", re.M),
     "g", "e", ("first", "second"), None, "python"),
    # pytest: "assert 500 == 401" (no side is expected: only the printed assertion settles them, `settled`)
    (re.compile(r"assert (?P<g>.+?) == (?P<e>.+?)$", re.M), "g", "e", ("left", "right"), None, "python"),
    # rust: "  left: 500\n right: 401" (and the older "left: `500`,\n right: `401`"): no side is expected
    (re.compile(r"^\s*left:\s*`?(?P<g>.*?)`?,?\s*\n\s*right:\s*`?(?P<e>.*?)`?\s*$", re.M),
     "g", "e", ("left", "right"), None, "rust"),
    # testify: "expected: 401\n actual  : 500"
    (re.compile(r"^\s*expected\s*:\s*(?P<e>.+?)\s*\n\s*actual\s*:\s*(?P<g>.+?)\s*$", re.M | re.I),
     "e", "g", ("expected", "actual"), 0, "go"),
    # go idiom: "got 500, want 401"
    (re.compile(r"\bgot:? (?P<g>.+?),? want(?:ed)?:? (?P<e>.+?)$", re.M | re.I), "g", "e", ("got", "want"), 1, "go"),
    # "Person's plural should be People, but got people": the message's own words name the sides (read only when
    # each side is one whole value)
    (_SHOULD_BE := re.compile(r"\bshould (?:be|equal) (?P<e>\S.*?),? but (?:got|was|is) (?P<g>\S.*?)\s*$", re.M | re.I),
     "e", "g", ("expected", "got"), 0, "any"),
    # "expected 401, got 500" / "expected 401 but got 500"
    (re.compile(r"\bexpected:? (?P<e>.+?),? (?:but )?(?:got|received|was):? (?P<g>.+?)$", re.M | re.I),
     "e", "g", ("expected", "got"), 0, "any"),
)  # fmt: skip
# truth tests: (pattern, grammar, what it requires of its value `g`, or None when the pattern's `r` group says)
_IMPLIED: tuple[tuple[re.Pattern[str], ValueGrammar, TruthRequirement | None], ...] = (
    (re.compile(r"^(?:AssertionError: )?(?P<g>.+?) is not true$", re.M), "python", "truthy"),  # unittest assertTrue
    (re.compile(r"^(?:AssertionError: )?(?P<g>.+?) is not false$", re.M), "python", "falsy"),  # unittest assertFalse
    # pytest, a bare check: "assert False\n +  where False = is_even(4)"; "assert not True"
    (re.compile(r"^(?:AssertionError: )?assert (?P<g>False|None|0|''|\[\]|\{\})\s*$", re.M), "python", "truthy"),
    (re.compile(r"^(?:AssertionError: )?assert not (?P<g>.+?)\s*$", re.M), "python", "falsy"),
    # chai's `.ok` / `.not.ok`: "expected 0 to be truthy" (its `.true` is an equality: "expected 0 to be true")
    (re.compile(r"\bexpected (?P<g>\S.*?) to be (?P<r>truthy|falsy)$", re.M), "js", None),
)
# node's assert.ok / assert(x): its operator is `==` and its expected `true`, as `assert.equal(x, true)`'s, but it is a
# truth test of its one argument
NODE_FALSY = re.compile(r"The expression evaluated to a falsy value|No value argument passed to `assert\.ok\(\)`")
_IS = re.compile(r"^(?:AssertionError: )?assert (?P<g>.+?) is (?P<e>True|False|None)$", re.M)  # pytest `is`


_NODE_DIFF = re.compile(r"^\s*\+ actual - expected[^\n]*\n", re.M)
_NODE_DIFF_LINE = re.compile(r"^\s*(?P<mark>[-+ ]) (?P<text>.*)$")


def node_assert_diff(text: str) -> tuple[str | None, str | None]:
    """node:assert's `+ actual - expected` diff: `-` (and common) lines are expected, `+` (and common) lines got.

    Node prints it when a value has no short form (`undefined` against an object, multi-line values) and
    then leaves `expected` / `actual` out of its TAP YAML. A diff that leaves lines out (`... Lines skipped`)
    holds no whole value: none is read (`hint_diff` reads its changed field).
    """
    header = _NODE_DIFF.search(text or "")
    if header is None or "skipped" in header.group(0):  # `... Lines skipped`: not two whole values
        return None, None
    expected: list[str] = []
    got: list[str] = []
    for line in text[header.end() :].splitlines():
        if not line.strip() or re.fullmatch(r"\s*\^|\s*\.\.\.", line):
            continue
        match = _NODE_DIFF_LINE.match(line)
        if match is None:
            break
        if match["mark"] != "+":
            expected.append(match["text"])
        if match["mark"] != "-":
            got.append(match["text"])
    if not expected or not got or expected == got:
        return None, None
    return clip("\n".join(expected), VALUE_CHARS), clip("\n".join(got), VALUE_CHARS)


# doctest's report (pytest's doctest items, unittest's DocTestSuite): indented blocks under the two labels
_DOCTEST = re.compile(r"^Expected:\n(?P<e>(?:[ \t]+\S.*\n?)+)Got:\n(?P<g>(?:[ \t]+\S.*\n?)+)", re.M)


def doctest_expected_got(text: str) -> tuple[str | None, str | None]:
    """A failing doctest example's wanted and printed output (`Expected:` / `Got:` blocks), dedented."""
    match = _DOCTEST.search(text)
    if match is None:
        return None, None
    expected, got = (textwrap.dedent(match[k]).strip() for k in ("e", "g"))
    return (clip(expected, VALUE_CHARS), clip(got, VALUE_CHARS)) if expected != got else (None, None)


def compared_in(text: str) -> Compared | None:
    """The first pair of compared values any known dialect finds in `text`, with its sides."""
    if not text:
        return None
    head = text[:20000]
    diff = node_assert_diff(head)
    if diff[0] is not None and diff[1] is not None:  # node:assert's argument positions, as its `!==` above
        return Compared(diff[1], diff[0], NODE_ARGUMENTS, None, "js")
    doctest = doctest_expected_got(head)
    if doctest[0] is not None and doctest[1] is not None:
        return sided(doctest[0], doctest[1], "python")
    for pattern, grammar, requirement in _IMPLIED:
        match = pattern.search(head)
        if match:
            return truth_test(match["g"], requirement or match["r"], grammar)  # type: ignore[arg-type]
    match = _IS.search(head)
    if match and match["g"] != match["e"]:
        return sided(match["e"], clip(match["g"], VALUE_CHARS), "python")
    for pattern, first, second, labels, expected_at, grammar in _DIALECTS:
        match = pattern.search(head)
        if match and (pattern not in _SENTENCES or (whole_value(match[first]) and whole_value(match[second])
                                                     and split_proven(match[first], match[second]))):
            if not (balanced(match[first]) and balanced(match[second])):  # `"in" ("a" != "b")`: not the operands
                continue
            a, b = match[first], match[second]
            if pattern is _NOT_EQUAL:
                b = _without_long_message(b)
                if not (one_value(a) and one_value(b)):
                    continue  # a sentence or a call with text around it: the got/want words below may name sides
            a, b = clip(a, VALUE_CHARS), clip(b, VALUE_CHARS)
            if a and b and a != b:
                return Compared(a, b, labels, expected_at, grammar)
    return None


# the dialects that are a sentence (`expected X but got Y`, `got X, want Y`, `should be X, but got Y`, node's
# `X == Y`): where a value ends is certain only when each is one whole value (`'32000' with error '<nil>'` is not one)
_SENTENCES = frozenset((*(d[0] for d in _DIALECTS[-2:]), _SHOULD_BE, _NODE_EQUAL, _CHAI))
_CLOSERS = {"[": "]", "{": "}", "(": ")"}


def whole_value(text: str) -> bool:
    """One whole printed value: a single quoted literal, one bracketed value (balanced to its last character),
    or a token without spaces."""
    text = text.strip()
    if not text:
        return False
    if text[0] in "'\"`" and len(text) >= 2 and text[-1] == text[0]:
        inner, quote = text[1:-1], text[0]
        return all(inner[i - 1] == "\\" for i, c in enumerate(inner) if c == quote and i > 0) and not inner.startswith(quote)
    if text[0] in _CLOSERS:
        depth = 0
        for i, c in enumerate(text):
            depth += c in _CLOSERS
            depth -= c in _CLOSERS.values()
            if depth == 0 and i < len(text) - 1:
                return False
        return depth == 0
    return not any(c.isspace() for c in text)


# a printed repr that is one value though it holds spaces: a call (`Point(x=1, y=2)`, `datetime.date(2020, 1, 2)`),
# an object's `<Foo object at 0x7f>`, a prefixed string literal (`b'a b'`)
_REPR_CALL = re.compile(r"[A-Za-z_][\w.]*\(.*\)|<[^<>]*>|[bBrRuUfF]{1,2}(?:'.*'|\".*\")", re.S)


def one_value(text: str) -> bool:
    """One printed value on a side of a free-text `!=`: a whole value (`whole_value`), or one repr as above whose
    brackets close at its very end (`Match(`a`) != …` has text before it; `f(1) and g(2)` closes twice)."""
    text = text.strip()
    if whole_value(text):
        return True
    if not _REPR_CALL.fullmatch(text) or not balanced(text):
        return False
    if text[0] == "<" or text[0] in "bBrRuUfF" and _quoted_literal(text.lstrip("bBrRuUfF")):
        return True
    return _closes_at_end(text, text.index("("))


def _without_long_message(second: str) -> str:
    """unittest's longMessage adds the test's own message after ` : ` (`3 != 4 : some symbols appear twice`): the
    second value is what comes before it, when that is one value."""
    head = second.split(" : ", 1)[0]
    return head if head != second and not one_value(second) and one_value(head) else second


def _closes_at_end(text: str, opener: int) -> bool:
    """The bracket opened at `opener` closes at the text's last character, not before (quotes skipped as `balanced`
    skips them; one pass)."""
    depth, quote = 0, None
    for i in range(opener, len(text)):
        c = text[i]
        if quote is not None:
            quote = None if c == quote and text[i - 1] != "\\" else quote
        elif c in "'\"`" and not text[i - 1].isalnum():
            quote = c
        elif c in _CLOSERS:
            depth += 1
        elif c in _CLOSERS.values():
            depth -= 1
            if depth == 0:
                return i == len(text) - 1
    return False


# the words that label a side in a sentence (`expected 0, got 0`, `got 3, want 4`)
_SIDE_WORD = re.compile(r"\b(?:expected|expect|want|wanted|got|received|actual)\b", re.I)


def split_proven(*values: str) -> bool:
    """A sentence split into values at its side words is proven by the text's own structure only when each value is
    one value: no value holds a side word of its own (`expected 0, got 0` above `expected 0, got 0`, read across the
    line end, gives `0, got 0`), unless it is one quoted literal (`got "want more"`)."""
    return not any(_SIDE_WORD.search(v) and not _quoted_literal(v) for v in values)


def _quoted_literal(text: str) -> bool:
    text = text.strip()
    return len(text) >= 2 and text[0] in "'\"`" and whole_value(text)


def balanced(text: str) -> bool:
    """Every bracket the text opens it closes, in order, outside its quoted literals: a printed value is balanced;
    a piece cut from a sentence at `!=` (`"test.case" ("Testcase`) is not."""
    stack: list[str] = []
    quote = None
    for i, c in enumerate(text):
        if quote is not None:
            quote = None if c == quote and text[i - 1] != "\\" else quote
        elif c in "'\"`" and (i == 0 or not text[i - 1].isalnum()):  # an apostrophe inside a word opens nothing
            quote = c
        elif c in _CLOSERS:
            stack.append(_CLOSERS[c])
        elif c in _CLOSERS.values() and (not stack or stack.pop() != c):
            return False
    return not stack


def extract_expected_got(text: str) -> tuple[str | None, str | None]:
    """(expected, got) when a dialect finds two values and says which is expected; else (None, None)."""
    found = compared_in(text)
    if found is None or found.expected_at is None:
        return None, None
    i = found.expected_at
    return (found.first, found.second)[i], (found.first, found.second)[1 - i]


# --- the printed assertion settles the sides ------------------------------------------------------------

# pytest's explanation of a value: `+  where 0 = bdecode(b'i0e')`
WHERE_LINE = re.compile(r"^\s*(?:E\s+)?\+\s+where (?P<value>[^\n]+?) = (?P<expr>[^\n]+?)\s*$", re.M)
_SHORTENED = re.compile(r"\[\d+ chars\]")  # unittest's _common_shorten_repr / safe_repr abbreviation
EXPECTED_WORDS = {"expected", "expect", "expectation", "want", "wanted", "desired", "correct", "golden", "reference"}
PRODUCED_WORDS = {"actual", "result", "results", "got", "received", "observed", "output", "outcome"}
_ASSERT_METHOD = re.compile(r"^assert\w*(?:Equal|Equals)$")


def settled(compared: Compared, printed: str) -> tuple[str | None, str | None, Operands]:
    """(expected, got, operands): the Python assertion the runner printed decides the sides when its
    operands do (names, or one literal); unittest's abbreviated values are kept as printed, unknown."""
    if compared.grammar == "python" and compared.labels in (("left", "right"), ("first", "second")):
        statement = printed_assertion(printed)
        at = expected_operand(statement, compared.data_names) if statement else None
        if at is None and statement and compared.labels == ("left", "right"):
            at = _expanded_call_side(statement, (compared.first, compared.second), printed)
        if at is not None:
            compared = replace(compared, expected_at=at)
    shortened = bool(_SHORTENED.search(compared.first) or _SHORTENED.search(compared.second))
    whole = _whole_from_diff(compared, printed) if shortened else None
    if whole is not None:
        compared, shortened = replace(compared, first=whole[0], second=whole[1]), False
    return compared.operands(shortened)


_DIFF_SIDE = re.compile(r"^(?P<mark>[-+?]) (?P<text>.*)$")
_SHORT_REPR = re.compile(r"^(?P<head>.*?)\[(?P<n>\d+) chars\](?P<tail>.*)$", re.S)


def _whole_from_diff(compared: Compared, printed: str) -> tuple[str, str] | None:
    """unittest abbreviates two long strings (`'{"a": 1, [74 chars] 3]}' != …`) and prints their whole lines in the
    ndiff below (`- …` / `+ …`): for one-line strings the whole values are those lines, taken only when each
    abbreviation is exactly that line's repr shortened (its head, its tail and the count of the characters left out)."""
    if compared.labels != ("first", "second") or compared.grammar != "python":
        return None
    at = printed.find(f"{compared.first} != {compared.second}")
    if at < 0:
        return None
    lines = printed[at:].splitlines()[1:]
    block = list(itertools.takewhile(lambda line: _DIFF_SIDE.match(line) is not None, lines))
    minus = [m["text"] for m in map(_DIFF_SIDE.match, block) if m and m["mark"] == "-"]
    plus = [m["text"] for m in map(_DIFF_SIDE.match, block) if m and m["mark"] == "+"]
    if len(minus) != 1 or len(plus) != 1:
        return _whole_from_ndiff(compared, printed, at)
    first, second = repr(minus[0]), repr(plus[0])
    if not (_shortens(compared.first, first) and _shortens(compared.second, second)):
        return _whole_from_ndiff(compared, printed, at)
    return first, second


_NDIFF_LINE = re.compile(r"^(?:  |[-+?] )")
_NDIFF_MARK = re.compile(r"(?=(?:  |[-+?] ))")
_MAX_MARKS, _MAX_NDIFF_LINES = 24, 2000  # bounds on the readings tried: at most 3 lines x 300 splits of 2000 lines


def _whole_from_ndiff(compared: Compared, printed: str, at: int) -> tuple[str, str] | None:
    """Two multi-line strings: unittest prints the ndiff of their lines (`  ` both, `- ` the first's, `+ ` the
    second's, `? ` a guide), each line with its own line end, so a last line without one runs into the next
    (`- </a>+  </a>? +`). The whole values are the lines read back, taken only when exactly one reading of
    the run-together lines gives two texts whose reprs both abbreviations shorten."""
    start = printed.rfind("\n", 0, at) + 1
    margin = "E       " if printed.startswith("E       ", start) else ""  # pytest's `E` column
    block: list[str] = []
    for line in printed[at:].split("\n")[1:]:
        if not line.startswith(margin) or not _NDIFF_LINE.match(line[len(margin) :]):
            break
        block.append(line[len(margin) :])
    found = {whole for cut in range(max(0, len(block) - 3), len(block)) for whole in _ndiff_readings(block, cut)
             if _shortens(compared.first, whole[0]) and _shortens(compared.second, whole[1])}
    return found.pop() if len(found) == 1 else None


def _ndiff_readings(block: list[str], cut: int) -> Iterator[tuple[str, str]]:
    """The two texts (as reprs) of the ndiff lines `block`, the line at `cut` read as one to three run-together
    lines (split where a mark begins), every other line as one line with its line end."""
    marks = [m.start() for m in _NDIFF_MARK.finditer(block[cut])][1:]
    if len(marks) > _MAX_MARKS or len(block) > _MAX_NDIFF_LINES:  # read as printed, one line each: no reading tried
        marks = []
    for count in range(3):
        for points in itertools.combinations(marks, count):
            edges = (0, *points, len(block[cut]))
            pieces = [block[cut][a:b] for a, b in itertools.pairwise(edges)]
            if any(piece.startswith("? ") for piece in pieces[:-1]):
                continue  # a guide line always ends its line
            items = [*(line + "\n" for line in block[:cut]), *(p for p in pieces[:-1]), pieces[-1] + "\n",
                     *(line + "\n" for line in block[cut + 1 :])]  # fmt: skip
            first = "".join(item[2:] for item in items if item[:2] in ("  ", "- "))
            second = "".join(item[2:] for item in items if item[:2] in ("  ", "+ "))
            yield repr(first), repr(second)
            yield repr(first.removesuffix("\n")), repr(second.removesuffix("\n"))


def _shortens(printed: str, whole: str) -> bool:
    short = _SHORT_REPR.match(printed)
    if short is None:
        return printed == whole
    head, tail = short["head"], short["tail"]
    return (whole.startswith(head) and whole.endswith(tail)
            and len(whole) == len(head) + int(short["n"]) + len(tail))  # fmt: skip


# pytest marks the failing line with `>`; a Python traceback quotes each frame's line under `File "…", line N`
_PYTEST_LINE = re.compile(r"^>\s+(?P<code>\S.*)$", re.M)
_QUOTED_LINE = re.compile(r'^\s*File "[^"]+", line \d+, in \S+\n\s+(?P<code>\S.*)$', re.M)


def printed_assertion(printed: str) -> tuple[ast.expr, ast.expr] | None:
    """The operands of the last `assert a == b` / `self.assertEqual(a, b)` the runner printed, if it parses."""
    lines = [m["code"] for m in _PYTEST_LINE.finditer(printed)] + [m["code"] for m in _QUOTED_LINE.finditer(printed)]
    for code in reversed(lines):
        found = assertion_operands(code.strip())
        if found is not None:
            return found
    return None


def assertion_operands(code: str) -> tuple[ast.expr, ast.expr] | None:
    """The two operands of one statement `assert a == b` / `self.assertEqual(a, b)` (any `assert…Equal`), else None."""
    node = _statement(code)
    if node is None:
        return None
    if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1:
        if isinstance(node.test.ops[0], ast.Eq):
            return node.test.left, node.test.comparators[0]
    call = node.value if isinstance(node, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute | ast.Name) and len(call.args) >= 2:
        if _ASSERT_METHOD.match(call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id):
            return call.args[0], call.args[1]
    return None


_HEAD_CHARS = 2_000


def _statement(code: str) -> ast.stmt | None:
    """`code` parsed; a call a traceback printed only its first line of (`self.assertEqual(actual, expected, "…" % (`)
    is read up to its first two arguments: the shortest head ending at a comma that parses as a call of two."""
    try:
        return ast.parse(code).body[0]
    except (SyntaxError, IndexError, ValueError, RecursionError, MemoryError):
        pass
    # a head is cut only within the first _HEAD_CHARS (each cut is one parse: a printed line of commas is bounded)
    for cut in [*(i for i, c in enumerate(code[:_HEAD_CHARS]) if c == ","), len(code)]:
        try:
            node = ast.parse(code[:cut] + ")").body[0]
        except (SyntaxError, IndexError, ValueError, RecursionError, MemoryError):
            continue
        call = node.value if isinstance(node, ast.Expr) else None
        if not isinstance(call, ast.Call) or call.keywords or len(call.args) > 2:
            return None
        if len(call.args) == 2:
            return node
    return None


def expected_operand(operands: tuple[ast.expr, ast.expr], data_names: tuple[str, ...] = ()) -> int | None:
    """Which operand (0, 1) the statement shows to be expected: the one that is the test's own data (a directly
    parametrized argument: the test gives it, whatever its name — `result` too) against one that calls code, else
    by its name, else the one literal; else None."""
    data = [isinstance(node, ast.Name) and node.id in data_names for node in operands]
    calls = [any(isinstance(n, ast.Call) for n in ast.walk(node)) for node in operands]
    for i in (0, 1):
        if data[i] and not data[1 - i] and calls[1 - i] and not calls[i]:
            return i
    roles = [_role(node) for node in operands]
    for i in (0, 1):
        if roles[i] == "expected" and roles[1 - i] != "expected":
            return i
        if roles[i] == "produced" and roles[1 - i] != "produced":
            return 1 - i
    literal = [_is_literal(node) for node in operands]
    if literal[0] != literal[1]:
        return 0 if literal[0] else 1
    constant = [_is_constant(node) for node in operands]
    for i in (0, 1):
        if constant[i] and not literal[1 - i] and not constant[1 - i] and calls[1 - i]:
            return i
    return None


def _expanded_call_side(operands: tuple[ast.expr, ast.expr], values: tuple[str, str], printed: str) -> int | None:
    """pytest's `assert plain == bdecode(bencode(plain))` explained `where 0 = bdecode(b'i0e')`: one operand is a call
    of the code (not a builtin on literals) whose value pytest expanded, the other a literal or a bare name it did not
    explain (the test's own value): the expanded call is the produced side, so the other (its index) is expected."""
    explained = {m["value"].strip(): m["expr"].strip() for m in WHERE_LINE.finditer(printed)}
    for i in (0, 1):
        call, other = operands[1 - i], operands[i]
        if not isinstance(call, ast.Call) or _is_literal(call) or not isinstance(other, ast.Name | ast.Constant):
            continue
        if isinstance(other, ast.Constant) or values[i].strip() in explained:
            continue  # a literal other side is settled before; a name pytest explained is not the test's own value
        expr = explained.get(values[1 - i].strip())
        if expr is not None and expr.startswith(ast.unparse(call.func) + "("):
            return i
    return None


def _role(node: ast.expr) -> str | None:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    if name is None:
        return None
    words = set(identifier_words(name))
    if words & EXPECTED_WORDS:
        return "expected"
    if words & PRODUCED_WORDS:
        return "produced"
    return None


def _is_constant(node: ast.expr) -> bool:
    """A name written as a constant (`MAXSIZE`, `six.MAXSIZE`, `HTTPStatus.OK`): upper case, no call."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name is not None and name.isupper() and not any(isinstance(n, ast.Call) for n in ast.walk(node))


# Python's builtins and the standard library's value types that turn literals into a value (`ord("l")`,
# `defaultdict(int, {"a": 1})`, `datetime(2011, 2, 1)`, `Decimal("1.5")`): never the code under test
_BUILTIN_OF_LITERALS = frozenset({"ord", "chr", "int", "float", "str", "bytes", "bytearray", "bool", "complex", "tuple",
                                  "list", "set", "frozenset", "dict", "len", "abs", "round", "repr"})  # fmt: skip
_STDLIB_VALUES = frozenset({"defaultdict", "OrderedDict", "Counter", "deque", "Decimal", "Fraction", "datetime", "date",
                            "time", "timedelta", "UUID"})  # fmt: skip
_STDLIB_MODULES = frozenset({"collections", "decimal", "fractions", "datetime", "uuid"})
_TYPE_NAMES = frozenset({"int", "float", "str", "bytes", "list", "dict", "set", "tuple", "bool"})  # `defaultdict(int)`


def _is_literal(node: ast.expr) -> bool:
    """A literal, or a builtin or a standard library value type applied to literals (`ord("l")`,
    `defaultdict(int, {"the": 2})`)."""
    if isinstance(node, ast.Call) and _value_maker(node.func):
        return all(_is_literal(arg) or (isinstance(arg, ast.Name) and arg.id in _TYPE_NAMES) for arg in node.args) and all(
            kw.arg is not None and _is_literal(kw.value) for kw in node.keywords
        )
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _value_maker(func: ast.expr) -> bool:
    """`ord`, `defaultdict`, `collections.defaultdict`, `datetime.datetime`: a builtin or a standard library value type."""
    if isinstance(func, ast.Name):
        return func.id in _BUILTIN_OF_LITERALS or func.id in _STDLIB_VALUES
    return (isinstance(func, ast.Attribute) and func.attr in _STDLIB_VALUES and isinstance(func.value, ast.Name)
            and func.value.id in _STDLIB_MODULES)  # fmt: skip


def identifier_words(text: str) -> list[str]:
    """The lower-case words of identifiers in `text`: `countHashes(x.line_qty)` → count, hashes, x, line, qty."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", text)
    return [w.lower() for w in re.findall(r"[A-Za-z]+", spaced)]
