"""Expected / got from an assertion message, in the dialects of the frameworks we parse.

Returns (expected, got) as short strings, or None where the message does not say. A pattern's
expected group may be a fixed value (`"=True"`) where the dialect implies it (`assert not x`).
"""

from __future__ import annotations

import re
import textwrap

from .output_text import clip

VALUE_CHARS = 1_000_000  # compared whole (bounded); shortened for display after the hint (values.py)
_PATTERNS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    # jest / vitest expect(): "Expected: 401\nReceived: 500"
    (
        re.compile(r"^\s*Expected(?: value)?:\s*(?P<e>.+?)\s*\n\s*Received(?: value)?:\s*(?P<g>.+?)\s*$", re.M | re.S),
        "e",
        "g",
    ),
    # chai / vitest: "expected 500 to be 401", "expected [ 1 ] to deeply equal [ 2 ]"
    (
        re.compile(
            r"expected (?P<g>.+?) to (?:be|equal|deeply equal|strictly equal|eql|have length|have property|include|match|be close to) (?P<e>.+?)(?: // Object\.is equality)?$",
            re.M,
        ),
        "e",
        "g",
    ),
    # node:assert: "500 !== 401" / "Expected values to be strictly equal:\n\n500 !== 401";
    # unittest assertEqual(actual, expected): "AssertionError: 4 != 3"
    (
        re.compile(
            r"^(?!.*\bassert )\s*(?:AssertionError: )?(?:(?:Lists|Tuples|Sets|Sequences|Dicts|Strings|Items) differ: )?"
            r"(?P<g>\S.*?) !==? (?P<e>\S.*?)\s*$",
            re.M,
        ),
        "e",
        "g",
    ),
    # unittest assertTrue / assertFalse: "AssertionError: False is not true"
    (re.compile(r"^(?:AssertionError: )?(?P<g>.+?) is not true$", re.M), "=True", "g"),
    (re.compile(r"^(?:AssertionError: )?(?P<g>.+?) is not false$", re.M), "=False", "g"),
    # pytest: "assert True is False", "assert x is None"
    (re.compile(r"^(?:AssertionError: )?assert (?P<g>.+?) is (?P<e>True|False|None)$", re.M), "e", "g"),
    # pytest: "assert 500 == 401"
    (re.compile(r"assert (?P<g>.+?) == (?P<e>.+?)$", re.M), "e", "g"),
    # pytest, a bare check: "assert False\n +  where False = is_even(4)" (a truthy value expected), and
    # "assert not True\n +  where True = is_even(3)" (a falsy one)
    (re.compile(r"^(?:AssertionError: )?assert (?P<g>False|None|0|''|\[\]|\{\})\s*$", re.M), "=True", "g"),
    (re.compile(r"^(?:AssertionError: )?assert not (?P<g>.+?)\s*$", re.M), "=False", "g"),
    # rust: "  left: 500\n right: 401" (and the older "left: `500`,\n right: `401`")
    (re.compile(r"^\s*left:\s*`?(?P<g>.*?)`?,?\s*\n\s*right:\s*`?(?P<e>.*?)`?\s*$", re.M), "e", "g"),
    # testify: "expected: 401\n actual  : 500"
    (re.compile(r"^\s*expected\s*:\s*(?P<e>.+?)\s*\n\s*actual\s*:\s*(?P<g>.+?)\s*$", re.M | re.I), "e", "g"),
    # go idiom: "got 500, want 401"
    (re.compile(r"\bgot:? (?P<g>.+?),? want(?:ed)?:? (?P<e>.+?)$", re.M | re.I), "e", "g"),
    # "expected 401, got 500" / "expected 401 but got 500"
    (re.compile(r"\bexpected:? (?P<e>.+?),? (?:but )?(?:got|received|was):? (?P<g>.+?)$", re.M | re.I), "e", "g"),
)


_NODE_DIFF = re.compile(r"^\s*\+ actual - expected[^\n]*\n", re.M)
_NODE_DIFF_LINE = re.compile(r"^\s*(?P<mark>[-+ ]) (?P<text>.*)$")


def node_assert_diff(text: str) -> tuple[str | None, str | None]:
    """node:assert's `+ actual - expected` diff: `-` (and common) lines are expected, `+` (and common) lines got.

    Node prints it when a value has no short form (`undefined` against an object, multi-line values) and
    then leaves `expected` / `actual` out of its TAP YAML.
    """
    header = _NODE_DIFF.search(text or "")
    if header is None:
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


def extract_expected_got(text: str) -> tuple[str | None, str | None]:
    """The first (expected, got) pair any known dialect finds in `text`."""
    if not text:
        return None, None
    diff = node_assert_diff(text[:20000])
    if diff[0] is not None:
        return diff
    doctest = doctest_expected_got(text[:20000])
    if doctest[0] is not None:
        return doctest
    for pattern, expected_group, got_group in _PATTERNS:
        match = pattern.search(text[:20000])
        if match:
            fixed = expected_group.startswith("=")  # the dialect implies the expected value
            expected = expected_group[1:] if fixed else clip(match.group(expected_group), VALUE_CHARS)
            got = clip(match.group(got_group), VALUE_CHARS)
            if expected and got and expected != got:
                return expected, got
    return None, None
