"""Two compared values at one place (`Pair`), and the premises several value rules share.

A Pair is sided when the reporter says which value is expected (`expected` / `got`); otherwise its two
values are the reporter's first and second operands, named by `labels`. `grammar` is the language the
reporter printed them in, so a hint writes a literal back as that language does (`false`, `False`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from .hint_context import HintContext
from .hint_premises import Premise
from .result_models import ValueGrammar
from .value_types import Printed, is_number, numeral

# how each language writes true, false and absence (a JavaScript absence is null or undefined: parsed alike)
_LITERALS: dict[str, tuple[str, str, str]] = {
    "python": ("True", "False", "None"), "js": ("true", "false", "null/undefined"),
    "mocha": ("true", "false", "null/undefined"), "json": ("true", "false", "null"), "go": ("true", "false", "nil"),
    "rust": ("true", "false", "None"),
}  # fmt: skip


@dataclass(frozen=True)
class Pair:
    """Two values at one place. Sided: `expected` is the expected value and `got` the produced one; otherwise
    they are the reporter's first and second operands (`labels`)."""

    expected: Any
    got: Any
    sided: bool = True
    labels: tuple[str, str] = ("expected", "got")
    ctx: HintContext | None = None
    path: tuple[str, ...] = ()
    within: tuple[str, str] | None = None  # the two texts a pair of numbers was read from
    grammar: ValueGrammar = "any"
    numerals: tuple[str, str] | None = None  # the numbers as written in those texts

    def named(self, value_first: str, value_second: str) -> str:
        """`7 expected, 6 produced` / `left: 7, right: 6`."""
        if self.sided:
            return f"{value_first} expected, {value_second} produced"
        return f"{self.labels[0]}: {value_first}, {self.labels[1]}: {value_second}"

    def literal(self, value: Any) -> str:
        """A value written as the reporter's language writes it: `false` in JavaScript, `False` in Python."""
        true, false, nothing = _LITERALS.get(self.grammar, ("True", "False", "None/null/undefined"))
        if value is True or value is False:
            return true if value else false
        if value is None:
            return nothing
        return repr(value)


def _sides(p: Pair) -> bool:
    return p.sided


SIDES = Premise("sides known", "the reporter says which value is expected (its labels, the assertion's form, or "
                "the assertion it printed)", _sides)  # fmt: skip


def both(test: Any) -> Any:
    return lambda p: test(p.expected) and test(p.got) and p.expected != p.got


def numbers(p: Pair) -> tuple[int | float, int | float] | None:
    e, a = as_number(p.expected), as_number(p.got)
    return (e, a) if e is not None and a is not None and e != a else None


NUMBERS = Premise("two numbers", "both values are numbers in the test's own language (a numeral such as `'-32768'` "
                  "counts; `'1,000'`, `1_000`, `0x10` do not)", numbers)  # fmt: skip
INTEGERS = Premise("two integers", "both numbers are integers", lambda p: (n := numbers(p)) is not None and not any(
    isinstance(x, float) for x in n))  # fmt: skip
STRINGS = Premise("two texts", "both values are texts", both(lambda v: isinstance(v, str)))
KNOWN_KINDS = Premise("kinds known", "both values' kinds are known (not a value printed without its type, such as "
                      "Go's %v)", lambda p: not isinstance(p.expected, Printed) and not isinstance(p.got, Printed))  # fmt: skip


def as_number(value: Any) -> int | float | None:
    if isinstance(value, Printed):
        return None
    if is_number(value):
        return value if math.isfinite(value) else None
    if isinstance(value, str) and is_numeral(value):
        number = numeral(value)  # kept as printed; a fraction no float holds is no number here
        return None if isinstance(number, Printed) else number
    return None


def is_numeral(text: str) -> bool:
    """A decimal numeral every language reads as a number: `-32768`, `3.5` (not `1,000`, `1_000`, `007`, `+1`)."""
    return re.fullmatch(r"-?(?:0|[1-9]\d*)(?:\.\d+)?", text) is not None


def clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def text_repr(text: Any, limit: int = 80) -> str:
    """A text as a quoted literal, clipped (`'1,000'`)."""
    return clip(repr(str(text)), limit)
