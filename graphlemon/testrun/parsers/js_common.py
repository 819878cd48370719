"""Helpers for JavaScript reports: message vs stack, the test's own line in a stack, values as text."""

from __future__ import annotations

import json
import re
from typing import Any

from ..output_text import clip

_STACK_LINE = re.compile(r"^\s+at |^\s*❯ ")
_FRAME = re.compile(r"(?P<path>[^\s()'\"]+?):(?P<line>\d+)(?::\d+)?")
VALUE_CHARS = 1_000_000  # compared whole (bounded); shortened for display after the hint (values.py)


def message_of(error_text: str) -> str:
    """The error's own lines, without the `at ...` stack frames that follow them."""
    lines = []
    for line in error_text.splitlines():
        if _STACK_LINE.match(line):
            break
        lines.append(line)
    return "\n".join(lines).strip()


def line_in_file(stack: str, file: str | None) -> int | None:
    """The line of the first stack frame inside `file` (the assertion in the test), if any."""
    if not file or not stack:
        return None
    file = file.removeprefix("file://")
    for match in _FRAME.finditer(stack[:20000]):
        path = match.group("path").removeprefix("file://").removeprefix("./")
        if path and (file.endswith("/" + path) or file == path or path.endswith("/" + file.lstrip("./"))):
            return int(match.group("line"))
    return None


def check_line(stack: str, file: str | None, declared_at: int | None) -> tuple[int | None, bool]:
    """The failing check's line: the first stack frame in the test file, else the line the runner gives for the test
    (node:test's and jest's `location`: where it is declared); and whether the line is that declaration."""
    line = line_in_file(stack, file)
    return (line, False) if line else (declared_at, declared_at is not None)


def value_text(value: Any) -> str | None:
    """A report value (any JSON) as the short text shown in expected/got."""
    if value is None:
        return None
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        text = str(value)
    return clip(text, VALUE_CHARS)


def js_regex_escape(text: str) -> str:
    """Escape for a JavaScript RegExp built without the `u` flag."""
    return re.sub(r"[.*+?^${}()|[\]\\/-]", lambda m: "\\" + m.group(0), text)


def name_regex(names: list[str], anchored: bool) -> str:
    alternatives = "|".join(js_regex_escape(n) for n in names)
    return f"^(?:{alternatives})$" if anchored else alternatives
