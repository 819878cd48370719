"""node:assert's diff (`+ actual - expected`): the field it shows changed, with its two values, named by the legend.

The legend's actual and expected are node:assert's argument positions: the values are sided only where the
test's own source shows which argument is expected (`js_source`), else named as node names them.

node prints the diff in an AssertionError's message; with `... Lines skipped` it leaves out the lines
both sides share, so the diff is not two whole values — but a changed field is: the first `-` line and
the first `+` line that name the same key (`-   message: 'a',` / `+   message: 'b',`), or the only
`-` and `+` lines. Its values are util.inspect's text (JavaScript).
"""

from __future__ import annotations

import re

from .assertions import NODE_ARGUMENTS
from .hint_context import HintContext
from .hint_pair import Pair
from .hint_pair import clip as _clip
from .hint_premises import Premise, Rule
from .hint_values import typed_pair, value_hint
from .js_source import node_expected_argument

_LEGEND = re.compile(r"^\s*\+ actual - expected\b.*$", re.M)
_LINE = re.compile(r"^(?P<mark>[-+]) +(?P<text>\S.*?)\s*$")
_FIELD = re.compile(r"^(?P<key>[\w$]+|'[^']*'|\"[^\"]*\"): (?P<value>.+?),?$")


def changed_field(text: str) -> tuple[str | None, str, str] | None:
    """(key or None, expected value, actual value) of the first changed field of node's diff in `text`."""
    legend = _LEGEND.search(text or "")
    if legend is None:
        return None
    minus: list[str] = []
    plus: list[str] = []
    for line in text[legend.end() :].splitlines():
        match = _LINE.match(line)
        if match:
            (plus if match["mark"] == "+" else minus).append(match["text"])
    for expected in minus:
        e = _FIELD.match(expected)
        for got in plus:
            g = _FIELD.match(got)
            if e and g and e["key"] == g["key"] and e["value"] != g["value"]:
                return e["key"], e["value"], g["value"]
    if len(minus) == 1 and len(plus) == 1 and not _FIELD.match(minus[0]):
        return None, minus[0].rstrip(","), plus[0].rstrip(",")
    return None


def _field(ctx: HintContext) -> tuple[str | None, str, str] | None:
    return changed_field(ctx.failure.message) or changed_field(ctx.evidence)


def _field_hint(ctx: HintContext, field: tuple[str | None, str, str] | None = None) -> str | None:
    found = field or _field(ctx)
    if found is None:
        return None
    key, expected, got = found
    exp, act = typed_pair(expected, got, "js")
    path = (f".{key}",) if key else ()
    at = node_expected_argument(ctx)  # the legend names node's argument positions: the test's source sides them
    if at is None:
        pair = Pair(act, exp, sided=False, labels=NODE_ARGUMENTS, ctx=ctx, path=path, grammar="js")
    else:  # 1: node's expected argument is the expected value; 0: the test wrote the expectation first
        expected_value, produced = (exp, act) if at == 1 else (act, exp)
        pair = Pair(expected_value, produced, ctx=ctx, path=path, grammar="js")
    try:
        return value_hint(pair)
    except RecursionError:
        return None


def _says(ctx: HintContext, field: tuple[str | None, str, str], hint: str) -> str:
    return hint if hint.startswith("At `") or field[0] is None else f"At `.{field[0]}`: {hint}"


def field_facts(ctx: HintContext) -> str | None:
    """Facts only: the field node's diff shows changed and its two values."""
    found = _field(ctx)
    if found is None:
        return None
    key, expected, got = found
    where = f" at `.{key}`" if key else ""
    return f"node's diff shows them differ{where}: expected argument {_clip(expected)}, actual argument {_clip(got)}"


DIFF_RULES: tuple[Rule[HintContext], ...] = (
    Rule("node:assert diff", (Premise("a changed field in node's diff", "the message holds node:assert's `+ actual - "
         "expected` diff with a changed field (the same key on a `-` and a `+` line) or one changed line", _field),
         Premise("a value rule holds", "a value rule speaks on that field's two values, sided by the test's source "
         "(else named as node's actual and expected arguments)",
         _field_hint)), _says),
)  # fmt: skip
