"""Expected / got for display: compared whole first, then shortened to a window around the first difference.

Parsers keep the values whole (up to 1 MB) so that hints compare what really differs; only then,
for the JSON, each value is cut to `SHOWN_CHARS` around the first differing character, whose true
position is kept in `difference_at`. Cutting first and comparing after made two long values that
differ near their end look equal (or differ "at character 28").
"""

from __future__ import annotations

from .output_text import clip
from .result_models import TestFailure

SHOWN_CHARS = 200
_BEFORE = 60  # characters kept before the first difference
# the message beside both values mostly repeats them (`expected X to equal Y`, a diff): shorter then
MESSAGE_WITH_VALUES_CHARS = 300


def first_difference(expected: str, got: str) -> int | None:
    """0-based index of the first differing character (the shorter length when one is a prefix); None if equal."""
    if expected == got:
        return None
    return next(
        (i for i, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b), min(len(expected), len(got))
    )


def window(text: str, at: int, limit: int = SHOWN_CHARS) -> str:
    """At most `limit` chars of `text` that include position `at`, with `…` where text was cut."""
    if len(text.strip()) <= limit:
        return text.strip()
    start = max(0, at - _BEFORE)
    if start == 0:
        return text[: limit - 1] + "…"
    if start + limit - 1 >= len(text):
        return "…" + text[len(text) - (limit - 1) :]
    return "…" + text[start : start + limit - 2] + "…"


def shorten_values(failure: TestFailure) -> None:
    """Record where expected and got first differ, then cut both to a window around that place."""
    exp, got = failure.expected, failure.got
    if exp is not None and got is not None:
        at = first_difference(exp, got)
        failure.difference_at = None if at is None else at + 1
        where = at or 0
        failure.expected, failure.got = window(exp, where), window(got, where)
        failure.message = clip(failure.message, MESSAGE_WITH_VALUES_CHARS)
    else:
        failure.expected = window(exp, 0) if exp is not None else None
        failure.got = window(got, 0) if got is not None else None
