"""Small Python expressions, read without executing anything: call expressions, values, formulas.

The triager reads function calls and values out of pytest output (`where 6 = mul(-2, 3)`),
test source lines (`assert mul(-2, 3) == -6`) and SDD sentences (`mul(a, b)` returns
`a * b`). `parse_call` turns a call's text into a `CallExpr`; `read_value` turns a repr
(`-6`, `'Fizz'`, `Decimal('92.00')`, `datetime.date(2024, 3, 10)`) into a Python value;
`evaluate` computes a formula over bound parameters with a whitelist of operators and
functions (no attribute access, no imports, bounded sizes). Nothing is ever `eval`ed.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any


class Undefined(Exception):
    """The expression has no value for these inputs (division by zero, a type error, too large)."""


MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING", "__bool__": lambda self: False})()
MAX_INT = 10**60
MAX_LEN = 10_000
MAX_TEXT = 400

_CONSTRUCTORS: dict[str, Any] = {
    "Decimal": Decimal, "decimal.Decimal": Decimal, "Fraction": Fraction, "fractions.Fraction": Fraction,
    "date": date, "datetime.date": date, "datetime": datetime, "datetime.datetime": datetime,
    "time": time, "datetime.time": time, "timedelta": timedelta, "datetime.timedelta": timedelta,
}  # fmt: skip
_FUNCTIONS: dict[str, Any] = {
    "abs": abs, "min": min, "max": max, "round": round, "len": len, "sum": sum, "int": int, "float": float,
    "str": str, "bool": bool, "sorted": sorted, "Decimal": Decimal, "Fraction": Fraction,
}  # fmt: skip
_BINOPS: dict[type, Any] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}  # fmt: skip
_CMPOPS: dict[type, Any] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}  # fmt: skip
_UNICODE_OPS = str.maketrans({"−": "-", "×": "*", "·": "*", "÷": "/", "“": '"', "”": '"', "‘": "'", "’": "'"})


@dataclass(frozen=True)
class CallExpr:
    """`mul(-2, 3)`: the function's name (last dotted segment), its arguments, its normalised text."""

    name: str
    text: str
    args: tuple[ast.expr, ...]
    keywords: tuple[tuple[str, ast.expr], ...]

    def literal_args(self) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
        """The argument values when every argument is a value (`mul(-2, 3)`), else None."""
        try:
            return tuple(value_of(a) for a in self.args), {k: value_of(v) for k, v in self.keywords}
        except Undefined:
            return None

    def parameters(self) -> tuple[tuple[str, Any], ...] | None:
        """A signature-like mention (`slugify(title, sep="-")`): (name, default or MISSING), else None."""
        if not all(isinstance(a, ast.Name) for a in self.args):
            return None
        out: list[tuple[str, Any]] = [(a.id, MISSING) for a in self.args if isinstance(a, ast.Name)]
        for key, node in self.keywords:
            try:
                out.append((key, value_of(node)))
            except Undefined:
                return None
        return tuple(out)


def clean(text: str) -> str:
    """Backticks off, typographic operators and quotes as ASCII."""
    return text.translate(_UNICODE_OPS).replace("`", "").strip()


def parse_expr(text: str) -> ast.expr | None:
    text = clean(text)
    if not text or len(text) > MAX_TEXT:
        return None
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None


def parse_call(text: str) -> CallExpr | None:
    """The call written in `text` (the whole text must be one call), or None."""
    node = parse_expr(text)
    return call_of(node) if isinstance(node, ast.Call) else None


def call_of(node: ast.Call) -> CallExpr | None:
    name = dotted(node.func)
    if name is None or any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        return None
    return CallExpr(
        name.rsplit(".", 1)[-1],
        ast.unparse(node),
        tuple(node.args),
        tuple((k.arg, k.value) for k in node.keywords if k.arg),
    )


def dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def read_value(text: str) -> Any:
    """A value written as Python would print it, or MISSING when it is not one (`<Obj at 0x..>`)."""
    node = parse_expr(text)
    if node is None:
        return MISSING
    try:
        return value_of(node)
    except Undefined:
        return MISSING


def value_of(node: ast.expr) -> Any:
    """A literal, or a literal built with a known constructor (`Decimal('1.5')`, `datetime.date(2024, 3, 1)`)."""
    return evaluate(node, {}, functions=_CONSTRUCTORS)


def evaluate(node: ast.expr, names: dict[str, Any], *, functions: dict[str, Any] | None = None) -> Any:
    """The value of `node` with `names` bound; raises Undefined for anything outside the whitelist."""
    functions = _FUNCTIONS | _CONSTRUCTORS if functions is None else functions
    try:
        return _checked(_eval(node, names, functions))
    except Undefined:
        raise
    except (ArithmeticError, TypeError, ValueError, KeyError, IndexError, RecursionError) as exc:
        raise Undefined(f"{exc.__class__.__name__}: {exc}") from None


def _eval(node: ast.expr, names: dict[str, Any], fns: dict[str, Any]) -> Any:
    ev = lambda n: _checked(_eval(n, names, fns))  # noqa: E731
    match node:
        case ast.Constant(value=value) if isinstance(value, int | float | complex | str | bytes | bool | None):
            return value
        case ast.Name(id=name) if name in names:
            return names[name]
        case ast.Name(id="True" | "False" | "None" as name):
            return {"True": True, "False": False, "None": None}[name]
        case ast.UnaryOp(op=ast.USub(), operand=x):
            return -ev(x)
        case ast.UnaryOp(op=ast.UAdd(), operand=x):
            return +ev(x)
        case ast.UnaryOp(op=ast.Not(), operand=x):
            return not ev(x)
        case ast.BinOp(op=op, left=left, right=right) if type(op) in _BINOPS:
            a, b = ev(left), ev(right)
            if isinstance(op, ast.Pow) and (not isinstance(b, int | float) or abs(b) > 64):
                raise Undefined("exponent too large")
            if isinstance(op, ast.Mult) and isinstance(a, str | list | tuple | bytes) ^ isinstance(
                b, str | list | tuple | bytes
            ):
                n = b if isinstance(a, str | list | tuple | bytes) else a
                if not isinstance(n, int) or n > MAX_LEN:
                    raise Undefined("repetition too large")
            return _BINOPS[type(op)](a, b)
        case ast.BoolOp(op=ast.And(), values=values):
            return all(ev(v) for v in values)
        case ast.BoolOp(op=ast.Or(), values=values):
            return any(ev(v) for v in values)
        case ast.Compare(left=left, ops=ops, comparators=rest) if all(type(o) in _CMPOPS for o in ops):
            values = [ev(left), *(ev(c) for c in rest)]
            return all(_CMPOPS[type(o)](a, b) for o, a, b in zip(ops, values, values[1:], strict=False))
        case ast.Tuple(elts=elts):
            return tuple(ev(e) for e in elts)
        case ast.List(elts=elts):
            return [ev(e) for e in elts]
        case ast.Set(elts=elts):
            return {ev(e) for e in elts}
        case ast.Dict(keys=keys, values=values) if all(k is not None for k in keys):
            return {ev(k): ev(v) for k, v in zip(keys, values, strict=True) if k is not None}
        case ast.Call(func=func, args=args, keywords=kws) if dotted(func) in fns:
            if any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in kws):
                raise Undefined("unpacking")
            return fns[dotted(func) or ""](*(ev(a) for a in args), **{k.arg: ev(k.value) for k in kws if k.arg})
    raise Undefined(f"not a value: {ast.unparse(node)[:60]}")


def _checked(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        raise Undefined("number too large")
    if isinstance(value, str | bytes | list | tuple | dict | set) and len(value) > MAX_LEN:
        raise Undefined("value too large")
    return value


def names_in(node: ast.expr) -> set[str]:
    """Variable names an expression reads (function names of calls are not variables)."""
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and id(n) not in called}


def same_value(a: Any, b: Any) -> bool:
    """Equal as values: numbers of any type compare numerically (floats with a relative tolerance)."""
    numbers = int | float | Decimal | Fraction
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        if isinstance(a, float) or isinstance(b, float):
            return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
        return a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def show(value: Any) -> str:
    """A value as the SDD or pytest would write it."""
    return str(value) if isinstance(value, Decimal | Fraction) else repr(value)


_BALANCE = {"(": ")", "[": "]", "{": "}"}


def matching_paren(text: str, start: int) -> int | None:
    """Index of the bracket closing the one at `start` (quotes respected), or None."""
    stack, quote = [], None
    for i in range(start, min(len(text), start + MAX_TEXT)):
        ch = text[i]
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in _BALANCE:
            stack.append(_BALANCE[ch])
        elif ch in ")]}":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return i
    return None


CALL_START = re.compile(r"(?<![\w.])([A-Za-z_][\w.]*)\(")
