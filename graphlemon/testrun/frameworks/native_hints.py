"""The hint rules Go and Rust contribute: go-cmp's `(-want +got)` diffs, libtest panics read from the source.

Rules as data (`hint_premises.Rule`): each declares its premises and speaks only when they hold.
"""

from __future__ import annotations

import re

from ..hint_context import HintContext
from ..hint_pair import clip as _clip
from ..hint_premises import Premise, Rule, said
from ..hint_values import Pair, typed_pair, value_hint
from ..parsers.go_messages import changed_lines
from ..rust_source import DOCTEST_WRAPPER, DocTest, RustPlace, doc_test, example_size, rust_place

_FIELD = re.compile(r"^(?P<key>[\w.\[\]\"'-]+):\s+(?P<value>.+?),?$")


def _diff(ctx: HintContext) -> tuple[list[str], list[str]] | None:
    want, got = changed_lines(ctx.failure.message)
    return (want, got) if want or got else None


def _go_cmp(ctx: HintContext, diff: tuple[list[str], list[str]]) -> str:
    """Name the first changed line, or field, and what kind of change it is."""
    want, got = diff
    if not got:
        return f"The result lacks what the diff marks as wanted, first `{_clip(want[0])}`."
    if not want:
        return f"The result has extra content the diff marks, first `{_clip(got[0])}`."
    w, g = _FIELD.match(want[0]), _FIELD.match(got[0])
    if w and g and w["key"] == g["key"]:
        kind = _kind(ctx, w["value"], g["value"], f".{w['key']}")
        return f"Field `{w['key']}` differs ({_clip(w['value'])} wanted, {_clip(g['value'])} produced). {kind}".strip()
    kind = _kind(ctx, want[0].rstrip(","), got[0].rstrip(","))
    return f"The diff's first change: `{_clip(want[0])}` wanted, `{_clip(got[0])}` produced. {kind}".strip()


def _kind(ctx: HintContext, want: str, got: str, path: str = "") -> str:
    """What the value rules say of one changed field or line (the diff's sides are want and got)."""
    exp, act = typed_pair(want, got, "go")
    return value_hint(Pair(exp, act, ctx=ctx, path=(path,) if path else ())) or ""


_PANIC = re.compile(r"panicked at [^\n]*\n?(?P<msg>[^\n]*)")
# the panic's own place: `panicked at src/lib.rs:179:9:` (Rust >= 1.73), `panicked at 'msg', src/lib.rs:179:9`
_PANIC_AT = re.compile(r"panicked at (?:'[^\n]*', )?(?P<file>[^\s:']+\.rs):(?P<line>\d+):\d+")


def _panic(ctx: HintContext) -> re.Match[str] | None:
    return _PANIC.search(ctx.text)


def _no_values(ctx: HintContext) -> bool:
    """The panic printed no compared values (`assert!`, `panic!`, `unwrap`): `assert_eq!`'s are the value rules'."""
    return ctx.failure.operands is None and ctx.failure.expected is None and ctx.failure.got is None


def _place(ctx: HintContext) -> RustPlace | None:
    doc = doc_test(ctx.failure.name)
    if doc is None:
        return rust_place(ctx.root, ctx.failure.file, ctx.failure.line)
    return _doc_test_place(ctx, doc)


def _doc_test_place(ctx: HintContext, doc: DocTest) -> RustPlace | None:
    """Where a doc test panicked: in the test rustdoc generated from its example (a check of the doc test, the item it
    documents is what it checks: the doc test's file, a line within the generated test's length), or in the code the
    example called (another file, or a line past that length: said at its own place); None when the source does not
    show the example, or the panic's place is not the project's."""
    at = _PANIC_AT.search(ctx.text)
    if at is None:
        return None
    file, line = at["file"], int(at["line"])
    if file == doc.file:
        size = example_size(ctx.root, doc)
        if size is None:
            return None
        if line <= size + DOCTEST_WRAPPER:
            return RustPlace(in_test_code=True, function=None, doc_item=doc.item)
    place = rust_place(ctx.root, file, line)
    return None if place is None else RustPlace(False, place.function, doc.item, at=f"{file}:{line}")


def _in_test_code(ctx: HintContext) -> RustPlace | None:
    place = _place(ctx)
    return place if place is not None and place.in_test_code else None


def _in_code_under_test(ctx: HintContext) -> RustPlace | None:
    place = _place(ctx)
    return place if place is not None and not place.in_test_code else None


def _message(ctx: HintContext, panic: re.Match[str]) -> str:
    f = ctx.failure
    return _clip(f.message.strip().splitlines()[0] if f.message.strip() else panic.group("msg").strip(), 140)


def _test_assertion(ctx: HintContext, panic: re.Match[str], _none: bool, place: RustPlace) -> str:
    f = ctx.failure
    at = f"{f.file}:{f.line}" if f.line else f.file
    message = _message(ctx, panic)
    test_fn = f.name.rsplit("::", 1)[-1]
    if place.doc_item:
        where = f"in the doc test of `{place.doc_item}` (its example at {at})"
    elif place.function and place.function != test_fn:
        where = f"in test helper `{place.function}` ({at})"
    else:
        where = f"in the test ({at})"
    unwrapped = _UNWRAP.match(message)
    if unwrapped:  # no assertion: the test's own unwrap() met the value it cannot unwrap
        value = f" (`{_clip(unwrapped['value'], 100)}`)" if unwrapped["value"] else ""
        return (f"The test's own `{unwrapped['call']}` met {unwrapped['on']} value{value} and panicked {where}: no "
                "assertion failed, and the panic is in the test's code, not in the code under test.")  # fmt: skip
    check = message.removeprefix("assertion failed: ")
    what = f"The assertion `{check}`" if check != message else f"An assertion (message `{message}`)"
    return (f"{what} failed {where}: the test's own check — the code under test returned without panicking, and "
            "the check prints no values.")  # fmt: skip


# the panic of Result/Option's unwrap family: "called `Result::unwrap()` on an `Err` value: …" (no assertion)
_UNWRAP = re.compile(r"^called `(?P<call>(?:Result|Option)::(?:unwrap|unwrap_err)\(\))` on "
                     r"(?P<on>an? `\w+`) value(?::\s*(?P<value>\S.*))?$")


def _code_panic(ctx: HintContext, panic: re.Match[str], _none: bool, place: RustPlace) -> str:
    f = ctx.failure
    at = place.at or (f"{f.file}:{f.line}" if f.line else f.file)
    inside = f" in `{place.function}`" if place.function else ""
    doc = f" while the doc test of `{place.doc_item}` ran (its example at {f.file}:{f.line})" if place.doc_item else ""
    return f"The code under test panicked{inside} ({at}){doc}: {_message(ctx, panic)}."


# libtest's #[should_panic(expected = "…")] when the test panicked with another message (its Debug quotes; Rust before
# 1.73 wrapped each in backticks, the first with a comma). No panic at all is "test did not panic as expected".
_OTHER_PANIC = re.compile(
    r"note: panic did not contain expected string\n\s*panic message: `?(?P<message>\"[^\n]*\"|[^\n]*?)`?,?\n"
    r"\s*expected substring: `?(?P<expected>\"[^\n]*\"|[^\n]*?)`?$", re.M,
)


def _other_panic(ctx: HintContext, said: re.Match[str]) -> str:
    """The test panicked, but should_panic's expected substring is not in the message: both quoted as libtest labels
    them (which one is wrong, the code's message or the test's substring, the output does not say)."""
    f = ctx.failure
    at = f" at {f.file}:{f.line}" if f.file and f.line else ""
    return (f"The test panicked{at} as `#[should_panic(expected = …)]` requires, but libtest says the panic did not "
            f"contain the expected string: panic message {_clip(said['message'], 300)}, expected substring "
            f"{_clip(said['expected'], 200)}.")  # fmt: skip


_PANICKED = Premise("a panic", "libtest says the test's thread panicked", _panic)
_NO_VALUES = Premise("no values printed", "the panic printed no compared values", _no_values)

GO_RULES: tuple[Rule[HintContext], ...] = (
    Rule("go-cmp diff", (Premise("a go-cmp diff", "the message holds a `(-want +got)` diff with changed lines",
                                 _diff),), _go_cmp),
)  # fmt: skip
CARGO_RULES: tuple[Rule[HintContext], ...] = (
    Rule("rust: should_panic's expected string", (said(_OTHER_PANIC, "the panic's message lacks should_panic's "
                                                       "expected substring"),), _other_panic),
    Rule("rust: a check of the test", (_PANICKED, _NO_VALUES, Premise(
        "in test code", "the panic's place is test code (tests/, a #[cfg(test)] module, a #[test] fn), read from "
        "the source", _in_test_code)), _test_assertion),
    Rule("rust: a panic of the code under test", (_PANICKED, _NO_VALUES, Premise(
        "in the code under test", "the panic's place is the project's code outside its tests, read from the source",
        _in_code_under_test)), _code_panic),
)  # fmt: skip
