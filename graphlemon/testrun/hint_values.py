"""Hints from the two compared values, by rules over their parsed types (`value_types`), each with its premises.

A `Pair` is the two values (read in their reporter's grammar) at one place: the whole values, a part one
level in (a key, an item, a field), or a number inside two texts that are equal but for it. Every rule
(`VALUE_RULES`) declares its premises and speaks only when they hold (`hint_premises.Rule`):

- a rule that says which way the values differ (nothing came back, cut short, items missing, doubled)
  needs the reporter to say which value is expected (`sided`); one that holds either way (letter case
  only, same items in another order, booleans flipped) does not, and names the operands as the
  reporter labels them;
- a numeric rule needs two values that are numbers in the test's own language (Python, JSON, JavaScript,
  Go, Rust numerals: `'1,000'` and `1_000` are texts, not numbers);
- "off by one" needs a boundary (a range, an index, a count) shown by the code or the data, never the
  difference of two numbers alone.

The rules over two texts equal but for one small edit (quotation marks, a separator, the ending, a part
added or left out) are `hint_text.TEXT_RULES`, tried among these after "extra at the end". When no rule
speaks, `value_facts` says where the values first differ and what each holds there.
"""

from __future__ import annotations

import ast
import math
import re
import unicodedata
from dataclasses import replace
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from .assertions import NODE_ARGUMENTS, identifier_words
from .hint_context import HintContext
from .hint_pair import INTEGERS, KNOWN_KINDS, NUMBERS, SIDES, STRINGS, Pair, is_numeral, numbers
from .hint_pair import clip as _clip
from .hint_premises import (
    ACCUMULATION_WORDS,
    COLLECTION_OF_COUNTS,
    Premise,
    Rule,
    boundary_words,
    code_boundary,
    code_words,
    data_boundary,
)
from .hint_text import TEXT_RULES, char_name
from .js_source import node_expected_argument
from .py_source import expected_operand_at
from .result_models import TestFailure, ValueGrammar
from .rust_source import literal_operand
from .value_types import (
    Elided,
    Obj,
    Printed,
    Unknown,
    first_differing_part,
    kind_of,
    parse_pair,
    smallest_difference,
)

# the names `typeof` / type() give: a test comparing two of them compares the type of a value
_TYPE_NAMES = {
    "number": "a number", "string": "a string", "boolean": "a boolean", "object": "an object",
    "undefined": "undefined", "function": "a function", "bigint": "a bigint", "symbol": "a symbol",
    "int": "an int", "float": "a float", "str": "a str", "bool": "a bool", "list": "a list", "dict": "a dict",
    "NoneType": "None", "tuple": "a tuple",
}  # fmt: skip


def operand_pair(failure: TestFailure, ctx: HintContext | None = None) -> Pair | None:
    """The failure's compared values as a Pair (None when the reporter gave none, or only abbreviated ones)."""
    ops = failure.operands
    grammar = ops.grammar if ops is not None else "any"
    if ops is not None and (ops.shortened or not ops.sided):
        if ops.shortened or ops.first is None or ops.second is None:
            return None
        first, second = typed_pair(ops.first, ops.second, grammar)
        literal = (_literal_operand(failure, ctx) if grammar == "rust"
                   else node_expected_argument(ctx) if ctx is not None and ops.labels == NODE_ARGUMENTS
                   else _python_operand(failure, ctx) if grammar == "python" else None)  # fmt: skip
        if literal is not None:  # the test's source shows the expected one (the one literal, or its name)
            values = (first, second)
            return Pair(values[literal], values[1 - literal], ctx=ctx, grammar=grammar)
        return Pair(first, second, sided=False, labels=ops.labels, ctx=ctx, grammar=grammar)
    if failure.expected is None or failure.got is None:
        return None
    exp, act = typed_pair(failure.expected, failure.got, grammar)
    return Pair(exp, act, ctx=ctx, grammar=grammar)


def _literal_operand(failure: TestFailure, ctx: HintContext | None) -> int | None:
    """`assert_eq!(left, right)` names no side; the test's own source does when one operand is a literal."""
    if ctx is None or failure.operands is None or failure.operands.labels != ("left", "right"):
        return None
    return literal_operand(ctx.root, failure.file, failure.line)


def _python_operand(failure: TestFailure, ctx: HintContext | None) -> int | None:
    """A Python assertion the traceback quoted only in part (written over several lines): its whole statement, read
    from the test file at the failure's line, settles the sides as a printed one does (`py_source`)."""
    if (
        ctx is None
        or failure.operands is None
        or failure.operands.labels not in (("left", "right"), ("first", "second"))
    ):
        return None
    return expected_operand_at(ctx.root, failure.file, failure.line)


def pair_of(first: str, second: str, grammar: ValueGrammar = "any", labels: tuple[str, str] | None = None) -> Pair:
    """Two printed values as a Pair: sided (expected, got) unless `labels` name unsided operands."""
    a, b = typed_pair(first, second, grammar)
    return Pair(a, b, grammar=grammar) if labels is None else Pair(a, b, sided=False, labels=labels, grammar=grammar)


def typed_pair(expected: str, got: str, grammar: Any) -> tuple[Any, Any]:
    """The parsed pair; a value no parser reads stands as its text, whose kind is unknown."""
    exp, act = parse_pair(expected, got, grammar)
    return (Printed(exp.text) if isinstance(exp, Unknown) else exp), (
        Printed(act.text) if isinstance(act, Unknown) else act
    )


def value_hint(pair: Pair, limit: int = 100) -> str | None:
    """A specific hint for the pair, or None when no rule's premises hold. The rules are tried on the whole
    values, then on their first differing part, level by level (a mapping's key, a list's item, a number
    inside two texts)."""
    others = 0
    lead = ""
    for _ in range(limit):
        hint = next((h for rule in VALUE_RULES if (h := rule.hint(pair))), None)
        if hint:
            if not pair.path:
                return lead + hint
            note = (f" (the first of {others + 1} differing parts)" if others > 1
                    else " (the first differing part)" if others else "")  # fmt: skip
            return f"At `{_clip(''.join(pair.path))}`{note}: {lead}{hint}"
        number = _number_within(pair)
        if number is not None:
            pair, lead = number
            continue
        step = first_differing_part(pair.expected, pair.got)
        if step is None:
            return None
        label, exp, act, count = step
        pair = replace(pair, expected=exp, got=act, path=(*pair.path, label), within=None, numerals=None)
        others = max(others, count - 1) if count else max(others, 1)  # 0: a cut-off value, others unknown
    return None


_UNSIDED = {NODE_ARGUMENTS: " (node:assert's argument positions; the test's source does not show which one the "
                            "code produced)"}  # fmt: skip


def value_facts(pair: Pair) -> str:
    """Facts only: where the parsed values first differ and what each holds there (no claim of a cause)."""
    diff = smallest_difference(pair.expected, pair.got)
    where = f" at `{_clip(diff.where)}`" if diff.path else ""
    if not diff.only:
        where += " (the first differing part)"
    lead = "" if pair.sided else _UNSIDED.get(pair.labels, " (the reporter does not say which one is expected)")
    if isinstance(diff.expected, str) and isinstance(diff.got, str):
        at = _first_difference(diff.expected, diff.got)
        shown = (_window(diff.expected, at), _window(diff.got, at))
        before = diff.expected[:at]  # past the first line: where, as a reader counts lines too
        line = f" (line {before.count(chr(10)) + 1}, column {at - before.rfind(chr(10))})" if "\n" in before else ""
        return f"They differ{where} from character {at + 1}{line}{lead}: {pair.named(*shown)}."
    if isinstance(diff.expected, Obj) and isinstance(diff.got, Obj) and diff.expected.cls != diff.got.cls:
        if pair.sided:
            return f"They differ{where}: {kind_of(diff.got)} where {kind_of(diff.expected)} is expected."
        return f"They differ{where}{lead}: {pair.named(kind_of(diff.expected), kind_of(diff.got))}."
    if _same_read(diff.expected, diff.got) and (printed := _printed_whole(pair)) is not None:
        return f"They differ{lead}: {pair.named(*printed)} (each as the runner printed it)."
    printed = _printed_whole(pair) if not diff.path else None
    if printed and _number(diff.expected, printed[0]) and _number(diff.got, printed[1]):
        return f"They differ{lead}: {pair.named(*printed)}."  # as printed: go's `NaN`, never a reading's `nan`
    shown = (pair.literal(v) if v is None or isinstance(v, bool) else _show(v) for v in (diff.expected, diff.got))
    return f"They differ{where}{lead}: {pair.named(*shown)}."  # `undefined` / `nil` in its language, not `None`


def _number(value: Any, printed: str) -> bool:
    """A number the printed text is, whole (`NaN`, `+Inf`, `1e+06`), so the text can stand for it."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        read = float(printed)
    except ValueError:
        return False
    return read == value or (math.isnan(read) and math.isnan(value))


def _same_read(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # a value whose equality does not answer: not the same
        return False


def _printed_whole(pair: Pair) -> tuple[str, str] | None:
    """Two values the parser reads alike (JavaScript's `null` and `undefined` are one absence) but the reporter printed
    differently: each whole as printed, in the pair's order (the failure's expected/got, or its unsided operands)."""
    f = pair.ctx.failure if pair.ctx is not None else None
    if f is None:
        return None
    ops = f.operands
    if pair.sided and f.expected is not None and f.got is not None:
        printed = (f.expected.strip(), f.got.strip())
    elif not pair.sided and ops is not None and ops.first is not None and ops.second is not None:
        printed = (ops.first.strip(), ops.second.strip())
    else:
        return None
    return (_clip(printed[0], 60), _clip(printed[1], 60)) if printed[0] != printed[1] else None


# --- premises ---------------------------------------------------------------------------------------------


def _boundary(p: Pair) -> str | None:
    """A range, an index or a count: in the path to the numbers, the texts holding them, the code, the message.
    Numbers that are items of a sequence (a path `[0]`) are data: a boundary word in the code names the collection
    (`decode_to_slice(...)`), so only a collection of counts (`lengths(...)`, `offsets`) makes its items counts."""
    words = boundary_words(" ".join(p.path))
    if words:
        return f"path: {', '.join(sorted(words))}"
    if p.within is not None and (data_boundary(*p.within) or _index_in_texts(p)):
        return "the data shows a range, an index or a count"
    if p.ctx is None:
        return None
    return code_words(p.ctx, COLLECTION_OF_COUNTS) if _sequence_item(p) else code_boundary(p.ctx)


def _sequence_item(p: Pair) -> bool:
    """The numbers are items of a sequence: the path to them holds an item's index (`[0]`)."""
    return any(re.fullmatch(r"\[\d+\]", step) for step in p.path)


def _accumulation(p: Pair) -> str | None:
    """A count or a sum: in the path to the numbers, the texts holding them, or the code on the failing path."""
    words = set(identifier_words(" ".join(p.path))) & ACCUMULATION_WORDS
    if words:
        return f"path: {', '.join(sorted(words))}"
    if p.within is not None and data_boundary(*p.within):
        return "the data shows a count"
    return code_words(p.ctx, ACCUMULATION_WORDS) if p.ctx is not None else None


def _printed_length(p: Pair) -> tuple[int, str | bytes] | None:
    """pytest explained one of the two numbers as `N = len(<a text or bytes as printed>)`: what was counted is
    printed whole, so the number is that content's own length (`2 = len(b'\\xc3\\xbf')`)."""
    found = numbers(p) if p.ctx is not None and not p.path and p.within is None else None
    if found is None:
        return None
    for value, expr in p.ctx.where_lines:
        counted = _len_argument(expr)
        if counted is not None and value.strip() == str(len(counted)) and len(counted) in found:
            return len(counted), counted
    return None


def _len_argument(expr: str) -> str | bytes | None:
    """The text or bytes literal of `len(<literal>)`, else None."""
    try:
        node = ast.parse(expr.strip(), mode="eval").body
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
                and len(node.args) == 1 and not node.keywords):  # fmt: skip
            return None
        value = ast.literal_eval(node.args[0])
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str | bytes) else None


def _not_printed_length(p: Pair) -> str | None:
    return None if _printed_length(p) else "the count is not the length of a text the runner printed whole"


def _encoded_length(p: Pair) -> tuple[int, int, str, str | bytes] | None:
    """The counted text is printed and its UTF-8 form explains the other number: bytes whose characters (or a str
    whose UTF-8 bytes) are as many as the other number; (its length, the other number, the text, what was counted)."""
    found = _printed_length(p)
    if found is None:
        return None
    length, counted = found
    other = next(n for n in numbers(p) or () if n != length)
    if isinstance(counted, bytes):
        try:
            text = counted.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return (length, other, text, counted) if len(text) == other and not text.isascii() else None
    encoded = len(counted.encode("utf-8", "surrogatepass"))
    return (length, other, counted, counted) if encoded == other and not counted.isascii() else None


def _encoded_says(p: Pair, numbers_: tuple[Any, Any], integers: bool, found: tuple[int, int, str, str | bytes]) -> str:
    length, other, text, counted = found
    shown = f"{other} is expected" if p.sided and numbers_[0] == other else f"the other value is {other}"
    named = char_name(text) if len(text) == 1 else (
        f"{_clip(repr(text), 40)} (its characters outside ASCII: "
        f"{', '.join(char_name(c) for c in dict.fromkeys(c for c in text if not c.isascii()))})")  # fmt: skip
    if isinstance(counted, bytes):
        return (f"The length counts bytes: {_clip(repr(counted), 60)} is the UTF-8 encoding of {named}, "
                f"{_count(length, 'byte')} for {_count(len(text), 'character')} ({shown}).")  # fmt: skip
    return (f"The length counts characters: {named} is {_count(length, 'character')}, "
            f"{_count(other, 'byte')} in UTF-8 ({shown}).")  # fmt: skip


def _count(n: int, unit: str) -> str:
    return f"{n} {unit}{'' if n == 1 else 's'}"


ACCUMULATION = Premise("a count or a sum shown", "the failing check (its statement, the expressions the runner "
                       "explained, its message; never the test's name alone) or the data shows a count or a sum",
                       _accumulation)  # fmt: skip
BOUNDARY = Premise("a boundary shown", "the failing check (its statement, the expressions the runner explained, its "
                   "message; never the test's name alone) or the data (a range, an index, a count) shows a boundary; "
                   "for items of a sequence, the path to them or a collection of counts the code names", _boundary)  # fmt: skip


# --- rules ------------------------------------------------------------------------------------------------


def _shown_value(value: Any) -> str:
    return _clip(repr(value), 60) if not isinstance(value, str) else _repr(value)


def _shown_pair(p: Pair) -> str:
    """Both values as the reporter labels them: `got where expected is expected`, else by its labels."""
    if p.sided:
        return f"{_shown_value(p.got)} where {_shown_value(p.expected)} is expected"
    return f"{p.labels[0]} {_shown_value(p.expected)}, {p.labels[1]} {_shown_value(p.got)}"


def _is_nothing(value: Any) -> bool:
    return value is None or (
        isinstance(value, str) and value.strip().lower() in ("none", "undefined", "null", "nil", "<nil>")
    )


def _nothing_came_back(p: Pair) -> str:
    return f"The code produced nothing ({p.literal(None)}) where {_shown_value(p.expected)} is expected."


def _something_came_back(p: Pair) -> str:
    return f"{_capital(kind_of(p.got))} came back ({_shown_value(p.got)}) where the test expects {p.literal(None)}."


def _booleans(p: Pair) -> str:
    shown = (f"{p.literal(p.got)} where {p.literal(p.expected)} is expected" if p.sided
             else f"{p.labels[0]} {p.literal(p.expected)}, {p.labels[1]} {p.literal(p.got)}")  # fmt: skip
    return f"The condition comes out the other way ({shown})."


def _absence_named(p: Pair) -> str | None:
    """The produced value is absence itself (None/null/undefined/nil) and the expected one is its name as text."""
    if p.got is not None or not isinstance(p.expected, str) or isinstance(p.expected, Printed):
        return None
    name = p.expected.strip()
    return name if name in _ABSENCE_NAMES else None


_ABSENCE_NAMES = frozenset({"None", "null", "undefined", "nil", "<nil>", "NULL"})


def _absence_as_text(p: Pair, sided: bool, name: str) -> str:
    produced = p.ctx.failure.got.strip() if p.ctx is not None and not p.path and p.ctx.failure.got else p.literal(None)
    return f"{produced} itself came back where the string {name!r} is expected (the value, not its text)."


def _truncated(p: Pair) -> tuple[str, str] | None:
    """The numbers as written, when the produced one is one step of its own last digit below the expected one,
    which is written with fewer decimals and is what rounding the produced one to those decimals gives."""
    if p.numerals is None or not p.sided:
        return None
    e_text, g_text = p.numerals
    e_dec, g_dec = _decimals(e_text), _decimals(g_text)
    if g_dec == 0 or e_dec >= g_dec:
        return None
    e, g = float(e_text), float(g_text)
    step = 10.0**-g_dec
    if not math.isclose(e - g, step, rel_tol=1e-9) or not math.isclose(round(g, e_dec), e, rel_tol=1e-9):
        return None
    return e_text, g_text


def _decimals(numeral: str) -> int:
    return len(numeral.partition(".")[2])


def _truncated_says(p: Pair, sided: bool, numbers: tuple[Any, Any], found: tuple[str, str]) -> str:
    e, g = found
    step = f"{10.0 ** -_decimals(g):.{_decimals(g)}f}"
    return (f"{g} is one step ({step}) below {e}, and {e} is {g} rounded: the produced value is cut off (rounded "
            "down) where the expected one is the value rounded to the nearest.")  # fmt: skip


def _fewer_decimals(p: Pair) -> tuple[str, str, int, str] | None:
    """(shorter, longer, decimals, how): one number, written with at least one decimal, is the other (written with
    more decimals) rounded to the nearest or cut off to that many decimals — exact decimal arithmetic on the
    numerals as printed (`1.8` and `1.75`; `0.16` and `0.16666666666666666`)."""
    n = numbers(p)
    if n is None:
        return None
    written = p.numerals or tuple(repr(x) for x in n)
    if not all(is_numeral(w) for w in written):
        return None
    shorter, longer = sorted(written, key=_decimals)
    places = _decimals(shorter)
    if places == 0 or places >= _decimals(longer):
        return None
    step, target = Decimal(1).scaleb(-places), Decimal(shorter)
    rounded = {Decimal(longer).quantize(step, rounding=r) for r in (ROUND_HALF_UP, ROUND_HALF_EVEN)}
    cut = Decimal(longer).quantize(step, rounding=ROUND_DOWN)
    how = ("rounded (to the nearest) or cut off" if target in rounded and target == cut else "rounded (to the nearest)"
           if target in rounded else "cut off (not rounded)" if target == cut else None)  # fmt: skip
    return None if how is None else (shorter, longer, places, how)


def _fewer_decimals_says(p: Pair, numbers_: tuple[Any, Any], found: tuple[str, str, int, str]) -> str:
    shorter, longer, places, how = found
    written = p.numerals or tuple(repr(x) for x in numbers_)
    role = dict(zip(written, ("expected", "produced") if p.sided else p.labels, strict=True))
    return f"{shorter} ({role[shorter]}) is {longer} ({role[longer]}) {how} to {_count(places, 'decimal')}."


def _shown_numbers(p: Pair, numbers: tuple[Any, Any]) -> str:
    if p.within is not None:
        return ""
    e, a = numbers
    return f" ({a} where {e} is expected)" if p.sided else f" ({p.labels[0]} {e}, {p.labels[1]} {a})"


def _off_by_one(p: Pair, numbers: tuple[Any, Any], integers: bool, one: bool, why: str, *_: Any) -> str:
    written = " (numbers written as text)" if isinstance(p.expected, str) else ""
    return f"Off by one{written}{_shown_numbers(p, numbers)}, where a count, an index or a range is involved ({why})."


def _nearly_equal(p: Pair, numbers: tuple[Any, Any], close: bool) -> str:
    """The size of the difference only: the output does not say where it comes from (rounding, an added term)."""
    return (f"The numbers are equal to within one part in a million{_shown_numbers(p, numbers)}: as printed, "
            f"they differ by {_difference(p, numbers)}.")  # fmt: skip


def _difference(p: Pair, numbers: tuple[Any, Any]) -> str:
    """The difference of the two numbers as printed (exact decimals, not the difference of two floats)."""
    first, second = p.numerals or (repr(numbers[0]), repr(numbers[1]))
    try:
        size = abs(Decimal(first) - Decimal(second))
    except InvalidOperation:
        size = Decimal(repr(abs(numbers[0] - numbers[1])))
    return format(size.normalize(), "g")


def _zero(p: Pair, sided: bool, numbers: tuple[Any, Any], zero: bool, why: str) -> str:
    return f"The result stayed at zero{_shown_numbers(p, numbers)}, where a count or a sum is built ({why})."


def _sign(p: Pair, numbers: tuple[Any, Any], negated: bool) -> str:
    return f"The sign is inverted{_shown_numbers(p, numbers)}: the same number with the other sign."


def _doubled(p: Pair, sided: bool, numbers: tuple[Any, Any], doubled: bool, why: str) -> str:
    return f"The result is doubled{_shown_numbers(p, numbers)}, where a count or a sum is built ({why})."


def _half(p: Pair, sided: bool, numbers: tuple[Any, Any], half: bool, why: str) -> str:
    return f"The result is half the expected one{_shown_numbers(p, numbers)}, where a count or a sum is built ({why})."


def _reciprocals(p: Pair) -> bool:
    n = numbers(p)
    return (n is not None and 0 not in n and abs(n[0]) != 1 and n[0] != n[1]
            and math.isclose(n[0] * n[1], 1, rel_tol=1e-6))  # fmt: skip


def _reciprocal(p: Pair, sided: bool, numbers: tuple[Any, Any], found: bool) -> str:
    return f"The produced number is the reciprocal of the expected one (1/x){_shown_numbers(p, numbers)}."


_SCALES = (10, 100, 1000, 1024)


def _scale(p: Pair) -> str | None:
    n = numbers(p)
    if n is None or 0 in n:
        return None
    e, g = n
    exact = isinstance(e, int) and isinstance(g, int)  # integers compared exactly: 10000000001 is not 10 x 10^9
    for k in _SCALES:
        if (g == e * k) if exact else math.isclose(g, e * k, rel_tol=1e-9):
            return f"{k} times"
        if (g * k == e) if exact else math.isclose(g * k, e, rel_tol=1e-9):
            return f"1/{k} of"
    return None


def _scaled(p: Pair, sided: bool, numbers: tuple[Any, Any], scale: str) -> str:
    return f"The produced number is {scale} the expected one{_shown_numbers(p, numbers)}."


def _type_names(p: Pair, sided: bool, names: bool) -> str:
    return f"The test compares a type: the value is {_TYPE_NAMES[p.got]} where {_TYPE_NAMES[p.expected]} is expected."


def _invisible_characters(p: Pair, strings: bool, extra: tuple[str, ...]) -> str:
    names = ", ".join(sorted({f"U+{ord(c):04X}" for c in extra}))
    in_second = any(c in str(p.got) for c in extra)
    if p.sided and in_second:
        return f"The text holds {names}, which prints as nothing and the expected text lacks; otherwise they are equal."
    if p.sided:
        return f"The expected text holds {names} (it prints as nothing), which the result lacks; otherwise they are equal."
    holder, other = (p.labels[1], p.labels[0]) if in_second else p.labels
    return f"The {holder} text holds {names}, which prints as nothing and the {other} text lacks; otherwise they are equal."


def _invisible_difference(p: Pair) -> tuple[str, ...] | None:
    e, a = str(p.expected), str(p.got)
    if _visible(e) != _visible(a):
        return None
    extra = tuple(c for c in a if _invisible(c)) + tuple(c for c in e if _invisible(c))
    return extra or None


def _case(p: Pair, strings: bool, same: bool) -> str:
    return f"The text differs only in letter case: {_shown_pair(p)}."


def _whitespace(p: Pair, strings: bool, same: bool) -> str:
    return f"The text differs only in whitespace (spaces, indentation or a line end): {_shown_pair(p)}."


def _empty(p: Pair, sided: bool, strings: bool, empty: bool) -> str:
    return f"An empty string came back where {_repr(p.expected)} is expected."


def _cut_short(p: Pair, sided: bool, strings: bool, cut: bool) -> str:
    return (f"The text is cut short ({_repr(p.got)} where {_repr(p.expected)} is expected): it ends where "
            f"{_clip(repr(p.expected[len(p.got) :]))} follows in the expected one.")  # fmt: skip


def _extra_at_end(p: Pair, sided: bool, strings: bool, extra: bool) -> str:
    return (f"The text has extra content at the end: {_clip(repr(p.got[len(p.expected) :]))} ({_repr(p.got)} where "
            f"{_repr(p.expected)} is expected).")  # fmt: skip


def _same_class_objects(p: Pair, same: bool) -> str:
    cls = p.expected.cls
    return (f"Both are `{cls}` objects whose reprs show only their addresses: the code returns a different "
            f"`{cls}` object than the one the test expects (the reprs do not say how they differ).")  # fmt: skip


def _other_class(p: Pair, sided: bool, other: bool) -> str:
    return f"{_capital(kind_of(p.got))} came back where {kind_of(p.expected)} is expected."


def _sequences(p: Pair) -> bool:
    return isinstance(p.expected, list | tuple) and isinstance(p.got, list | tuple)


def _whole(items: Any) -> bool:
    return not any(isinstance(x, Elided) for x in items)


def _length(items: Any) -> int:
    return sum(x.count if isinstance(x, Elided) else 1 for x in items)


def _empty_list(p: Pair, sided: bool, lists: bool, empty: bool) -> str:
    return f"An empty list came back where {_length(p.expected)} item(s) are expected."


def _item_reprs(items: Any) -> list[str]:
    return [repr(x) for x in items]


def _reorder(p: Pair) -> bool:
    """Equal items as a multiset, in another sequence: an order differs (never for two empty or equal sequences)."""
    e, a = _item_reprs(p.expected), _item_reprs(p.got)
    return _whole(p.expected) and _whole(p.got) and e != a and sorted(e) == sorted(a)


def _reordered(p: Pair, lists: bool, same: bool) -> str:
    if type(p.expected) is type(p.got):
        return "Same items in a different order."
    return f"Same items in a different order, and the sequence's type differs: {_kinds(p)}."


def _same_items_in_order(p: Pair) -> bool:
    """The same items in the same order (or none): what differs is the sequence's type (a tuple, a list)."""
    return _whole(p.expected) and _whole(p.got) and _item_reprs(p.expected) == _item_reprs(p.got)


def _kinds(p: Pair) -> str:
    if p.sided:
        return f"{kind_of(p.got)} where {kind_of(p.expected)} is expected"
    return p.named(kind_of(p.expected), kind_of(p.got))


def _sequence_type(p: Pair, sided: bool, lists: bool, same: bool) -> str:
    items = "Both are empty" if not p.expected else f"The same {_length(p.got)} item(s) in the same order"
    return f"{items}; the sequence's type differs: {_kinds(p)}."


def _extra_items(p: Pair, sided: bool, lists: bool, extra: list[Any]) -> str:
    n = _length(p.got) - len(p.expected)
    shown = f": {', '.join(_clip(repr(x), 40) for x in extra[:3])}" if extra else ""
    return f"The list has {n} extra item(s) after the {len(p.expected)} expected{shown}."


def _extra_after(p: Pair) -> list[Any] | None:
    known = [x for x in p.got if not isinstance(x, Elided)]
    if _length(p.got) > len(p.expected) and _whole(p.expected) and list(known[: len(p.expected)]) == list(p.expected):
        return known[len(p.expected) :]  # the extra items shown (none when the tail is elided)
    return None


def _lacks_subsequence(p: Pair) -> list[Any] | None:
    exp, got = list(p.expected), list(p.got)
    if not (_whole(exp) and _whole(got)) or len(exp) <= len(got) or not _is_subsequence(got, exp):
        return None
    return _missing_items(got, exp) or None


def _lacks_items(p: Pair, sided: bool, lists: bool, missing: list[Any]) -> str:
    return (f"The list lacks {', '.join(_clip(repr(x), 40) for x in missing[:3])}: {_length(p.got)} item(s) where "
            f"{_length(p.expected)} are expected.")  # fmt: skip


def _one_off_length(p: Pair) -> int | None:
    if not (_whole(p.expected) and _whole(p.got)) or abs(len(p.expected) - len(p.got)) != 1:
        return None
    return len(p.got) - len(p.expected)


def _one_item(p: Pair, sided: bool, lists: bool, delta: int) -> str:
    more = "one item too many" if delta > 0 else "one item missing"
    shared = min(len(p.expected), len(p.got))
    step = first_differing_part(list(p.expected)[:shared], list(p.got)[:shared])
    at = (f"; they first differ at {step[0]}: {_clip(repr(step[1]), 40)} expected, {_clip(repr(step[2]), 40)} produced"
          if step else "")  # fmt: skip
    return f"The list has {more} ({len(p.got)} items for {len(p.expected)}{at})."


def _lacks_same_length(p: Pair) -> list[Any] | None:
    if (
        not (_whole(p.expected) and _whole(p.got))
        or len(p.expected) == len(p.got)
        or abs(len(p.expected) - len(p.got)) == 1
    ):
        return None
    missing = [x for x in p.expected if x not in list(p.got)][:3]
    return missing or None


def _mapping_pair(p: Pair) -> tuple[dict[Any, Any], dict[Any, Any]] | None:
    e, a = p.expected, p.got
    if isinstance(e, Obj) and isinstance(a, Obj) and e.cls == a.cls:
        e, a = e.fields, a.fields
    return (e, a) if isinstance(e, dict) and isinstance(a, dict) else None


def _missing_keys(p: Pair) -> list[str] | None:
    maps = _mapping_pair(p)
    keys = [repr(k) for k in maps[0] if k not in maps[1]][:4] if maps else []
    return keys or None


def _extra_keys(p: Pair) -> list[str] | None:
    maps = _mapping_pair(p)
    keys = [repr(k) for k in maps[1] if k not in maps[0]][:4] if maps else []
    return keys or None


def _keys_of_another_type(p: Pair) -> list[tuple[Any, Any]] | None:
    """(expected key, produced key) for every key only one mapping has, when each pairs one-to-one with a key of the
    other that differs only by its type (`b'foo'` and `'foo'`; `1` and `'1'`); None when any key has no such twin."""
    maps = _mapping_pair(p)
    if maps is None or isinstance(p.expected, Printed) or isinstance(p.got, Printed):
        return None
    missing = [k for k in maps[0] if k not in maps[1]]
    extra = [k for k in maps[1] if k not in maps[0]]
    twins = [(k, [g for g in extra if _same_key_text(k, g)]) for k in missing]
    if not missing or len(missing) != len(extra) or any(len(found) != 1 for _, found in twins):
        return None
    pairs = [(k, found[0]) for k, found in twins]
    return pairs if len({id(g) for _, g in pairs}) == len(extra) else None


def _same_key_text(a: Any, b: Any) -> bool:
    """Two keys of different types that write the same text: a str and its UTF-8 bytes, a str and an int's numeral."""
    for x, y in ((a, b), (b, a)):
        if isinstance(x, bytes) and isinstance(y, str) and not isinstance(y, Printed):
            try:
                return x.decode("utf-8") == y
            except UnicodeDecodeError:
                return False
        if isinstance(x, int) and not isinstance(x, bool) and isinstance(y, str) and not isinstance(y, Printed):
            return str(x) == y
    return False


def _keys_as_another_type(p: Pair, twins: list[tuple[Any, Any]]) -> str:
    wanted, made = [k for k, _ in twins][:4], [g for _, g in twins][:4]
    kinds = type(wanted[0]).__name__, type(made[0]).__name__
    if p.sided:
        return (f"The key(s) {', '.join(map(repr, made))} are there as {kinds[1]} where {kinds[0]} key(s) "
                f"{', '.join(map(repr, wanted))} are expected: the keys differ only by type.")  # fmt: skip
    return (f"The key(s) differ only by type: {', '.join(map(repr, wanted))} in the {p.labels[0]} value, "
            f"{', '.join(map(repr, made))} in the {p.labels[1]}.")  # fmt: skip


def _lacks_keys(p: Pair, sided: bool, missing: list[str]) -> str:
    return f"The object lacks key(s) {', '.join(missing)} that the expected one has."


def _has_extra_keys(p: Pair, sided: bool, extra: list[str]) -> str:
    return f"The object has key(s) {', '.join(extra)} that the expected one does not have."


def _kinds_differ(p: Pair) -> bool:
    e, a = p.expected, p.got
    if _is_nothing(e) or _is_nothing(a) or isinstance(e, Obj) or isinstance(a, Obj):
        return False
    return kind_of(e) != kind_of(a)


def _wrong_type(p: Pair, sided: bool, known: bool, differ: bool) -> str:
    return f"The value has another type: {kind_of(p.got)} where {kind_of(p.expected)} is expected."


def _text_and_bytes(p: Pair) -> tuple[str, bytes] | None:
    """(the str, the bytes) when one value is a str and the other bytes that decode (UTF-8) to that very text."""
    e, a = p.expected, p.got
    if isinstance(e, str) and isinstance(a, bytes):
        text, data = e, a
    elif isinstance(a, str) and isinstance(e, bytes):
        text, data = a, e
    else:
        return None
    if isinstance(text, Printed):  # a text whose kind is unknown is no str
        return None
    try:
        return (text, data) if data.decode("utf-8") == text else None
    except UnicodeDecodeError:
        return None


def _text_as_bytes(p: Pair, found: tuple[str, bytes]) -> str:
    text, data = found
    if p.sided:
        wanted = "a str is" if p.got is data else "bytes are"
        return (f"The same text came back as {'bytes' if p.got is data else 'a str'} where {wanted} expected: "
                f"{_clip(repr(p.got), 60)} where {_clip(repr(p.expected), 60)} is expected.")  # fmt: skip
    first, second = ("a str", "bytes") if p.expected is text else ("bytes", "a str")
    return (f"The same text {_clip(repr(text), 60)}, as {first} in the {p.labels[0]} value and as {second} in the {p.labels[1]} "
            f"({_clip(repr(p.expected), 60)} and {_clip(repr(p.got), 60)}).")  # fmt: skip


def _premise(name: str, states: str, check: Any) -> Premise[Pair]:
    return Premise(name, states, check)


_LISTS = _premise("two lists", "both values are sequences", _sequences)

VALUE_RULES: tuple[Rule[Pair], ...] = (
    Rule("nothing came back", (SIDES, _premise("nothing produced", "the produced value is None/null/undefined and "
         "a value is expected", lambda p: p.got is None and not _is_nothing(p.expected))), lambda p, s, n: _nothing_came_back(p)),
    Rule("absence for its name", (SIDES, _premise("absence, its name expected", "the produced value is absence "
         "itself (None/null/undefined/nil) and the expected one is its name written as a string",
         _absence_named)), _absence_as_text),
    Rule("something came back", (SIDES, _premise("None expected", "None is expected and a value was produced",
         lambda p: p.expected is None and not _is_nothing(p.got))), lambda p, s, n: _something_came_back(p)),
    Rule("booleans flipped", (_premise("two booleans", "both values are booleans and differ",
         lambda p: isinstance(p.expected, bool) and isinstance(p.got, bool) and p.expected != p.got),),
         lambda p, b: _booleans(p)),
    Rule("nearly equal", (NUMBERS, _premise("close fractions", "one number has a fraction and they are equal to 6 "
         "significant digits", lambda p: (n := numbers(p)) is not None and any(isinstance(x, float) for x in n)
         and math.isclose(n[0], n[1], rel_tol=1e-6, abs_tol=1e-9))), _nearly_equal),
    Rule("cut off, not rounded", (SIDES, NUMBERS, _premise("one step below, rounds to it", "the produced number "
         "is one step of its last decimal below the expected one, which has fewer decimals and is the produced one "
         "rounded to them", _truncated)), _truncated_says),
    Rule("fewer decimals", (NUMBERS, _premise("one is the other to fewer decimals", "one number, written with at "
         "least one decimal, is the other (written with more) rounded or cut off to that many decimals",
         _fewer_decimals)), _fewer_decimals_says),
    Rule("a text's encoded length", (NUMBERS, INTEGERS, _premise("a printed text's UTF-8 length", "one number is "
         "pytest's `len()` of a text or bytes printed whole, and the other is its length in the other unit (characters "
         "of the bytes' UTF-8 text, bytes of the text's UTF-8 form)", _encoded_length)), _encoded_says),
    Rule("off by one", (NUMBERS, INTEGERS, _premise("one apart", "the integers differ by one",
         lambda p: (n := numbers(p)) is not None and abs(n[0] - n[1]) == 1), BOUNDARY,
         _premise("not a printed length", "the count is not pytest's `len()` of a text or bytes it printed whole (their "
         "content, not the counting, is what differs)", _not_printed_length)), _off_by_one),
    Rule("stayed at zero", (SIDES, NUMBERS, _premise("zero produced", "the produced number is 0 and the expected "
         "one is not", lambda p: (n := numbers(p)) is not None and n[1] == 0), ACCUMULATION), _zero),
    Rule("sign inverted", (NUMBERS, _premise("opposite numbers", "the numbers are opposites",
         lambda p: (n := numbers(p)) is not None and n[0] == -n[1])), _sign),
    Rule("doubled", (SIDES, NUMBERS, _premise("twice", "the produced number is twice the expected one",
         lambda p: (n := numbers(p)) is not None and n[1] == 2 * n[0]), ACCUMULATION), _doubled),
    Rule("half", (SIDES, NUMBERS, _premise("half", "the produced number is half the expected one",
         lambda p: (n := numbers(p)) is not None and n[1] * 2 == n[0]), ACCUMULATION), _half),
    Rule("reciprocal", (SIDES, NUMBERS, _premise("reciprocals", "the numbers are each other's reciprocal (their "
         "product is 1) and neither is 1 or -1", _reciprocals)), _reciprocal),
    Rule("a scale", (SIDES, NUMBERS, _premise("a power of ten or 1024 apart", "the produced number is the expected "
         "one times or divided by 10, 100, 1000 or 1024", _scale)), _scaled),
    Rule("type names", (SIDES, _premise("two type names", "both texts are type names (`typeof x` compared)",
         lambda p: isinstance(p.expected, str) and isinstance(p.got, str) and p.expected in _TYPE_NAMES
         and p.got in _TYPE_NAMES and p.expected != p.got)), _type_names),
    Rule("invisible characters", (STRINGS, _premise("equal but for invisible characters", "the texts are equal once "
         "characters that print as nothing are dropped", _invisible_difference)), _invisible_characters),
    Rule("letter case", (STRINGS, _premise("equal but for case", "the texts are equal ignoring letter case",
         lambda p: str(p.expected).lower() == str(p.got).lower())), _case),
    Rule("whitespace", (STRINGS, _premise("equal but for whitespace", "the texts are equal without whitespace",
         lambda p: "".join(str(p.expected).split()) == "".join(str(p.got).split()))), _whitespace),
    Rule("empty text", (SIDES, STRINGS, _premise("empty produced", "the produced text is empty",
         lambda p: not p.got and bool(p.expected))), _empty),
    Rule("cut short", (SIDES, STRINGS, _premise("a prefix", "the produced text is a start of the expected one",
         lambda p: bool(p.got) and str(p.expected).startswith(str(p.got)))), _cut_short),
    Rule("extra at the end", (SIDES, STRINGS, _premise("extended", "the produced text starts with the expected one",
         lambda p: bool(p.expected) and str(p.got).startswith(str(p.expected)))), _extra_at_end),
    *TEXT_RULES,
    Rule("another object", (_premise("same class, addresses only", "both are objects of one class whose reprs show "
         "only their addresses", lambda p: isinstance(p.expected, Obj) and isinstance(p.got, Obj)
         and p.expected.cls == p.got.cls and bool(p.expected.address and p.got.address)
         and not p.expected.fields and not p.got.fields),), _same_class_objects),
    Rule("another class", (SIDES, _premise("two classes", "both are objects of different classes",
         lambda p: isinstance(p.expected, Obj) and isinstance(p.got, Obj) and p.expected.cls != p.got.cls)), _other_class),
    Rule("empty list", (SIDES, _LISTS, _premise("empty produced", "the produced list is empty and the expected one "
         "is not", lambda p: not p.got and bool(p.expected))), _empty_list),
    Rule("another sequence type", (SIDES, _LISTS, _premise("same items, same order", "both hold the same items, whole, in "
         "the same order (or none), as sequences of different types", lambda p: type(p.expected) is not type(p.got)
         and _same_items_in_order(p))), _sequence_type),
    Rule("same items, another order", (_LISTS, _premise("same items", "both hold the same items, whole (equal as "
         "a multiset), in another sequence", _reorder)), _reordered),
    Rule("extra items", (SIDES, _LISTS, _premise("expected items then more", "the produced list starts with the "
         "expected items and has more", _extra_after)), _extra_items),
    Rule("items missing", (SIDES, _LISTS, _premise("a subsequence", "the produced list is the expected one with "
         "items left out", _lacks_subsequence)), _lacks_items),
    Rule("one item more or less", (SIDES, _LISTS, _premise("one apart in length", "the lists' lengths differ by one",
         _one_off_length)), _one_item),
    Rule("items not produced", (SIDES, _LISTS, _premise("expected items absent", "expected items are absent from "
         "the produced list (lengths apart by more than one)", _lacks_same_length)), _lacks_items),
    Rule("keys of another type", (_premise("keys differ by type only", "every key only one mapping has is, in the "
         "other, a key that differs only by its type (a str and its bytes, a str and an int's numeral)",
         _keys_of_another_type),), _keys_as_another_type),
    Rule("keys missing", (SIDES, _premise("keys absent", "the expected mapping has keys the produced one lacks",
         _missing_keys)), _lacks_keys),
    Rule("unexpected keys", (SIDES, _premise("keys added", "the produced mapping has keys the expected one lacks",
         _extra_keys)), _has_extra_keys),
    Rule("text and bytes", (_premise("a str and its bytes", "one value is a str, the other bytes that decode (UTF-8) "
         "to that very text", _text_and_bytes),), _text_as_bytes),
    Rule("wrong type", (SIDES, KNOWN_KINDS, _premise("kinds differ", "the values are of different kinds",
         _kinds_differ)), _wrong_type),
)  # fmt: skip


# --- a number inside two texts ----------------------------------------------------------------------------

# a numeral as a token of text (`42`, `9.9`): not part of a word, nor of a grouped numeral or a version (`1,000`,
# `1_000`, `1.5.2`); leading zeros make it digits, not a number (`007`)
_NUMERAL = re.compile(r"(?<![\w,.])-?(?:0|[1-9]\d*)(?:\.\d+)?(?![\w]|[.,_]\d)")


def _number_within(pair: Pair) -> tuple[Pair, str] | None:
    """Two texts equal but for one number token: the pair of numbers, and the sentence that leads the hint."""
    if not (isinstance(pair.expected, str) and isinstance(pair.got, str)) or pair.within is not None:
        return None
    e_tokens, a_tokens = _NUMERAL.split(pair.expected), _NUMERAL.split(pair.got)
    e_nums, a_nums = _NUMERAL.findall(pair.expected), _NUMERAL.findall(pair.got)
    if e_tokens != a_tokens or len(e_nums) != len(a_nums) or not e_nums:
        return None
    differing = [i for i, (x, y) in enumerate(zip(e_nums, a_nums, strict=True)) if x != y]
    if len(differing) != 1:
        return None
    e, a = e_nums[differing[0]], a_nums[differing[0]]
    exp_text, got_text = str(pair.expected), str(pair.got)
    short = len(exp_text) <= 60 and len(got_text) <= 60
    if pair.sided:
        lead = (f"The number {e} in {_repr(exp_text)} came out as {a} ({_repr(got_text)}). " if short
                else f"The number {e} in the text came out as {a}. ")  # fmt: skip
    else:
        lead = (f"The number {e} in the {pair.labels[0]} text {_repr(exp_text)} is {a} in the {pair.labels[1]} one "
                f"({_repr(got_text)}). " if short else f"The number {e} in the {pair.labels[0]} text is {a} in the "
                f"{pair.labels[1]} one. ")  # fmt: skip
    number = float if "." in e + a else int
    return replace(pair, expected=number(e), got=number(a), within=(exp_text, got_text), numerals=(e, a)), lead


def _index_in_texts(p: Pair) -> bool:
    """The differing number is an index in both texts: a whole `/`-separated path segment or `[N]`."""
    assert p.within is not None
    for text, number in ((p.within[0], p.expected), (p.within[1], p.got)):
        if not re.search(rf"(?:/{number}(?:/|$)|\[{number}\])", text):
            return False
    return True


# --- helpers ----------------------------------------------------------------------------------------------


def _invisible(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cn", "Cf", "Cc", "Co", "Cs") and ch not in "\n\t\r"


def _visible(text: str) -> str:
    return "".join(c for c in text if not _invisible(c))


def _is_subsequence(short: list[Any], long: list[Any]) -> bool:
    it = iter(long)
    return all(any(repr(x) == repr(y) for y in it) for x in short)


def _missing_items(short: list[Any], long: list[Any]) -> list[Any]:
    remaining = [repr(x) for x in short]
    missing = []
    for item in long:
        if remaining and repr(item) == remaining[0]:
            remaining.pop(0)
        else:
            missing.append(item)
    return missing


def _window(text: str, at: int) -> str:
    """The text around position `at`: quoted when it is a string, as printed when its kind is unknown (Go's %v);
    `…` outside it where the text goes on, so an excerpt never reads as the whole value (`0.6835…`)."""
    start, end = max(0, at - 10), at + 20
    part = text[start:end]
    shown = _clip(_escaped(part) if isinstance(text, Printed) else repr(part))
    return f"{'…' if start else ''}{shown}{'…' if end < len(text) else ''}"


def _first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _show(value: Any) -> str:
    if isinstance(value, Obj) and value.address and not value.fields:
        return kind_of(value)
    if isinstance(value, Printed):
        return _clip(_escaped(value))
    return _clip(repr(value))


def _escaped(text: str) -> str:
    """A printed text as printed, on one line: a line end or another control character written as its escape
    (`\\n`), without quotes (its kind is unknown, so it is not shown as a string)."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in str(text))


def _repr(text: str) -> str:
    return repr(str(text))


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
