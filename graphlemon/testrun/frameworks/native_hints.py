"""The hint rules Go and Rust contribute: go-cmp's `(-want +got)` diffs, libtest panics read from the source.

Each rule takes the failure's `HintContext` and returns a hint only when its conditions hold (a diff in
the message; a panic whose location was found in the source), else None.
"""

from __future__ import annotations

import re

from ..hint_context import HintContext
from ..hint_rules import panic_hint
from ..hint_values import value_hint
from ..parsers.go_messages import changed_lines
from ..rust_source import rust_place

_FIELD = re.compile(r"^(?P<key>[\w.\[\]\"'-]+):\s+(?P<value>.+?),?$")


def go_cmp_diff(ctx: HintContext) -> str | None:
    """A `(-want +got)` diff (go-cmp): name the first changed line, or field, and what kind of change it is."""
    want, got = changed_lines(ctx.failure.message)
    if not want and not got:
        return None
    if not got:
        return f"The result lacks what the diff marks as wanted, first `{_clip(want[0])}`: check the code that should produce it."
    if not want:
        return f"The result has extra content the diff marks, first `{_clip(got[0])}`: check the code that adds it."
    w, g = _FIELD.match(want[0]), _FIELD.match(got[0])
    if w and g and w["key"] == g["key"]:
        kind = value_hint(w["value"], g["value"]) or ""
        return f"Field `{w['key']}` differs ({_clip(w['value'])} wanted, {_clip(g['value'])} produced). {kind}".strip()
    kind = value_hint(want[0].rstrip(","), got[0].rstrip(",")) or ""
    return f"The diff's first change: `{_clip(want[0])}` wanted, `{_clip(got[0])}` produced. {kind}".strip()


def rust_panic(ctx: HintContext) -> str | None:
    """A libtest panic: a failed assertion in test code (a test or its helper), or a panic in the code under test."""
    f = ctx.failure
    panic = re.search(r"panicked at [^\n]*\n?(?P<msg>[^\n]*)", ctx.text)
    if panic is None or (f.expected is not None and f.got is not None and value_hint(f.expected, f.got)):
        return None  # no panic, or `assert_eq!`'s values tell more (the value rules speak)
    place = rust_place(ctx.root, f.file, f.line)
    if place is None:
        return None if f.expected is not None and f.got is not None else panic_hint(panic, ctx)
    at = f"{f.file}:{f.line}" if f.line else f.file
    message = _clip(f.message.strip().splitlines()[0] if f.message.strip() else panic.group("msg").strip(), 140)
    test_fn = f.name.rsplit("::", 1)[-1]
    if place.in_test_code:
        where = (f"in test helper `{place.function}` ({at})" if place.function and place.function != test_fn
                 else f"in the test ({at})")  # fmt: skip
        check = message.removeprefix("assertion failed: ")
        what = f"The assertion `{check}`" if check != message else f"An assertion (message `{message}`)"
        return (f"{what} {where} failed — a check of the test, not a panic in the code under test. Print the "
                "values it checks (or use assert_eq! so both are shown) and trace them back to the code under test "
                "that computes them for this input.")  # fmt: skip
    inside = f" in `{place.function}`" if place.function else ""
    return (f"The code under test panicked{inside} ({at}): {message} — handle that case instead of panicking, or "
            "fix the state that leads to it.")  # fmt: skip


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


GO_RULES = (go_cmp_diff,)
CARGO_RULES = (rust_panic,)
