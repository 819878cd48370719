"""Hints from an (expected, got) pair: what kind of difference it is, said in a sentence."""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any

_NOTHING = {"none", "undefined", "null", "nil", "<nil>"}
_MAX_LITERAL = 200_000  # longer values are compared as text


def value_hint(expected: str, got: str) -> str | None:
    exp, act = _literal(expected), _literal(got)
    if got.strip().lower() in _NOTHING and expected.strip().lower() not in _NOTHING:
        return ("The code produced nothing (None/undefined/null) where a value was expected: look for a missing "
                "`return`, or an early return on the branch this input takes.")  # fmt: skip
    if isinstance(exp, bool) and isinstance(act, bool):
        return ("The condition comes out the other way: check the comparison operator, a stray negation, or which "
                "value the check actually tests.")  # fmt: skip
    if _is_number(exp) and _is_number(act):
        return _number_hint(float(exp), float(act))
    if isinstance(exp, str) and isinstance(act, str):
        return _string_hint(exp, act)
    if isinstance(exp, list | tuple) and isinstance(act, list | tuple):
        return _sequence_hint(list(exp), list(act))
    if isinstance(exp, dict) and isinstance(act, dict):
        return _dict_hint(exp, act)
    if exp is None and act is None:
        return _string_hint(expected.strip(), got.strip())
    if exp is not None and act is not None and type(exp) is not type(act):
        return (f"The value has the wrong type ({_type_name(act)} where {_type_name(exp)} is expected): convert or "
                "parse it where it is produced, not in the test.")  # fmt: skip
    return None


def _number_hint(exp: float, act: float) -> str:
    if math.isclose(exp, act, rel_tol=1e-6, abs_tol=1e-9):
        return ("Floating-point rounding: compare with a tolerance (pytest.approx, toBeCloseTo) or round the "
                "result to the precision the spec asks for.")  # fmt: skip
    if abs(exp - act) == 1:
        return ("Off by one: check loop bounds, inclusive vs exclusive ranges, and 0- vs 1-based counting in the "
                "code that computes this number.")  # fmt: skip
    if act == 0:
        return ("The result stayed at zero: the loop or query that should accumulate it never ran or never added "
                "to it (empty input, a filter that matches nothing, a value not assigned back).")  # fmt: skip
    if exp != 0 and act == -exp:
        return "The sign is inverted: check the order of a subtraction or a negated condition."
    if exp != 0 and act == 2 * exp:
        return "The result is doubled: something is counted or applied twice (duplicate loop, handler or insert)."
    if exp != 0 and act * 2 == exp:
        return "The result is half the expected one: one of two contributions is missing (a skipped item or branch)."
    return ("The computed number differs: trace the calculation on this test's input and check the formula, "
            "units and the order of operations.")  # fmt: skip


def _string_hint(exp: str, act: str) -> str:
    if exp.lower() == act.lower():
        return "The text differs only in letter case: check capitalisation where the string is built or normalised."
    if "".join(exp.split()) == "".join(act.split()):
        return ("The text differs only in whitespace (spaces, indentation or a trailing newline): check how the "
                "parts are joined and formatted.")  # fmt: skip
    if not act:
        return "An empty string came back: the value is never filled in, or a branch returns before building it."
    if exp.startswith(act):
        return "The text is cut short: the end of the expected string is missing (loop stops early, slice too short)."
    if act.startswith(exp):
        return "The text has extra content at the end: something is appended twice or not trimmed."
    at = next((i for i, (a, b) in enumerate(zip(exp, act, strict=False)) if a != b), min(len(exp), len(act)))
    return (f"The text first differs at character {at + 1} ({_around(exp, at)!r} expected, {_around(act, at)!r} "
            "produced): check how that part of the string is built (separators, joins, escaping, wording).")  # fmt: skip


def _around(text: str, at: int) -> str:
    return text[max(0, at - 8) : at + 8]


def _sequence_hint(exp: list[Any], act: list[Any]) -> str:
    if not act and exp:
        return ("An empty list came back: the filter or query matched nothing; check its condition and that the "
                "data the test sets up is really stored.")  # fmt: skip
    if len(exp) == len(act) and _sorted_repr(exp) == _sorted_repr(act):
        return ("Same items in a different order: sort the result or keep insertion order (no iteration over an "
                "unordered set or dict).")  # fmt: skip
    if abs(len(exp) - len(act)) == 1:
        more = "one item too many" if len(act) > len(exp) else "one item missing"
        return f"The list has {more}: look for an off-by-one bound or a duplicated / skipped append."
    missing = [repr(x) for x in exp if x not in act][:3]
    if missing:
        return (f"The result lacks {', '.join(missing)}: check the condition that decides which items are kept "
                "or produced.")  # fmt: skip
    return "The list has the right items but wrong counts or extras: look for duplicates added by the code."


def _dict_hint(exp: dict[Any, Any], act: dict[Any, Any]) -> str:
    missing = [str(k) for k in exp if k not in act][:4]
    extra = [str(k) for k in act if k not in exp][:4]
    if missing:
        return (f"The object lacks key(s) {', '.join(missing)}: add them where the object is built or serialised "
                "(check the field names against the contract).")  # fmt: skip
    if extra:
        return (f"The object has unexpected key(s) {', '.join(extra)}: drop them from the response or update the "
                "contract if they are intended.")  # fmt: skip
    differing = [str(k) for k in exp if exp[k] != act.get(k)][:4]
    return f"Key(s) {', '.join(differing)} hold different values: check how those fields are computed or mapped."


_JS_KEY = re.compile(r"([{,]\s*)([A-Za-z_$][\w$]*)\s*:")
_JS_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _literal(text: str) -> Any:
    """A Python / JSON / JavaScript-inspect literal from a value as a framework printed it, or None."""
    text = text.strip()
    if not text or len(text) > _MAX_LITERAL:
        return None
    for loader in (json.loads, ast.literal_eval, _js_literal):
        try:
            return loader(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


def _js_literal(text: str) -> Any:
    """`{ a: 1, b: 'x' }` / `[ 1, 2 ]` as util.inspect and chai print them."""
    if not text.startswith(("{", "[")):
        raise ValueError("not an object or array")
    text = re.sub(r"^(?:Object|Array)\s+", "", text)
    text = _JS_KEY.sub(r'\1"\2":', text.replace("'", '"'))
    text = _JS_TRAILING_COMMA.sub(r"\1", text).replace("undefined", "null")
    return json.loads(text)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _sorted_repr(items: list[Any]) -> list[str]:
    return sorted(repr(x) for x in items)


def _type_name(value: Any) -> str:
    return {str: "a string", int: "a number", float: "a number", list: "a list", dict: "an object",
            bool: "a boolean", tuple: "a tuple"}.get(type(value), type(value).__name__)  # fmt: skip
