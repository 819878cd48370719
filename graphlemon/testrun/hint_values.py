"""Hints from an (expected, got) pair, by rules over the values' parsed types (`value_types`).

Each rule states its preconditions on the parsed values — both numbers (numerals in strings count),
both strings, both sequences, both mappings, objects of one class, nothing against something — and
gives a hint only when they hold. When none holds, `value_facts` says what is known without a claim:
where the values first differ (the path into the structure, addresses ignored) and the two parts there.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable
from typing import Any

from .value_types import (
    Difference,
    Elided,
    Obj,
    Unknown,
    first_differing_part,
    is_number,
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


def value_hint(expected: str, got: str, limit: int = 100) -> str | None:
    """A specific hint for the pair, or None when no rule's preconditions hold. The rules are tried on the
    whole values, then on their first differing part, level by level (a mapping's key, a list's item)."""
    exp, act = _typed_pair(expected, got)
    path: list[str] = []
    others = 0
    for _ in range(limit):
        hint = _pair_hint(exp, act)
        if hint:
            if not path:
                return hint
            note = (
                f" (the first of {others + 1} differing parts)"
                if others > 1
                else " (the first differing part)"
                if others
                else ""
            )
            return f"At `{_clip(''.join(path))}`{note}: {hint}"
        step = first_differing_part(exp, act)
        if step is None:
            return None
        label, exp, act, count = step
        path.append(label)
        others = max(others, count - 1) if count else max(others, 1)  # 0: a cut-off value, others unknown
    return None


def value_facts(expected: str, got: str) -> str:
    """Facts only: where the parsed values first differ and what each holds there (no claim of a cause)."""
    diff = smallest_difference(*_typed_pair(expected, got))
    where = f" at `{_clip(diff.where)}`" if diff.path else ""
    if not diff.only:
        where += " (the first differing part)"
    e, g = _show(diff.expected), _show(diff.got)
    if isinstance(diff.expected, str) and isinstance(diff.got, str):
        at = _first_difference(diff.expected, diff.got)
        return f"They differ{where} from character {at + 1}: {_clip(_repr(diff.expected[max(0, at - 10) : at + 20]))} expected, {_clip(_repr(diff.got[max(0, at - 10) : at + 20]))} produced."
    if isinstance(diff.expected, Obj) and isinstance(diff.got, Obj) and diff.expected.cls != diff.got.cls:
        return f"They differ{where}: {kind_of(diff.got)} where {kind_of(diff.expected)} is expected."
    return f"They differ{where}: {e} expected, {g} produced."


def _typed_pair(expected: str, got: str) -> tuple[Any, Any]:
    """The parsed pair; a value no parser reads stands as its text."""
    exp, act = parse_pair(expected, got)
    return (exp.text if isinstance(exp, Unknown) else exp), (act.text if isinstance(act, Unknown) else act)


def _pair_hint(exp: Any, act: Any) -> str | None:
    for rule in _RULES:
        hint = rule(exp, act)
        if hint:
            return hint
    return None


# --- rules: each returns None when its preconditions do not hold --------------------------------------


def _nothing_came_back(exp: Any, act: Any) -> str | None:
    """got is None/null/undefined, expected is a value."""
    if act is None and exp is not None and not _is_nothing_word(exp):
        return ("The code produced nothing (None/undefined/null) where a value was expected: look for a missing "
                "`return`, or an early return on the branch this input takes.")  # fmt: skip
    return None


def _something_came_back(exp: Any, act: Any) -> str | None:
    """expected None, got a value: the code found or built something where nothing is due."""
    if exp is None and act is not None and not _is_nothing_word(act):
        return (f"{_capital(kind_of(act))} came back where the test expects None: the code finds or builds a value "
                "for this input where it should not (check the condition that should yield nothing).")  # fmt: skip
    return None


def _booleans(exp: Any, act: Any) -> str | None:
    if isinstance(exp, bool) and isinstance(act, bool) and exp != act:
        return ("The condition comes out the other way: check the comparison operator, a stray negation, or which "
                "value the check actually tests.")  # fmt: skip
    return None


def _numbers(exp: Any, act: Any) -> str | None:
    """Both numbers, or both numerals written as strings (`'-32769'` for `'-32768'`)."""
    e, a = _as_number(exp), _as_number(act)
    if e is None or a is None or e == a:
        return None
    written = " (numbers written as text)" if isinstance(exp, str) else ""
    return _number_hint(e, a, written)


def _number_hint(e: int | float, a: int | float, written: str = "") -> str | None:
    """Integers are compared exactly (a 64-bit bound is not a float); rounding is a claim about fractions."""
    fractional = isinstance(e, float) or isinstance(a, float)
    if fractional and math.isclose(e, a, rel_tol=1e-6, abs_tol=1e-9):
        return ("Floating-point rounding: compare with a tolerance (pytest.approx, toBeCloseTo) or round the "
                "result to the precision the spec asks for.")  # fmt: skip
    if abs(e - a) == 1 and not fractional:
        return (f"Off by one{written}: check loop bounds, inclusive vs exclusive ranges, and 0- vs 1-based "
                "counting in the code that computes this number.")  # fmt: skip
    if a == 0:
        return ("The result stayed at zero: the loop or query that should accumulate it never ran or never added "
                "to it (empty input, a filter that matches nothing, a value not assigned back).")  # fmt: skip
    if e != 0 and a == -e:
        return "The sign is inverted: check the order of a subtraction or a negated condition."
    if e != 0 and a == 2 * e:
        return "The result is doubled: something is counted or applied twice (duplicate loop, handler or insert)."
    if e != 0 and a * 2 == e:
        return "The result is half the expected one: one of two contributions is missing (a skipped item or branch)."
    return None


def _type_names(exp: Any, act: Any) -> str | None:
    """Both strings are type names (`typeof x` compared with 'number'): the value has the wrong type."""
    if isinstance(exp, str) and isinstance(act, str) and exp in _TYPE_NAMES and act in _TYPE_NAMES and exp != act:
        return (f"The test compares a type: the value is {_TYPE_NAMES[act]} where {_TYPE_NAMES[exp]} is expected — "
                "convert or parse it where it is produced.")  # fmt: skip
    return None


def _number_in_text(exp: Any, act: Any) -> str | None:
    """Both strings, equal but for one number in them (`'-129..127'` for `'-128..127'`)."""
    if not (isinstance(exp, str) and isinstance(act, str)):
        return None
    e_parts, a_parts = _split_numbers(exp), _split_numbers(act)
    if len(e_parts) != len(a_parts) or len(e_parts) < 2:
        return None
    differing = [i for i, (x, y) in enumerate(zip(e_parts, a_parts, strict=True)) if x != y]
    if len(differing) != 1 or differing[0] % 2 == 0:  # odd positions hold the numbers
        return None
    e_num, a_num = e_parts[differing[0]], a_parts[differing[0]]
    kind = _number_hint(int(e_num), int(a_num))
    if kind is None:
        return None
    if len(exp) <= 60 and len(act) <= 60:
        return f"The number {e_num} in {_repr(exp)} came out as {a_num} ({_repr(act)}). {kind}"
    return f"The number {e_num} in the text came out as {a_num}. {kind}"


def _invisible_characters(exp: Any, act: Any) -> str | None:
    """Both strings, equal once characters that print as nothing (U+FFFF, zero-width, controls) are dropped."""
    if not (isinstance(exp, str) and isinstance(act, str)) or exp == act:
        return None
    if _visible(exp) != _visible(act):
        return None
    extra = [c for c in act if _invisible(c)]
    lacking = [c for c in exp if _invisible(c)]
    if len(extra) > len(lacking):
        names = ", ".join(sorted({_code_point(c) for c in extra}))
        return (f"The text holds {names}, which prints as nothing and the expected text lacks: drop or replace it "
                "where the text is cleaned or built.")  # fmt: skip
    names = ", ".join(sorted({_code_point(c) for c in lacking}))
    return f"The expected text holds {names} (it prints as nothing), which the result lacks: keep it where the text is built."


def _strings(exp: Any, act: Any) -> str | None:
    """Both strings: letter case, whitespace, empty, cut short, extra at the end."""
    if not (isinstance(exp, str) and isinstance(act, str)) or exp == act:
        return None
    if exp.lower() == act.lower():
        return "The text differs only in letter case: check capitalisation where the string is built or normalised."
    if "".join(exp.split()) == "".join(act.split()):
        return ("The text differs only in whitespace (spaces, indentation or a trailing newline): check how the "
                "parts are joined and formatted.")  # fmt: skip
    if not act:
        return "An empty string came back: the value is never filled in, or a branch returns before building it."
    if exp.startswith(act):
        return f"The text is cut short: it ends where {_clip(_repr(exp[len(act) :]))} should follow."
    if act.startswith(exp):
        return f"The text has extra content at the end: {_clip(_repr(act[len(exp) :]))}."
    return None


def _objects(exp: Any, act: Any) -> str | None:
    """Objects whose reprs show only their addresses: equal-looking, so they are different objects."""
    if not (isinstance(exp, Obj) and isinstance(act, Obj)):
        return None
    if exp.cls == act.cls and exp.address and act.address and not exp.fields and not act.fields:
        return (f"Both are `{exp.cls}` objects whose reprs show only their addresses: the code returns a different "
                f"`{exp.cls}` object than the one the test expects (another item, or a copy where `{exp.cls}` "
                "compares by identity); compare the objects' fields to see which one came back.")  # fmt: skip
    if exp.cls != act.cls:
        return f"{_capital(kind_of(act))} came back where {kind_of(exp)} is expected."
    return None


def _sequences(exp: Any, act: Any) -> str | None:
    if not (isinstance(exp, list | tuple) and isinstance(act, list | tuple)):
        return None
    known = [x for x in act if not isinstance(x, Elided)]
    length = len(known) + sum(x.count for x in act if isinstance(x, Elided))
    if not act and exp:
        return ("An empty list came back: the filter or query matched nothing; check its condition and that the "
                "data the test sets up is really stored.")  # fmt: skip
    if length == len(known) and len(exp) == len(act) and sorted(map(repr, exp)) == sorted(map(repr, act)):
        return ("Same items in a different order: sort the result or keep insertion order (no iteration over an "
                "unordered set or dict).")  # fmt: skip
    if length > len(exp) and list(known[: len(exp)]) == list(exp):
        extra = known[len(exp) :]
        shown = f": {', '.join(_clip(repr(x), 40) for x in extra[:3])}" if extra else ""
        return f"The list has {length - len(exp)} extra item(s) after the {len(exp)} expected{shown}; check what adds them."
    if length == len(known) and len(exp) > length and _is_subsequence(known, exp):
        missing = _missing_items(known, list(exp))
        return f"The list lacks {', '.join(_clip(repr(x), 40) for x in missing[:3])}: check the condition that decides which items are kept or produced."
    if length == len(known) and abs(len(exp) - length) == 1:
        more = "one item too many" if length > len(exp) else "one item missing"
        return f"The list has {more} ({length} items for {len(exp)}): look for an off-by-one bound or a duplicated / skipped append."
    if length == len(known) and length != len(exp):  # same length: the first differing item tells more
        missing = [x for x in exp if x not in known][:3]
        if missing:
            return f"The result lacks {', '.join(_clip(repr(x), 40) for x in missing)}: check the condition that decides which items are kept or produced."
    return None


def _mappings(exp: Any, act: Any) -> str | None:
    if isinstance(exp, Obj) and isinstance(act, Obj) and exp.cls == act.cls:
        exp, act = exp.fields, act.fields
    if not (isinstance(exp, dict) and isinstance(act, dict)):
        return None
    missing = [repr(k) for k in exp if k not in act][:4]
    extra = [repr(k) for k in act if k not in exp][:4]
    if missing:
        return (f"The object lacks key(s) {', '.join(missing)}: add them where the object is built or serialised "
                "(check the field names against the contract).")  # fmt: skip
    if extra:
        return (
            f"The object has unexpected key(s) {', '.join(extra)}: check where the object is built which keys it adds."
        )
    return None


def _wrong_type(exp: Any, act: Any) -> str | None:
    """Values of different kinds (a string where a number is expected, …)."""
    if exp is None or act is None or isinstance(exp, Obj) or isinstance(act, Obj):
        return None
    if kind_of(exp) != kind_of(act):
        return (f"The value has the wrong type ({kind_of(act)} where {kind_of(exp)} is expected): convert or parse "
                "it where it is produced, not in the test.")  # fmt: skip
    return None


_RULES: tuple[Callable[[Any, Any], str | None], ...] = (
    _nothing_came_back, _something_came_back, _booleans, _numbers, _type_names, _number_in_text,
    _invisible_characters, _strings, _objects, _sequences, _mappings, _wrong_type,
)  # fmt: skip


# --- helpers ----------------------------------------------------------------------------------------------


def _is_nothing_word(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() in ("none", "undefined", "null", "nil", "<nil>")


def _as_number(value: Any) -> int | float | None:
    if is_number(value):
        return value if math.isfinite(value) else None
    if isinstance(value, str) and _is_numeral(value):
        return float(value) if "." in value else int(value)
    return None


def _is_numeral(text: str) -> bool:
    body = text[1:] if text[:1] in "+-" else text
    whole, _, frac = body.partition(".")
    return bool(whole) and whole.isdigit() and (not frac or frac.isdigit()) and whole.isascii()


def _split_numbers(text: str) -> list[str]:
    """`'-129..127'` → ['', '-129', '..', '127', '']: text and numbers alternating (numbers at odd places)."""
    parts, current, i = [""], "", 0
    while i < len(text):
        starts_number = text[i].isdigit() or (text[i] == "-" and i + 1 < len(text) and text[i + 1].isdigit()
                                              and (i == 0 or not text[i - 1].isalnum()))  # fmt: skip
        if starts_number and text[i].isascii():
            j = i + 1
            while j < len(text) and text[j].isdigit() and text[j].isascii():
                j += 1
            parts[-1] += current
            parts += [text[i:j], ""]
            current, i = "", j
            continue
        current += text[i]
        i += 1
    parts[-1] += current
    return parts


def _invisible(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cn", "Cf", "Cc", "Co", "Cs") and ch not in "\n\t\r"


def _visible(text: str) -> str:
    return "".join(c for c in text if not _invisible(c))


def _code_point(ch: str) -> str:
    return f"U+{ord(ch):04X}"


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


def _first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _show(value: Any) -> str:
    if isinstance(value, Obj) and value.address and not value.fields:
        return kind_of(value)
    return _clip(_repr(value) if isinstance(value, str) else repr(value))


def _repr(text: str) -> str:
    """A string shown with its invisible characters named (`'ab\\uffffcd'`)."""
    return repr(text)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["Difference", "value_facts", "value_hint"]
