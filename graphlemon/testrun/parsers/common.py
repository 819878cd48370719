"""Helpers shared by the parsers: JSON lines, error-line picking, failure construction."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ...test_counts import TestSummary
from ..assertions import extract_expected_got
from ..output_text import clip
from ..result_models import TestFailure

MESSAGE_CHARS = 600
UNNAMED = "(unnamed test)"
DETAIL_CHARS = 8000


def json_lines(text: str) -> Iterator[dict[str, Any]]:
    """Each line of `text` that is a JSON object; anything else (a torn last line) is skipped."""
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def load_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def make_failure(
    name: str,
    *,
    file: str | None = None,
    line: int | None = None,
    message: str = "",
    detail: str = "",
    expected: str | None = None,
    got: str | None = None,
) -> TestFailure:
    """A failure with a clipped message; expected/got read from the message when not given.

    Not from the detail: it may quote source code (`assert f(x) == 0` above a ZeroDivisionError).
    """
    if expected is None and got is None:
        expected, got = extract_expected_got(message or detail)
    return TestFailure(
        name=name.strip() or UNNAMED,
        file=file or None,
        line=line if isinstance(line, int) and line > 0 else None,
        message=clip(message or detail or "failed (no message)", MESSAGE_CHARS),
        expected=expected,
        got=got,
        detail=clip(detail or message, DETAIL_CHARS),
    )


_ERROR_LINE = re.compile(
    r"^\s*(?:[\w.]*(?:Error|Exception|Exit|Interrupt)|panic|thread '.*' panicked|error(?:\[\w+\])?)\b.*", re.M
)


def first_paragraph(text: str, max_lines: int = 6) -> str:
    """The first block of non-empty lines: the message a runner prints above its code frame."""
    lines: list[str] = []
    for line in text.strip().splitlines():
        if not line.strip() or re.match(r"^\s*>?\s*\d+ \|", line):
            if lines:
                break
            continue
        lines.append(line.strip())
    return "\n".join(lines[:max_lines])


def error_summary(text: str, max_lines: int = 6) -> str:
    """The lines of an error text a reader needs: `E ` lines (pytest), else error-looking lines, else the tail."""
    lines = text.strip().splitlines()
    e_lines = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    if e_lines:
        return "\n".join(e_lines[:max_lines])
    errors = [m.group(0).strip() for m in _ERROR_LINE.finditer(text)]
    if errors:
        return "\n".join(errors[-max_lines:])
    return "\n".join(ln for ln in lines[-max_lines:] if ln.strip())


_SKIP_WORDS = ("skipped", "todo", "pending", "ignored", "xfailed")
_PASS_WORDS = ("passed", "passing", "xpassed")
_FAIL_WORDS = ("failed", "failing", "errors", "error")


def summary_from_words(text: str) -> TestSummary:
    """Counts from a closing line such as `3 failed | 5 passed | 1 todo (10)` or `2 passing, 1 failing`."""
    passed = failed = skipped = 0
    for number, word in re.findall(r"(\d+) ([a-z]+)", text):
        if word in _PASS_WORDS:
            passed += int(number)
        elif word in _FAIL_WORDS:
            failed += int(number)
        elif word in _SKIP_WORDS:
            skipped += int(number)
    return TestSummary(total=passed + failed + skipped, passed=passed, failed=failed, skipped=skipped)
